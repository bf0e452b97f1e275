/**
 * The gateway's store and run monitor against stand-ins for the Ray dashboard and a job's rollout spool
 * (real HTTP and WebSocket servers speaking the same routes), so faults can be made on purpose: a restarted
 * monitor reads nothing twice, a vanished spool or Ray is reported and retried, a job Ray forgot, a restarted
 * cluster (new session) or a Ray that stays away fails the run with the reason, and what was stored survives
 * all of it. The real Ray + Agent Lightning path is tests/remote/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { LogCursor, parseJobLines, RunMonitor } from '../../src/server/monitor';
import { RayJobsClient } from '../../src/server/ray';
import { GatewayStore } from '../../src/server/store';
import { AglGatewayClient } from '../../src/train/aglSource';
import { FILE_LOGGER_MARKER } from '../../src/train/verlLog';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

function listen(handler: Handler, port = 0): Promise<Server> {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => handler(req, res, body));
  });
  return new Promise((r) => s.listen(port, '127.0.0.1', () => r(s)));
}
const portOf = (s: Server) => (s.address() as AddressInfo).port;
const send = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const close = (s: Server) =>
  new Promise<void>((r) => {
    s.closeAllConnections();
    s.close(() => r());
  });

/** The Ray dashboard's job routes for one job, with its status and log under the test's control. */
class FakeRay {
  session = 'session_a';
  status: string | null = 'RUNNING';
  message = 'Job is currently running.';
  log = '';
  server!: Server;
  private sockets = new Set<import('ws').WebSocket>();
  private wss = new WebSocketServer({ noServer: true });
  async start(port = 0) {
    this.server = await listen((req, res) => {
      const url = req.url ?? '';
      if (url === '/api/version')
        return send(res, 200, { ray_version: '2.60.0', session_name: this.session });
      const m = /^\/api\/jobs\/([^/]+)(\/logs)?$/.exec(url);
      if (!m || this.status === null) return send(res, 404, { error: 'no such job' });
      if (m[2]) return send(res, 200, { logs: this.log });
      send(res, 200, {
        submission_id: m[1],
        status: this.status,
        message: this.message,
        start_time: 1,
        end_time: null,
      });
    }, port);
    this.server.on('upgrade', (req, socket, head) =>
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        this.sockets.add(ws);
        ws.on('close', () => this.sockets.delete(ws));
        if (this.log) ws.send(this.log); // the tail starts at the beginning of the log
        if (this.status !== 'RUNNING' && this.status !== 'PENDING') ws.close();
      }),
    );
    return this;
  }
  get url() {
    return `http://127.0.0.1:${portOf(this.server)}`;
  }
  append(text: string) {
    this.log += text;
    for (const ws of this.sockets) ws.send(text);
  }
  finish(status: string, message: string) {
    this.status = status;
    this.message = message;
    for (const ws of this.sockets) ws.close();
  }
  async stop() {
    for (const ws of this.sockets) ws.terminate();
    await close(this.server);
  }
}

