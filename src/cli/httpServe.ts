/** Serves an HttpHandler (the LLM proxy) over real HTTP with node:http: JSON bodies in and out. */
import { createServer, type Server } from 'node:http';
import type { HttpHandler } from '../harness/http';

const MAX_BODY = 64 * 1024 * 1024;

export function serveHttp(
  handler: HttpHandler,
  port = 0,
  host = '127.0.0.1',
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', async () => {
      const reply = (status: number, headers: Record<string, string>, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      if (text !== '') {
        try {
          body = JSON.parse(text);
        } catch (e) {
          reply(
            400,
            {},
            {
              error: {
                message: `body is not JSON: ${(e as Error).message}`,
                type: 'invalid_request_error',
                param: 'body',
                code: 400,
              },
            },
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
        reply(
          500,
          {},
          { error: { message: (e as Error).message, type: 'server_error', param: null, code: 500 } },
        );
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
