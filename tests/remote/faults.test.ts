/**
 * Faults on a real local Ray head, through the gateway's REST API: a gateway away for 30 s mid-run and 200
 * concurrent readers during a run both miss no rollout (the job's spool keeps every one until the gateway has
 * read it); the head killed mid-run fails the run with the reason and leaves no process of the job behind; the
 * head started again writes a new token to the same file, which the still-running gateway picks up. The head
 * listens on loopback only.
 * The head of this test project is killed here and started again on the same ports and folder.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AGL_CPU_VAL_TASKS } from '../../src/cli/aglCpu';
import { PROJECT_ROOT } from '../../src/cli/clusterBundle';
import { headInfo, listeningAddresses, startHead } from '../../src/cli/localCluster';
import { parseClusterInfo, parseRunSummary, type RunSummary } from '../../src/server/protocol/api';
import { GatewayStore } from '../../src/server/store';
import { GatewayClient, type GatewayProcess, startGateway, until } from './gateway';
import { RAY_DASHBOARD_PORT, RAY_PORT } from './setup';

const dashboard = inject('rayDashboard');
const tokenFile = inject('rayTokenFile');

let dataDir: string;
let gw: GatewayProcess;
let client: GatewayClient;
let port: number;

const gatewayArgs = (p: string) => [
  '--port',
  p,
  '--data-dir',
  dataDir,
  '--ray-address',
  dashboard,
  '--ray-token-file',
  tokenFile,
  '--no-static',
];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'hl-gw-faults-'));
  gw = await startGateway(gatewayArgs('0'));
  client = new GatewayClient(gw.url, gw.token as string);
  port = Number(new URL(gw.url).port);
});

afterAll(async () => {
  await gw?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const run = async (id: string) => parseRunSummary(await client.json('GET', `/api/runs/${id}`));
const terminal = (s: RunSummary) => ['succeeded', 'failed', 'stopped'].includes(s.state);
const small = (steps: number) => ({
  template: 'agl-cpu',
  params: {
    total_training_steps: steps,
    train_batch_size: 2,
    rollout_n: 2,
    max_response_length: 32,
    seed: 5,
  },
});

/** Processes whose environment carries this run's Agent Lightning key: the launcher and everything it started. */
function processesWithKey(key: string): number[] {
  const needle = Buffer.from(`HL_AGL_KEY=${key}\0`);
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/environ`).includes(needle)) out.push(Number(d));
    } catch {
      // gone, or not ours
    }
  }
  return out;
}

describe('faults on a real Ray head', () => {
  it('the local head listens on loopback only', () => {
    const head = headInfo(join(PROJECT_ROOT, '.ray-test'));
    const listening = listeningAddresses(head?.pid as number);
    expect(listening.length).toBeGreaterThanOrEqual(5); // GCS, raylet ×2, dashboard, agents
    expect(listening.filter((l) => !l.loopback)).toEqual([]);
    expect(listening.map((l) => l.address)).toContain(`127.0.0.1:${RAY_DASHBOARD_PORT}`);
  });

  it('a gateway killed and away for 30 s mid-run misses no rollout', async () => {
    const r = parseRunSummary((await client.call('POST', '/api/runs', small(6))).body);
    await until('the first rollout', async () => (await run(r.id)).rollouts > 0, 240_000);
    await gw.stop('SIGKILL');
    await new Promise((res) => setTimeout(res, 30_000));
    gw = await startGateway(gatewayArgs(String(port)));
    await until('the run to end', async () => terminal(await run(r.id)), 420_000, 1000);
    const ended = await run(r.id);
    expect(ended.state, ended.message).toBe('succeeded');
    expect(ended.missedRollouts).toBe(0);
    expect(ended.rollouts).toBe(6 * 2 * 2 + AGL_CPU_VAL_TASKS);
  });

  it('200 concurrent readers during a run: no rollout missed, no read refused', async () => {
    const r = parseRunSummary((await client.call('POST', '/api/runs', small(4))).body);
    await until('the first rollout', async () => (await run(r.id)).rollouts > 0, 240_000);
    let done = false;
    let reads = 0;
    let resets = 0;
    const failures: string[] = [];
    const reader = async () => {
      // bounded: until the run ends, at most 2,000 reads each
      for (let i = 0; i < 2000 && !done; i++) {
        try {
          const res = await fetch(`${gw.url}/api/runs/${r.id}/rollouts/bundle`, {
            headers: { authorization: `Bearer ${client.token}` },
          });
          const text = await res.text();
          reads++;
          if (res.status !== 200) failures.push(`HTTP ${res.status}: ${text.slice(0, 200)}`);
        } catch {
          resets++; // a connection the overloaded gateway dropped: the reader tries again
        }
      }
    };
    const readers = Array.from({ length: 200 }, reader);
    await until(
      'the run to end',
      async () => terminal(await run(r.id).catch(() => ({ state: 'running' }) as RunSummary)),
      420_000,
      1000,
    );
    done = true;
    await Promise.all(readers);
    const ended = await run(r.id);
    console.log(
      `remote: 200 readers made ${reads} bundle reads during the run (${resets} dropped connections)`,
    );
    expect(failures).toEqual([]);
    expect(reads).toBeGreaterThan(200);
    expect(ended.state, ended.message).toBe('succeeded');
    expect(ended.missedRollouts).toBe(0);
    expect(ended.rollouts).toBe(4 * 2 * 2 + AGL_CPU_VAL_TASKS);
  });

  it('the head killed mid-run: the run fails with the reason, no process of the job is left, a new token is picked up', async () => {
    const r = parseRunSummary((await client.call('POST', '/api/runs', small(500))).body);
    await until('the first rollout', async () => (await run(r.id)).rollouts > 0, 240_000);
    const store = new GatewayStore(join(dataDir, 'gateway.sqlite'));
    const key = store.run(r.id)?.aglKey as string;
    store.close();
    const before = processesWithKey(key);
    expect(before.length).toBeGreaterThanOrEqual(4); // launcher, agl-server, agl-controller, policy server, trainer
    const rayDir = join(PROJECT_ROOT, '.ray-test');
    const head = headInfo(rayDir);
    expect(head).not.toBeNull();
    const oldToken = readFileSync(tokenFile, 'utf8');
    process.kill(-(head?.pid as number), 'SIGKILL');
    const t0 = Date.now();
    await until('the run to fail', async () => (await run(r.id)).state === 'failed', 30_000, 250);
    console.log(`remote: head killed → run failed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect((await run(r.id)).message).toMatch(/has not answered for \d+ s .*: the cluster is gone/);
    await until('no process of the job', () => processesWithKey(key).length === 0, 30_000, 250);

    // the head again, on the same ports and folder, with a new token in the same file
    await startHead({
      dir: rayDir,
      venv: inject('clusterVenv'),
      port: RAY_PORT,
      dashboardPort: RAY_DASHBOARD_PORT,
      numCpus: 4,
      tokenAuth: true,
    });
    expect(readFileSync(tokenFile, 'utf8')).not.toBe(oldToken);
    const info = parseClusterInfo(await client.json('GET', '/api/cluster'));
    expect(info.ray.error).toBeNull();
    expect(info.ray.reachable).toBe(true);
    expect((await run(r.id)).state).toBe('failed');
  });
});
