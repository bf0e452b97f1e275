/** Serves an HttpHandler (the LLM proxy) over real HTTP with node:http: JSON bodies in and out. */
import { createServer, type Server } from 'node:http';
import type { HttpHandler } from '../harness/http';

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface ServeOptions {
  /** request bodies over this many bytes are answered 413 (default 64 MiB) */
  maxBodyBytes?: number;
}

function errorBody(status: number, message: string, type: string, param: string | null = null) {
  return { error: { message, type, param, code: status } };
}

export function serveHttp(
  handler: HttpHandler,
  port = 0,
  host = '127.0.0.1',
  opts: ServeOptions = {},
): Promise<{ server: Server; url: string }> {
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const server = createServer((req, res) => {
    const reply = (status: number, headers: Record<string, string>, body: unknown) => {
      if (res.headersSent) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const tooLarge = () =>
      reply(
        413,
        { connection: 'close' },
        errorBody(413, `request body is larger than ${maxBody} bytes`, 'invalid_request_error', 'body'),
      );
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBody) {
      // Answer at once; the connection closes after the answer, so the rest of the body is never read.
      tooLarge();
      req.resume();
      res.on('finish', () => req.destroy());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBody) {
        // Keep reading (and dropping) so that the client, still sending, gets the 413 rather than a reset;
        // past four times the limit, stop listening.
        over = true;
        chunks.length = 0;
        if (size > 4 * maxBody) {
          tooLarge();
          res.on('finish', () => req.destroy());
        }
      } else chunks.push(c);
    });
    req.on('error', () => {});
    req.on('end', async () => {
      if (over) {
        tooLarge();
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      if (text !== '') {
        try {
          body = JSON.parse(text);
        } catch (e) {
          reply(
            400,
            {},
            errorBody(400, `body is not JSON: ${(e as Error).message}`, 'invalid_request_error', 'body'),
          );
          return;
        }
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      try {
        const out = await handler({ method: req.method ?? 'GET', path: req.url ?? '/', headers, body });
        reply(out.status, out.headers, out.body);
      } catch (e) {
        reply(500, {}, errorBody(500, (e as Error).message, 'server_error'));
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      const p = typeof addr === 'object' && addr ? addr.port : port;
      resolve({ server, url: `http://${host}:${p}` });
    });
  });
}
