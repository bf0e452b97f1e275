/**
 * The gateway's HTTP surface (Hono on @hono/node-server): the REST API of protocol/api.ts under /api, the SSE
 * stream of each run, and the built page (dist/) on the same origin, with the cross-origin-isolation headers the
 * page needs. Every /api route needs the bearer token. A request whose Host is not one of the addresses the
 * gateway serves is refused (403: a DNS-rebinding page sends its own name as Host, and passes an origin check
 * that compares Origin with Host). Requests from another origin are refused (403) unless the origin is
 * allowlisted, in which case, and only then, CORS headers are sent. Request bodies are limited per route
 * (`BODY_LIMITS`): a declared length over the limit is answered 413 before anything is read, and a body
 * without one is read only up to the limit.
 */
import { serveStatic } from '@hono/node-server/serve-static';
import { type Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { checkBearer } from './auth';
import { type ClusterInfo, eventData, parseSetClusterBody } from './protocol/api';
import { WireError } from './protocol/read';
import type { JobTemplate, TemplateName } from './protocol/templates';
import { ApiError, type RunManager } from './runs';
import type { GatewayStore } from './store';

export interface AppOptions {
  /** the Host header values this gateway answers (`host:port`, lower case; see `servedHosts`) */
  hosts: ReadonlySet<string>;
  store: GatewayStore;
  runs: RunManager;
  templates: Record<TemplateName, JobTemplate>;
  tokenHash: Buffer;
  allowOrigins: readonly string[];
  /** the built page (vite build's dist/); null serves the API only */
  staticDir: string | null;
  version: string;
  rayTokenAuth: boolean;
}

const ISOLATION = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
};

/** The largest request body each route takes, in bytes; a route not listed takes none beyond `OTHER_BODY_LIMIT`. */
export const BODY_LIMITS: Readonly<Record<string, number>> = {
  'PUT /api/cluster': 4 * 1024,
  'POST /api/runs': 64 * 1024,
};
export const OTHER_BODY_LIMIT = 1024;

function bodyLimit(method: string, path: string): number {
  return BODY_LIMITS[`${method} ${path}`] ?? OTHER_BODY_LIMIT;
}

/**
 * The Host values a gateway bound to `bindHost:port` answers: the loopback names for a loopback bind; for a
 * wildcard bind (0.0.0.0, ::) also this machine's interface addresses and host name; `extra` (--allow-host)
 * for names in front of it (a reverse proxy, a DNS name). Port 80 also matches a Host without a port.
 */
export function servedHosts(
  bindHost: string,
  port: number,
  extra: readonly string[] = [],
  interfaces: readonly string[] = [],
): Set<string> {
  const names = new Set<string>();
  const loopback = ['127.0.0.1', 'localhost', '[::1]'];
  const bare = bindHost.replace(/^\[|\]$/g, '').toLowerCase();
  const wildcard = bare === '0.0.0.0' || bare === '::';
  if (wildcard || bare === '127.0.0.1' || bare === 'localhost' || bare === '::1')
    for (const n of loopback) names.add(n);
  if (wildcard) for (const n of interfaces) names.add(n.includes(':') ? `[${n}]` : n);
  else names.add(bare.includes(':') ? `[${bare}]` : bare);
  const out = new Set<string>();
  for (const n of names) {
    out.add(`${n.toLowerCase()}:${port}`);
    if (port === 80) out.add(n.toLowerCase());
  }
  for (const e of extra)
    out.add(e.toLowerCase().includes(':') ? e.toLowerCase() : `${e.toLowerCase()}:${port}`);
  return out;
}

function errorBody(message: string, field?: string) {
  return { error: field ? { message, field } : { message } };
}

function sameOrigin(c: Context, origin: string): boolean {
  const host = c.req.header('host');
  if (!host) return false;
  try {
    const u = new URL(origin);
    return u.host === host;
  } catch {
    return false;
  }
}

