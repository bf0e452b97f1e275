/**
 * What may cross the gateway's boundary, in-process against recording HTTP listeners: the Ray token goes only to
 * the address configured at start (a second listener named through the API never sees it; a stored address does
 * not override the configured one); a token file the head rewrote is read again when Ray rejects the old one;
 * Host must be an address the gateway serves; bodies are limited per route and an oversized one is refused
 * before it is read (a real socket: the answer comes while most of the body is still unsent); the data dir
 * and the SQLite files are owner-only.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HARNESS_CATALOGUE } from '../../src/cli/aglCpu';
import { PROJECT_ROOT } from '../../src/cli/clusterBundle';
import { ownerOnlyDataDir } from '../../src/cli/commands/gateway';
import { BODY_LIMITS, createApp, OTHER_BODY_LIMIT, servedHosts } from '../../src/server/app';
import { ensureToken } from '../../src/server/auth';
import { parseClusterInfo } from '../../src/server/protocol/api';
import { jobTemplates } from '../../src/server/protocol/templates';
import { RayJobsClient, RayToken } from '../../src/server/ray';
import { RunManager } from '../../src/server/runs';
import { GatewayStore } from '../../src/server/store';

/** A stand-in Ray dashboard that records every request's headers and accepts only `accept` as its token. */
class Listener {
  seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  accept: string | null = null;
  server!: Server;
  async start() {
    this.server = createServer((req, res) => {
      this.seen.push({ url: req.url ?? '', headers: req.headers });
      req.resume();
      const ok = this.accept === null || req.headers.authorization === `Bearer ${this.accept}`;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          ok
            ? req.url === '/api/version'
              ? { ray_version: '2.60.0', session_name: 'session_test' }
              : { data: { result: { result: [] } } }
            : { error: 'unauthorized' },
        ),
      );
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    return this;
  }
  get address() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close() {
    return new Promise<void>((r) => {
      this.server.closeAllConnections();
      this.server.close(() => r());
    });
  }
}

let dir: string;
let home: Listener;
let other: Listener;
let store: GatewayStore;
let token: string;
let hash: Buffer;
const templates = jobTemplates(HARNESS_CATALOGUE);
const RAY_TOKEN = 'ray-secret-token-0123456789';

function manager(allowAddressChange: boolean) {
  return new RunManager({
    store,
    templates,
    rayAddress: home.address,
    rayToken: new RayToken(RAY_TOKEN),
    allowAddressChange,
    aglHost: '127.0.0.1',
    aglHostOverride: null,
    root: PROJECT_ROOT,
    clusterCli: join(dir, 'missing.mjs'),
  });
}