/** A job's rollout spool (the read routes of Agent Lightning's gateway): terminal listing, rollouts, events. */
class FakeAgl {
  terminal: string[] = [];
  deleted = new Set<string>();
  server!: Server;
  async start(port = 0) {
    this.server = await listen((req, res) => {
      if (req.headers.authorization !== 'Bearer k')
        return send(res, 401, { detail: 'Invalid or missing API key' });
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.pathname === '/api/rollouts/terminal') {
        const after = Number(u.searchParams.get('after'));
        const limit = Number(u.searchParams.get('limit'));
        const slice = this.terminal.slice(after, after + limit);
        return send(res, 200, {
          items: slice
            .filter((r) => !this.deleted.has(r))
            .map((r) => ({ rollout_id: r, state: 'succeeded', data_id: 'g', is_train: true })),
          next_after: after + slice.length,
          total_terminal: this.terminal.length,
        });
      }
      const m = /^\/api\/rollouts\/([^/]+)(\/events)?$/.exec(u.pathname);
      if (!m || this.deleted.has(m[1]) || !this.terminal.includes(m[1]))
        return send(res, 404, { detail: 'Rollout not found' });
      if (m[2])
        return send(res, 200, [
          {
            event_type: 'model_request',
            rollout_id: m[1],
            attempt_id: '0',
            timestamp: 1,
            data: { response: {} },
          },
          { event_type: 'reward', rollout_id: m[1], attempt_id: '0', timestamp: 2, data: { value: 0.5 } },
        ]);
      send(res, 200, {
        rollout: {
          rollout_id: m[1],
          is_train: true,
          metadata: { data_id: 'task-1', batch_idx: 1 },
          status: { state: 'succeeded' },
        },
        attempts: ['0'],
      });
    }, port);
    return this;
  }
  get url() {
    return `http://127.0.0.1:${portOf(this.server)}`;
  }
  async stop() {
    await close(this.server);
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempStore(): { path: string; store: GatewayStore } {
  const dir = mkdtempSync(join(tmpdir(), 'hl-gw-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'gateway.sqlite');
  return { path, store: new GatewayStore(path) };
}

function newRun(store: GatewayStore, ray: string) {
  store.createRun({
    id: 'run-1',
    name: 'test',
    template: 'agl-cpu',
    params: {},
    state: 'pending',
    message: '',
    submissionId: 'job-1',
    rayAddress: ray,
    aglKey: 'k',
    aglUrl: null,
    createdMs: 1,
    updatedMs: 1,
  });
}

function monitor(store: GatewayStore, ray: string, rayLostAfterMs = 15_000) {
  const m = new RunMonitor(store, 'run-1', new RayJobsClient({ address: ray, timeoutMs: 2000 }), {
    onChange: () => {},
    statusPollMs: 50,
    aglPollMs: 50,
    maxBackoffMs: 200,
    rayLostAfterMs,
  });
  m.start();
  return m;
}

async function until(what: string, f: () => boolean, ms = 15_000) {
  const t0 = Date.now();
  while (!f()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const notices = (store: GatewayStore) =>
  store
    .eventsAfter('run-1', 0, 10_000)
    .filter((e) => e.event.kind === 'notice')
    .map((e) => (e.event as { message: string }).message);

describe('log cursor and line parsing', () => {
  it('skips what was consumed, keeps partial lines until they end', () => {
    const c = new LogCursor(4);
    expect(c.feed('abc\nde')).toEqual({ lines: ['e'].slice(0, 0), offset: 4 });
    expect(c.feed('f\ng')).toEqual({ lines: ['def'], offset: 8 });
    expect(c.flush()).toEqual({ lines: ['g'], offset: 9 });
    const p = parseJobLines([
      '[trainer] step:1 - a:0.5',
      `${FILE_LOGGER_MARKER}{"step":1,"data":{"a":0.25,"b":2}}`,
      `${FILE_LOGGER_MARKER}{"step":"x"}`,
      '[harness-lab] agl-gateway {"url": "http://127.0.0.1:9999", "template": "agl-cpu"}',
      '[harness-lab] error agl-server exited with code 1',
    ]);
    expect(p.metrics).toEqual([
      { step: 1, data: { a: 0.5 }, source: 'console' },
      { step: 1, data: { a: 0.25, b: 2 }, source: 'file' },
    ]);
    expect(p.aglUrl).toBe('http://127.0.0.1:9999');
    expect(p.errors).toEqual(['agl-server exited with code 1']);
    expect(p.notices[0]).toMatch(/unreadable file-logger line: file-logger line: step must be/);
  });
});

describe('run monitor', () => {
  it('stores log lines, metrics and rollouts once, across a monitor restart and a store reopen', async () => {
    const ray = await new FakeRay().start();
    const agl = await new FakeAgl().start();
    cleanups.push(
      () => ray.stop(),
      () => agl.stop(),
    );
    let { path, store } = tempStore();
    newRun(store, ray.url);
    ray.append(
      `Running entrypoint\n[harness-lab] agl-spool {"url": "${agl.url}"}\n[trainer] step:1 - a:1.5\n`,
    );
    agl.terminal = ['r1', 'r2'];
    let m = monitor(store, ray.url);
    await until('two rollouts', () => store.rollouts('run-1').length === 2);
    await until('the metric', () => store.metrics('run-1').length === 1);
    expect(store.run('run-1')?.state).toBe('running');
    expect(store.metrics('run-1')).toEqual([{ step: 1, data: { a: 1.5 } }]);
    const doc = JSON.parse(store.rolloutDocs('run-1', 0, 1)[0]);
    expect(doc.rollout.metadata.data_id).toBe('task-1');
    expect(store.rollouts('run-1')[0]).toMatchObject({
      rolloutId: 'r1',
      dataId: 'task-1',
      reward: 0.5,
      calls: 1,
      step: 1,
    });
    await m.stop();
    store.close();

    // the gateway restarts: same file, new monitor; the tail replays the log from its beginning
    store = new GatewayStore(path);
    ray.append(`${FILE_LOGGER_MARKER}{"step":1,"data":{"a":1.25,"c":3}}\n[trainer] step:2 - a:2\n`);
    agl.terminal.push('r3');
    m = monitor(store, ray.url);
    await until('rollout 3', () => store.rollouts('run-1').length === 3);
    await until('step 2', () => store.metrics('run-1').length === 2);
    const { lines } = store.logLines('run-1', 1000);
    expect(lines).toEqual([
      'Running entrypoint',
      `[harness-lab] agl-spool {"url": "${agl.url}"}`,
      '[trainer] step:1 - a:1.5',
      `${FILE_LOGGER_MARKER}{"step":1,"data":{"a":1.25,"c":3}}`,
      '[trainer] step:2 - a:2',
    ]);
    // the file logger's values win over the console's for the same key
    expect(store.metrics('run-1')).toEqual([
      { step: 1, data: { a: 1.25, c: 3 } },
      { step: 2, data: { a: 2 } },
    ]);
    expect(store.rollouts('run-1').map((r) => r.rolloutId)).toEqual(['r1', 'r2', 'r3']);
    // event ids are consecutive, so Last-Event-ID resumes exactly
    const seqs = store.eventsAfter('run-1', 0, 1000).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    ray.append('tail line without newline');
    ray.finish('SUCCEEDED', 'Job finished successfully.');
    await until('succeeded', () => store.run('run-1')?.state === 'succeeded');
    await m.finished();
    expect(store.logLines('run-1', 1).lines).toEqual(['tail line without newline']);
    store.close();
  });

  it('counts rollouts the trainer deleted before they were read, and survives the job gateway going away', async () => {
    const ray = await new FakeRay().start();
    const agl = await new FakeAgl().start();
    cleanups.push(() => ray.stop());
    const { store } = tempStore();
    cleanups.push(() => store.close());
    newRun(store, ray.url);
    agl.terminal = ['a', 'b', 'c'];
    agl.deleted.add('b');
    ray.append(`[harness-lab] agl-spool {"url": "${agl.url}"}\n`);
    const m = monitor(store, ray.url);
    cleanups.push(() => m.stop());
    await until('two rollouts', () => store.rollouts('run-1').length === 2);
    await until('missed', () => (store.run('run-1')?.missedRollouts ?? 0) === 1);
    expect(notices(store).some((n) => /1 rollout\(s\) were deleted by the job's trainer/.test(n))).toBe(true);
    const port = portOf(agl.server);
    await agl.stop();
    await until('unreachable notice', () =>
      notices(store).some((n) => /Agent Lightning gateway at .* unreachable/.test(n)),
    );
    // the gateway comes back on its port with one more rollout
    const again = await new FakeAgl().start(port);
    cleanups.push(() => again.stop());
    again.terminal = ['a', 'b', 'c', 'd'];
    await until('rollout d', () => store.rollouts('run-1').some((r) => r.rolloutId === 'd'));
    expect(notices(store).some((n) => /reachable again/.test(n))).toBe(true);
    expect(store.rollouts('run-1').map((r) => r.rolloutId)).toEqual(['a', 'c', 'd']);
  });

  it('reports Ray going away, keeps what it stored, and fails the run when Ray forgets the job', async () => {
    const ray = await new FakeRay().start();
    const { store } = tempStore();
    cleanups.push(() => store.close());
    newRun(store, ray.url);
    ray.append('line 1\n');
    const m = monitor(store, ray.url);
    cleanups.push(() => m.stop());
    await until('line 1', () => store.logLines('run-1', 10).total === 1);
    const port = portOf(ray.server);
    await ray.stop();
    await until('Ray unreachable notice', () =>
      notices(store).some((n) => /Ray dashboard at .* is unreachable: ECONNREFUSED; retrying/.test(n)),
    );
    expect(store.run('run-1')?.state).toBe('running');
    // Ray restarted: the dashboard answers again, but the job is gone from its (non-persistent) GCS
    const restarted = await new FakeRay().start(port);
    cleanups.push(() => restarted.stop());
    restarted.status = null;
    await until('failed', () => store.run('run-1')?.state === 'failed');
    expect(store.run('run-1')?.message).toMatch(/no longer knows job job-1 \(was the cluster restarted\?\)/);
    expect(store.logLines('run-1', 10).lines).toEqual(['line 1']);
  });

  it('fails the run when Ray stays unreachable past rayLostAfterMs, and when the cluster restarted (new session)', async () => {
    const ray = await new FakeRay().start();
    const { store } = tempStore();
    cleanups.push(() => store.close());
    newRun(store, ray.url);
    const m = monitor(store, ray.url, 1500);
    cleanups.push(() => m.stop());
    await until('running', () => store.run('run-1')?.state === 'running');
    expect(store.run('run-1')?.raySession).toBe('session_a');
    await ray.stop();
    await until('failed', () => store.run('run-1')?.state === 'failed', 10_000);
    expect(store.run('run-1')?.message).toMatch(
      /^Ray at http:\/\/127\.0\.0\.1:\d+ has not answered for [12] s \(Ray dashboard at .* is unreachable: ECONNREFUSED\): the cluster is gone/,
    );
    await m.finished();

    // a head restarted on the same port: the job id may even be known again, the session says otherwise
    const again = await new FakeRay().start();
    cleanups.push(() => again.stop());
    const { store: s2 } = tempStore();
    cleanups.push(() => s2.close());
    newRun(s2, again.url);
    const m2 = monitor(s2, again.url);
    cleanups.push(() => m2.stop());
    await until('running', () => s2.run('run-1')?.state === 'running');
    again.session = 'session_b';
    await until('failed', () => s2.run('run-1')?.state === 'failed');
    expect(s2.run('run-1')?.message).toMatch(
      /was restarted \(session session_a, now session_b\): the job and its processes are gone/,
    );
    await m2.finished();
  });

  it('puts the launcher error of a job that failed at start into the run message', async () => {
    const ray = await new FakeRay().start();
    cleanups.push(() => ray.stop());
    const { store } = tempStore();
    cleanups.push(() => store.close());
    newRun(store, ray.url);
    const m = monitor(store, ray.url);
    ray.append('[harness-lab] error agl-server did not answer http://127.0.0.1:1/healthz within 90 s\n');
    ray.finish('FAILED', 'Job entrypoint command failed with exit code 1');
    await until('failed', () => store.run('run-1')?.state === 'failed');
    await m.finished();
    expect(store.run('run-1')?.message).toBe(
      'Job entrypoint command failed with exit code 1 — agl-server did not answer http://127.0.0.1:1/healthz within 90 s',
    );
  });
});

describe('the Agent Lightning client', () => {
  it('retries a transport failure (a kept-alive socket closed under it) but not an HTTP error', async () => {
    let calls = 0;
    const flaky = (async () => {
      calls++;
      if (calls === 1) throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
      return new Response(JSON.stringify({ status: 'ok' }), { status: 200 });
    }) as typeof fetch;
    await new AglGatewayClient('http://agl', 'k', flaky, 1000, 3).health();
    expect(calls).toBe(2);
    calls = 0;
    await expect(new AglGatewayClient('http://agl', 'k', flaky, 1000, 0).health()).rejects.toThrow(
      /Agent Lightning gateway at http:\/\/agl unreachable \(GET \/healthz\): ECONNRESET/,
    );
    const refusing = (async () => {
      calls++;
      return new Response('{"detail":"Invalid or missing API key"}', { status: 401 });
    }) as typeof fetch;
    calls = 0;
    await expect(new AglGatewayClient('http://agl', 'k', refusing, 1000, 3).health()).rejects.toThrow(
      /HTTP 401/,
    );
    expect(calls).toBe(1);
  });
});