export function createApp(o: AppOptions): Hono {
  const app = new Hono();

  app.use('*', async (c, next) => {
    const host = c.req.header('host')?.toLowerCase();
    if (!host || !o.hosts.has(host))
      return c.json(
        errorBody(
          `Host ${JSON.stringify(host ?? '')} is not an address this gateway serves (${[...o.hosts].join(', ')}); start it with --allow-host NAME to add one`,
        ),
        403,
      );
    const limit = bodyLimit(c.req.method, c.req.path);
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > limit) {
      c.header('connection', 'close');
      return c.json(
        errorBody(`request body of ${declared} bytes is over this route's limit of ${limit} bytes`),
        413,
      );
    }
    const origin = c.req.header('origin');
    const allowed = origin !== undefined && !sameOrigin(c, origin) && o.allowOrigins.includes(origin);
    if (origin !== undefined && origin !== 'null' && !sameOrigin(c, origin) && !allowed)
      return c.json(
        errorBody(
          `origin ${origin} is not allowed; start the gateway with --allow-origin ${origin} to allow it`,
        ),
        403,
      );
    if (origin === 'null') return c.json(errorBody('requests from an opaque origin are not allowed'), 403);
    if (allowed && c.req.method === 'OPTIONS') {
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': 'GET, POST, PUT, DELETE',
          'access-control-allow-headers': 'authorization, content-type, last-event-id',
          'access-control-max-age': '600',
          vary: 'Origin',
        },
      });
    }
    await next();
    for (const [k, v] of Object.entries(ISOLATION)) c.res.headers.set(k, v);
    if (allowed) {
      c.res.headers.set('access-control-allow-origin', origin);
      c.res.headers.set('vary', 'Origin');
      c.res.headers.set('cross-origin-resource-policy', 'cross-origin');
    }
  });

  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  app.use('/api/*', async (c, next) => {
    if (!checkBearer(c.req.header('authorization'), o.tokenHash))
      return c.json(
        errorBody(
          c.req.header('authorization')
            ? 'wrong token (the token is printed, inside the page link, when the gateway first starts; --reset-token makes a new one)'
            : 'missing token: send Authorization: Bearer <token>',
        ),
        401,
      );
    await next();
  });

  app.onError((e, c) => {
    if (e instanceof ApiError) return c.json(errorBody(e.message, e.field), e.status as 400);
    if (e instanceof WireError) return c.json(errorBody(e.message, e.path), 400);
    console.error(e);
    return c.json(errorBody(`internal error: ${(e as Error).message}`), 500);
  });

  const body = async (c: Context): Promise<unknown> => {
    const text = await readLimited(c, bodyLimit(c.req.method, c.req.path));
    if (text === '') return undefined;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ApiError(400, `body is not JSON: ${(e as Error).message}`, 'body');
    }
  };

  app.get('/api/cluster', async (c) => c.json(await clusterInfo(o)));
  app.put('/api/cluster', async (c) => {
    const { address } = parseSetClusterBody(await body(c));
    o.runs.setAddress(address);
    return c.json(await clusterInfo(o));
  });
  app.get('/api/templates', (c) => c.json({ templates: Object.values(o.templates) }));
  app.get('/api/runs', (c) => c.json({ runs: o.runs.list() }));
  app.post('/api/runs', async (c) => c.json(await o.runs.submit(await body(c)), 201));
  app.get('/api/runs/:id', (c) => c.json(o.runs.summary(c.req.param('id'))));
  app.post('/api/runs/:id/stop', async (c) => c.json(await o.runs.stop(c.req.param('id'))));
  app.delete('/api/runs/:id', async (c) => {
    await o.runs.delete(c.req.param('id'));
    return c.body(null, 204);
  });
  const intParam = (c: Context, name: string, def: number, max: number): number => {
    const raw = c.req.query(name);
    if (raw === undefined) return def;
    if (!/^\d+$/.test(raw) || Number(raw) > max)
      throw new ApiError(
        400,
        `query parameter ${name} must be an integer in [0, ${max}], got ${JSON.stringify(raw)}`,
        name,
      );
    return Number(raw);
  };
  app.get('/api/runs/:id/logs', (c) => {
    const id = c.req.param('id');
    o.runs.summary(id);
    return c.json(o.store.logLines(id, intParam(c, 'tail', 200, 100_000)));
  });
  app.get('/api/runs/:id/metrics', (c) => {
    const id = c.req.param('id');
    o.runs.summary(id);
    return c.json({ metrics: o.store.metrics(id) });
  });
  app.get('/api/runs/:id/rollouts', (c) => {
    const id = c.req.param('id');
    o.runs.summary(id);
    return c.json({ rollouts: o.store.rollouts(id) });
  });
  app.get('/api/runs/:id/rollouts/bundle', (c) => {
    const id = c.req.param('id');
    o.runs.summary(id);
    const docs = o.store.rolloutDocs(
      id,
      intParam(c, 'after', 0, 2 ** 31),
      intParam(c, 'limit', 10_000, 100_000),
    );
    // the stored documents are JSON already: splice them in rather than parse and re-serialise
    return c.body(`{"rollouts":[${docs.join(',')}]}`, 200, { 'content-type': 'application/json' });
  });

  app.get('/api/runs/:id/events', (c) => {
    const id = c.req.param('id');
    o.runs.summary(id);
    const last = c.req.header('last-event-id') ?? c.req.query('after') ?? '0';
    if (!/^\d+$/.test(last))
      throw new ApiError(400, `Last-Event-ID must be an event id (an integer), got ${JSON.stringify(last)}`);
    let after = Number(last);
    return streamSSE(c, async (stream) => {
      let wake: (() => void) | null = null;
      const onChange = () => wake?.();
      o.runs.events.on(id, onChange);
      stream.onAbort(() => {
        o.runs.events.off(id, onChange);
        wake?.();
      });
      try {
        while (!stream.aborted) {
          const batch = o.store.eventsAfter(id, after, 500);
          for (const e of batch) {
            await stream.writeSSE({
              id: String(e.seq),
              event: e.event.kind,
              data: JSON.stringify(eventData(e.event)),
            });
            after = e.seq;
          }
          if (batch.length === 500) continue;
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, 15_000);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wake = null;
          if (!stream.aborted && o.store.eventsAfter(id, after, 1).length === 0)
            await stream.write(': keep-alive\n\n');
        }
      } finally {
        o.runs.events.off(id, onChange);
      }
    });
  });

  app.all('/api/*', (c) => c.json(errorBody(`no route ${c.req.method} ${new URL(c.req.url).pathname}`), 404));

  if (o.staticDir) app.use('/*', serveStatic({ root: o.staticDir }));
  return app;
}

/** The body as text, read only up to `limit` bytes (a chunked body over it is a 413 and is not read further). */
async function readLimited(c: Context, limit: number): Promise<string> {
  const stream = c.req.raw.body;
  if (!stream) return '';
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel();
      throw new ApiError(413, `request body is over this route's limit of ${limit} bytes`, 'body');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function clusterInfo(o: AppOptions): Promise<ClusterInfo> {
  const ray = o.runs.ray();
  const info: ClusterInfo = {
    gateway: { version: o.version },
    ray: {
      address: ray.address,
      reachable: false,
      tokenAuth: o.rayTokenAuth,
      version: null,
      nodes: null,
      cpus: null,
      gpus: null,
      error: null,
    },
  };
  try {
    info.ray.version = await ray.version();
    const n = await ray.nodes();
    info.ray.reachable = true;
    info.ray.nodes = n.nodes;
    info.ray.cpus = n.cpus;
    info.ray.gpus = n.gpus;
  } catch (e) {
    info.ray.error = (e as Error).message;
  }
  return info;
}