function appFor(runs: RunManager) {
  return createApp({
    hosts: servedHosts('127.0.0.1', 5173),
    store,
    runs,
    templates,
    tokenHash: hash,
    allowOrigins: [],
    staticDir: null,
    version: '0.1.0',
    rayTokenAuth: true,
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hl-boundary-'));
  home = await new Listener().start();
  other = await new Listener().start();
  store = new GatewayStore(join(dir, 'data', 'gateway.sqlite'));
  const t = ensureToken(store);
  token = t.token as string;
  hash = t.hash;
});

afterAll(async () => {
  store.close();
  await home.close();
  await other.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = { host: '127.0.0.1:5173', authorization: '' };
const put = (app: ReturnType<typeof createApp>, address: string) =>
  app.request('http://127.0.0.1:5173/api/cluster', {
    method: 'PUT',
    headers: { ...auth, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ address }),
  });

describe('the Ray token stays home', () => {
  it('an address from the API is refused without the operator flag, and the second listener hears nothing', async () => {
    const runs = manager(false);
    const app = appFor(runs);
    const res = await put(app, other.address);
    expect(res.status).toBe(403);
    const body = (await res.json()) as { error: { message: string; field: string } };
    expect(body.error.field).toBe('address');
    expect(body.error.message).toMatch(
      /fixed to http:\/\/127\.0\.0\.1:\d+ \(--ray-address\).*--allow-ray-address-change/,
    );
    expect(other.seen).toEqual([]);
    expect(runs.address).toBe(home.address);
    // the configured address itself is always accepted, and it gets the token
    const same = await put(app, home.address);
    expect(same.status).toBe(200);
    expect(home.seen.at(-1)?.headers.authorization).toBe(`Bearer ${RAY_TOKEN}`);
    await runs.close();
  });

  it('with --allow-ray-address-change the page may switch, but the switched address never gets the token', async () => {
    other.seen = [];
    const runs = manager(true);
    const app = appFor(runs);
    const res = await put(app, other.address);
    expect(res.status).toBe(200);
    expect(parseClusterInfo(await res.json()).ray.address).toBe(other.address);
    expect(other.seen.length).toBeGreaterThan(0);
    for (const r of other.seen) expect(r.headers.authorization).toBeUndefined();
    for (const r of other.seen) expect(JSON.stringify(r.headers)).not.toContain(RAY_TOKEN);
    // a run recorded against the configured address is still followed with the token
    const back = runs.ray(home.address);
    home.seen = [];
    await back.version();
    expect(home.seen[0].headers.authorization).toBe(`Bearer ${RAY_TOKEN}`);
    await runs.close();
  });

  it('an address an older gateway stored does not override --ray-address', async () => {
    store.setMeta('ray_address', other.address);
    const runs = manager(false);
    expect(runs.address).toBe(home.address);
    expect(runs.ray().address).toBe(home.address);
    await runs.close();
  });

  it('a token file the head rewrote is read again when Ray rejects the old token', async () => {
    const file = join(dir, 'ray-token');
    writeFileSync(file, 'old-token\n');
    const tok = RayToken.fromFile(file);
    const client = new RayJobsClient({ address: home.address, token: tok });
    home.accept = 'old-token';
    expect(await client.version()).toBe('2.60.0');
    home.accept = 'new-token';
    writeFileSync(file, 'new-token\n');
    home.seen = [];
    expect(await client.version()).toBe('2.60.0');
    expect(home.seen.map((r) => r.headers.authorization)).toEqual(['Bearer old-token', 'Bearer new-token']);
    expect(tok.current).toBe('new-token');
    // a rejected token the file has not replaced is an error, sent once
    home.accept = 'third-token';
    home.seen = [];
    await expect(client.version()).rejects.toThrow(/HTTP 401\): the Ray token was rejected/);
    expect(home.seen.length).toBe(1);
    home.accept = null;
  });
});

describe('Host and body limits', () => {
  const app = () => appFor(manager(false));

  it('answers only the Host names it serves (a DNS-rebinding pair of Host and Origin gets 403)', async () => {
    const a = app();
    for (const h of ['127.0.0.1:5173', 'localhost:5173', '[::1]:5173'])
      expect((await a.request('http://x/healthz', { headers: { host: h } })).status).toBe(200);
    const rebound = await a.request('http://evil.example:5173/api/runs', {
      headers: {
        host: 'evil.example:5173',
        origin: 'http://evil.example:5173',
        authorization: `Bearer ${token}`,
      },
    });
    expect(rebound.status).toBe(403);
    expect(((await rebound.json()) as { error: { message: string } }).error.message).toMatch(
      /Host "evil\.example:5173" is not an address this gateway serves.*--allow-host/,
    );
    expect((await a.request('http://x/healthz', { headers: { host: '127.0.0.1:9999' } })).status).toBe(403);
    expect([...servedHosts('0.0.0.0', 80, ['lab.example'], ['10.1.2.3', 'fe80::1'])].sort()).toEqual(
      [
        '10.1.2.3',
        '10.1.2.3:80',
        '127.0.0.1',
        '127.0.0.1:80',
        '[::1]',
        '[::1]:80',
        '[fe80::1]',
        '[fe80::1]:80',
        'lab.example:80',
        'localhost',
        'localhost:80',
      ].sort(),
    );
  });

  it('states a limit per route; a declared oversize is 413 before a byte is read, a chunked one stops at the limit', async () => {
    expect(BODY_LIMITS).toEqual({ 'PUT /api/cluster': 4096, 'POST /api/runs': 65536 });
    expect(OTHER_BODY_LIMIT).toBe(1024);
    const a = app();
    let pulled = 0;
    const endless = () =>
      new ReadableStream<Uint8Array>({
        pull(c) {
          pulled += 16 * 1024;
          c.enqueue(new Uint8Array(16 * 1024).fill(32));
        },
      });
    const declared = await a.request('http://x/api/runs', {
      method: 'POST',
      headers: { host: '127.0.0.1:5173', authorization: `Bearer ${token}`, 'content-length': '104857600' },
      body: endless(),
      duplex: 'half',
    } as RequestInit);
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { error: { message: string } }).error.message).toBe(
      "request body of 104857600 bytes is over this route's limit of 65536 bytes",
    );
    expect(pulled).toBeLessThanOrEqual(64 * 1024); // at most what the stream pre-fills; nothing consumed
    pulled = 0;
    const chunked = await a.request('http://x/api/runs', {
      method: 'POST',
      headers: { host: '127.0.0.1:5173', authorization: `Bearer ${token}` },
      body: endless(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(pulled).toBeLessThan(65536 + 4 * 16 * 1024);
    // a route without a body takes at most OTHER_BODY_LIMIT
    const stop = await a.request('http://x/api/runs/nope/stop', {
      method: 'POST',
      headers: { host: '127.0.0.1:5173', authorization: `Bearer ${token}`, 'content-length': '2000' },
      body: 'x'.repeat(2000),
    });
    expect(stop.status).toBe(413);
  });

  it('on a real socket, a 100 MB body is answered 413 while almost all of it is still unsent', async () => {
    const server = serve({ fetch: app().fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((r) => server.once('listening', () => r()));
    const port = (server.address() as AddressInfo).port;
    const total = 100 * 1024 * 1024;
    let sent = 0;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/runs',
        headers: {
          host: `127.0.0.1:5173`,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': String(total),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (e) => {
        if (!(e as NodeJS.ErrnoException).code?.match(/ECONNRESET|EPIPE/)) reject(e);
      });
      const chunk = Buffer.alloc(64 * 1024, 32);
      const pump = () => {
        while (sent < total && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
      };
      pump();
    });
    expect(status).toBe(413);
    expect(sent).toBeLessThan(total / 4);
    (server as Server).closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
});

describe('owner-only files', () => {
  const mode = (p: string) => statSync(p).mode & 0o777;

  it('a new store: folder 0700, the database and its WAL files 0600', () => {
    const d = join(dir, 'fresh', 'store');
    const s = new GatewayStore(join(d, 'gateway.sqlite'));
    s.setMeta('probe', 'x');
    expect(mode(d)).toBe(0o700);
    for (const f of ['gateway.sqlite', 'gateway.sqlite-wal', 'gateway.sqlite-shm']) {
      expect(existsSync(join(d, f)), f).toBe(true);
      expect(mode(join(d, f)), f).toBe(0o600);
    }
    s.close();
  });

  it('an existing store and its data dir are tightened; a shared folder with other files is refused', () => {
    const d = join(dir, 'old');
    mkdirSync(d, { mode: 0o755 });
    writeFileSync(join(d, 'gateway.sqlite'), '', { mode: 0o644 });
    mkdirSync(join(d, 'cluster-cli'), { mode: 0o755 });
    ownerOnlyDataDir(d);
    expect(mode(d)).toBe(0o700);
    new GatewayStore(join(d, 'gateway.sqlite')).close();
    expect(mode(join(d, 'gateway.sqlite'))).toBe(0o600);
    const shared = join(dir, 'shared');
    mkdirSync(shared, { mode: 0o755 });
    writeFileSync(join(shared, 'notes.txt'), 'mine');
    expect(() => ownerOnlyDataDir(shared)).toThrow(
      /--data-dir .*shared is open to other users \(mode 755\) and holds other files \(notes\.txt\)/,
    );
    expect(mode(shared)).toBe(0o755);
  });
});
