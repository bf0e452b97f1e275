/**
 * The gateway's HTTP surface in-process (Hono's `app.request`): token, origin and CORS rules, and the bad-input
 * answers of the REST API, against a recording stand-in for the Ray dashboard, so "nothing was submitted" is
 * checked, not assumed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HARNESS_CATALOGUE } from '../../src/cli/aglCpu';
import { PROJECT_ROOT } from '../../src/cli/clusterBundle';
import { createApp, servedHosts } from '../../src/server/app';
import { ensureToken } from '../../src/server/auth';
import { parseClusterInfo } from '../../src/server/protocol/api';
import { jobTemplates } from '../../src/server/protocol/templates';
import { RunManager } from '../../src/server/runs';
import { GatewayStore } from '../../src/server/store';

let dir: string;
let ray: Server;
const rayRequests: string[] = [];
let store: GatewayStore;
let token: string;
let app: ReturnType<typeof createApp>;
let runs: RunManager;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hl-app-'));
  ray = createServer((req, res) => {
    rayRequests.push(`${req.method} ${req.url}`);
    res.writeHead(req.url === '/api/version' ? 200 : 500, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(req.url === '/api/version' ? { ray_version: '2.60.0' } : { error: 'not in this test' }),
    );
  });
  await new Promise<void>((r) => ray.listen(0, '127.0.0.1', () => r()));
  store = new GatewayStore(join(dir, 'gateway.sqlite'));
  const t = ensureToken(store);
  token = t.token as string;
  const templates = jobTemplates(HARNESS_CATALOGUE);
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>page</title>');
  runs = new RunManager({
    store,
    templates,
    rayAddress: `http://127.0.0.1:${(ray.address() as AddressInfo).port}`,
    rayToken: null,
    aglHost: '127.0.0.1',
    aglHostOverride: null,
    root: PROJECT_ROOT,
    clusterCli: join(dir, 'missing.mjs'),
  });
  app = createApp({
    hosts: servedHosts('gw.local', 5173),
    store,
    runs,
    templates,
    tokenHash: t.hash,
    allowOrigins: ['https://lab.example'],
    staticDir: dir,
    version: '0.1.0',
    rayTokenAuth: false,
  });
});

afterAll(async () => {
  await runs.close();
  store.close();
  await new Promise<void>((r) => ray.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const host = { host: 'gw.local:5173' };
function req(path: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  return app.request(`http://gw.local:5173${path}`, {
    ...init,
    headers: { ...host, authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  });
}
async function error(res: Response) {
  return ((await res.json()) as { error: { message: string; field?: string } }).error;
}

describe('gateway auth and origins', () => {
  it('the token is kept only as its hash and a second start creates none', () => {
    expect(store.getMeta('token_sha256')).toMatch(/^[0-9a-f]{64}$/);
    expect(store.getMeta('token_sha256')).not.toContain(token);
    expect(ensureToken(store).token).toBeNull();
  });

  it('every API route needs the token; /healthz does not', async () => {
    expect((await app.request('http://gw.local:5173/healthz', { headers: host })).status).toBe(200);
    const none = await app.request('http://gw.local:5173/api/runs', { headers: host });
    expect(none.status).toBe(401);
    expect((await error(none)).message).toMatch(/^missing token/);
    const wrong = await req('/api/runs', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect((await error(wrong)).message).toMatch(/^wrong token/);
    expect((await req('/api/runs')).status).toBe(200);
  });

  it('refuses other origins unless allowlisted, and only then sends CORS headers', async () => {
    const evil = await req('/api/runs', { headers: { origin: 'https://evil.example' } });
    expect(evil.status).toBe(403);
    expect((await error(evil)).message).toMatch(
      /origin https:\/\/evil\.example is not allowed; start the gateway with --allow-origin/,
    );
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const same = await req('/api/runs', { headers: { origin: 'http://gw.local:5173' } });
    expect(same.status).toBe(200);
    expect(same.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await app.request('http://gw.local:5173/api/runs', {
      method: 'OPTIONS',
      headers: { ...host, origin: 'https://lab.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://lab.example');
    const allowed = await req('/api/runs', { headers: { origin: 'https://lab.example' } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://lab.example');
  });

  it('serves the page with the cross-origin-isolation headers', async () => {
    const page = await app.request('http://gw.local:5173/', { headers: host });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>page</title>');
    expect(page.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(page.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
  });
});

describe('gateway bad input', () => {
  it('answers bad submissions with 400 naming the field, and submits nothing', async () => {
    const cases: [unknown, string, RegExp][] = [
      [{ template: 'bash' }, 'template', /unknown template "bash"/],
      [{ template: 'agl-cpu', params: { rollout_n: 1000 } }, 'params.rollout_n', /must be in \[1, 32\]/],
      [{ template: 'agl-cpu', params: { entrypoint: 'rm -rf /' } }, 'params.entrypoint', /unknown parameter/],
      [{ template: 'agl-cpu', entrypoint: 'sh' }, 'body.entrypoint', /not a field of a run request/],
      [
        { template: 'agl-cpu', params: { harness: 'shell' } },
        'params.harness',
        /must be one of instruction, search, coding/,
      ],
    ];
    for (const [body, field, re] of cases) {
      const res = await req('/api/runs', {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const e = await error(res);
      expect(e.field).toBe(field);
      expect(e.message).toMatch(re);
    }
    const notJson = await req('/api/runs', {
      method: 'POST',
      body: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect((await error(notJson)).message).toMatch(/^body is not JSON/);
    expect(rayRequests.filter((r) => !r.startsWith('GET /api/version'))).toEqual([]);
    expect(store.runs()).toEqual([]);
  });

  it('unknown runs are 404, bad query parameters 400, bad Last-Event-ID 400', async () => {
    expect((await req('/api/runs/nope')).status).toBe(404);
    expect((await req('/api/runs/nope/events')).status).toBe(404);
    expect((await req('/api/nope')).status).toBe(404);
    store.createRun({
      id: 'r1',
      name: 'x',
      template: 'agl-cpu',
      params: {},
      state: 'succeeded',
      message: '',
      submissionId: 's',
      rayAddress: 'http://127.0.0.1:1',
      aglKey: 'k',
      aglUrl: null,
      createdMs: 1,
      updatedMs: 1,
    });
    const badTail = await req('/api/runs/r1/logs?tail=-3');
    expect(badTail.status).toBe(400);
    expect((await error(badTail)).field).toBe('tail');
    const badId = await req('/api/runs/r1/events', { headers: { 'last-event-id': 'abc' } });
    expect(badId.status).toBe(400);
    expect((await req('/api/runs/r1/stop', { method: 'POST' })).status).toBe(409);
    expect((await req('/api/runs/r1', { method: 'DELETE' })).status).toBe(204);
    expect((await req('/api/runs/r1')).status).toBe(404);
  });

  it('a Ray it cannot reach: cluster info says why, a submission is refused with 503 and nothing recorded', async () => {
    const port = (ray.address() as AddressInfo).port;
    await new Promise<void>((r) => ray.close(() => r()));
    const info = parseClusterInfo(await (await req('/api/cluster')).json());
    expect(info.ray.reachable).toBe(false);
    expect(info.ray.error).toMatch(
      new RegExp(`Ray dashboard at http://127.0.0.1:${port} is unreachable: ECONNREFUSED`),
    );
    const res = await req('/api/runs', { method: 'POST', body: JSON.stringify({ template: 'agl-cpu' }) });
    expect(res.status).toBe(503);
    expect((await error(res)).message).toMatch(/unreachable: ECONNREFUSED; nothing was submitted/);
    expect(store.runs()).toEqual([]);
    const bad = await req('/api/cluster', {
      method: 'PUT',
      body: JSON.stringify({ address: '10.0.0.1:6379' }),
    });
    expect(bad.status).toBe(400);
    expect((await error(bad)).field).toBe('body.address');
    ray.listen(port, '127.0.0.1');
  });
});
