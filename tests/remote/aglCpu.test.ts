/**
 * The agl-cpu template end to end, through the gateway's REST API, on a real local Ray head (token auth): the
 * real `agl-server` records every call and reward, `agl-controller` runs each rollout through the Python agent
 * class and `lab agent`, our trainer (`lab train`'s loop, from the harness's shipped SFT checkpoint) updates the
 * policy and pushes weights; metrics and rollouts stream to an
 * SSE client; the gateway is killed (SIGKILL) mid-run and restarted on the same store; a second run is stopped;
 * a third fails at start and says why.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AGL_CPU_VAL_TASKS, aglCpuTrainConfig, HARNESS_CATALOGUE } from '../../src/cli/aglCpu';
import { readAglEvents } from '../../src/core/trace/io/aglEvents';
import {
  type ClusterInfo,
  type MetricRow,
  parseClusterInfo,
  parseMetricRows,
  parseRolloutList,
  parseRunSummary,
  type RunSummary,
} from '../../src/server/protocol/api';
import { checkTemplateParams, jobTemplates } from '../../src/server/protocol/templates';
import { RayJobsClient } from '../../src/server/ray';
import { buildStepRows } from '../../src/train/objective';
import { hashSeed } from '../../src/train/rng';
import { GatewayClient, type GatewayProcess, RunStream, startGateway, until } from './gateway';

const dashboard = inject('rayDashboard');
const tokenFile = inject('rayTokenFile');
const rayToken = () => readFileSync(tokenFile, 'utf8').trim();

let dataDir: string;
let gw: GatewayProcess;
let client: GatewayClient;
let port: number;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'hl-gw-e2e-'));
  gw = await startGateway([
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--ray-address',
    dashboard,
    '--ray-token-file',
    tokenFile,
    '--no-static',
  ]);
  expect(gw.token).toMatch(/^[\w-]{40,}$/);
  client = new GatewayClient(gw.url, gw.token as string);
  port = Number(new URL(gw.url).port);
});

afterAll(async () => {
  await gw?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const run = async (id: string) => parseRunSummary(await client.json('GET', `/api/runs/${id}`));

describe('agl-cpu through the gateway on a real Ray head', () => {
  it('sees the cluster: Ray version, nodes, CPUs, token auth', async () => {
    const info: ClusterInfo = parseClusterInfo(await client.json('GET', '/api/cluster'));
    expect(info.ray).toMatchObject({
      reachable: true,
      version: '2.60.0',
      nodes: 1,
      tokenAuth: true,
      error: null,
    });
    expect(info.ray.cpus).toBeGreaterThan(0);
  });

  it('trains, streams metrics and rollouts, and loses nothing across a gateway kill and restart', async () => {
    const t0 = Date.now();
    const submitted = await client.call('POST', '/api/runs', {
      template: 'agl-cpu',
      name: 'e2e',
      params: {
        total_training_steps: 3,
        train_batch_size: 2,
        rollout_n: 2,
        max_response_length: 32,
        seed: 3,
      },
    });
    expect(submitted.status).toBe(201);
    const summary = parseRunSummary(submitted.body);
    const id = summary.id;
    const stream = new RunStream(client, id).open();
    await stream.until('the first metric', () => stream.of('metric').length > 0, 240_000);
    const firstMetricS = (Date.now() - t0) / 1000;
    console.log(`remote: submit → first metric ${firstMetricS.toFixed(1)} s`);
    await stream.until('4 rollouts', () => stream.of('rollout').length >= 4, 120_000);
    expect(stream.error).toBeNull();

    // what the gateway has stored before it dies
    const before = {
      metrics: parseMetricRows(await client.json('GET', `/api/runs/${id}/metrics`)),
      rollouts: parseRolloutList(await client.json('GET', `/api/runs/${id}/rollouts`)),
      logs: await client.json<{ lines: string[]; total: number }>('GET', `/api/runs/${id}/logs?tail=100000`),
    };
    expect(before.metrics.length).toBeGreaterThan(0);
    const lastSeen = stream.lastId;
    stream.close();
    await gw.stop('SIGKILL');

    gw = await startGateway([
      '--port',
      String(port),
      '--data-dir',
      dataDir,
      '--ray-address',
      dashboard,
      '--ray-token-file',
      tokenFile,
      '--no-static',
    ]);
    expect(gw.token).toBeNull(); // the token of the first start still holds
    expect(gw.output.some((l) => /use the token printed at first start/.test(l))).toBe(true);
    const after = {
      metrics: parseMetricRows(await client.json('GET', `/api/runs/${id}/metrics`)),
      rollouts: parseRolloutList(await client.json('GET', `/api/runs/${id}/rollouts`)),
      logs: await client.json<{ lines: string[]; total: number }>('GET', `/api/runs/${id}/logs?tail=100000`),
    };
    for (const m of before.metrics)
      expect(after.metrics.find((x) => x.step === m.step)?.data).toMatchObject(m.data);
    expect(after.rollouts.slice(0, before.rollouts.length)).toEqual(before.rollouts);
    expect(after.logs.lines.slice(0, before.logs.total)).toEqual(before.logs.lines);
    expect((await run(id)).submissionId).toBe(summary.submissionId);

    // the stream resumes after the last event this client saw: no gap, no repeat
    const resumed = new RunStream(client, id).open(lastSeen);
    await until(
      'the run to finish',
      async () => ['succeeded', 'failed', 'stopped'].includes((await run(id)).state),
      300_000,
      1000,
    );
    const ended = await run(id);
    expect(ended.state, ended.message).toBe('succeeded');
    await resumed.until(
      'the final status event',
      () => resumed.of('status').some((s) => s.state === 'succeeded'),
      30_000,
    );
    resumed.close();
    expect(resumed.error).toBeNull();
    const seqs = resumed.events.map((e) => e.seq);
    expect(seqs[0]).toBe(lastSeen + 1);
    expect(seqs).toEqual(seqs.map((_, i) => lastSeen + 1 + i));

    const final = await run(id);
    expect(final.message).toBe('Job finished successfully.');
    expect(final.lastStep).toBe(3);
    const metrics: MetricRow[] = parseMetricRows(await client.json('GET', `/api/runs/${id}/metrics`));
    expect(metrics.map((m) => m.step)).toEqual([1, 2, 3]);
    for (const m of metrics) {
      expect(m.data['lab/policy_version']).toBe(m.step);
      expect(m.data['lab/n_rollouts']).toBe(4);
      for (const k of [
        'actor/grad_norm',
        'actor/entropy',
        'critic/score/mean',
        'timing_s/gen',
        'timing_s/update_actor',
        'training/n_sample',
      ])
        expect(Number.isFinite(m.data[k]), `${k} at step ${m.step}`).toBe(true);
      expect(m.data['timing_s/update_actor']).toBeGreaterThan(0);
    }

    // every rollout the real agl-server finished is either stored or counted as missed
    const rollouts = parseRolloutList(await client.json('GET', `/api/runs/${id}/rollouts`));
    expect(rollouts.length + final.missedRollouts).toBe(12 + AGL_CPU_VAL_TASKS);
    expect(final.missedRollouts).toBe(0);
    // validated once, after the last step, on the val split
    expect(rollouts.filter((r) => !r.isTrain).length).toBe(AGL_CPU_VAL_TASKS);
    expect(metrics[2].data['val/n_rollouts']).toBe(AGL_CPU_VAL_TASKS);
    expect(Number.isFinite(metrics[2].data['val/reward'])).toBe(true);
    expect(metrics[0].data['val/reward']).toBeUndefined();
    expect(new Set(rollouts.map((r) => r.rolloutId)).size).toBe(rollouts.length);
    const bundle = await client.json<{
      rollouts: {
        rollout: { metadata: Record<string, unknown>; is_train?: boolean };
        events: { event_type: string; data: Record<string, unknown> }[];
      }[];
    }>('GET', `/api/runs/${id}/rollouts/bundle`);
    expect(bundle.rollouts.length).toBe(rollouts.length);
    for (const r of bundle.rollouts) {
      const step = r.rollout.metadata.batch_idx as number;
      // validation after step N is served by the policy that step N published
      const servedBy = r.rollout.is_train === false ? step : step - 1;
      const calls = r.events.filter((e) => e.event_type === 'model_request');
      expect(calls.length).toBeGreaterThan(0);
      // served by the policy version the trainer published before this step; ids recorded by the gateway
      for (const c of calls) {
        expect(c.data.model_version).toBe(servedBy);
        const resp = c.data.response as { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
        expect(resp.prompt_token_ids.length).toBeGreaterThan(0);
        expect(resp.choices[0].token_ids.length).toBeGreaterThan(0);
      }
      expect(r.events.some((e) => e.event_type === 'reward')).toBe(true);
    }

    // the rows the trainer reported are the rows core builds from what the gateway stored (steps read in full)
    const trace = readAglEvents(bundle);
    expect(trace.issues.filter((i) => i.severity !== 'warning')).toEqual([]);
    const params = checkTemplateParams(jobTemplates(HARNESS_CATALOGUE), 'agl-cpu', final.params).params;
    for (const m of metrics) {
      const ofStep = trace.rollouts.filter((r) => r.step === m.step);
      if (ofStep.length !== 4) continue;
      // the trainer's own config and trim seed (lab agl-train: aglCpuTrainConfig; the run: hashSeed(seed, trim, step))
      const cfg = aglCpuTrainConfig(params, 1024); // 1024: the shipped checkpoints' context
      const rows = buildStepRows(ofStep, cfg, { trimSeed: hashSeed(cfg.lab.seed, 'trim', m.step) });
      const built = rows.build;
      expect(m.data['training/n_sample_collected']).toBe(built.batch.nRows);
      expect(m.data['training/n_sample_trained']).toBe(rows.batch.nRows);
      // which rows a random trim keeps depends on the order rollouts completed in; without one the tokens agree
      if (m.data['training/n_sample_dropped/random'] === 0) {
        let trainable = 0;
        for (const x of rows.batch.mask) trainable += x;
        expect(m.data['lab/trainable_tokens']).toBe(trainable);
      }
      expect(m.data['training/n_sample']).toBe(built.metrics['training/n_sample']);
    }

    // the gateway's log is Ray's log, line for line, read once across the restart
    const rayLog = await new RayJobsClient({ address: dashboard, token: rayToken() }).logs(
      final.submissionId as string,
    );
    const logs = await client.json<{ lines: string[]; total: number }>(
      'GET',
      `/api/runs/${id}/logs?tail=100000`,
    );
    expect(logs.lines).toEqual(rayLog.replace(/\n$/, '').split('\n'));
  });

  it('stops a run', async () => {
    const r = parseRunSummary(
      (await client.call('POST', '/api/runs', { template: 'agl-cpu', params: { total_training_steps: 500 } }))
        .body,
    );
    await until('the run to start', async () => (await run(r.id)).state === 'running', 180_000);
    const stopped = await client.call('POST', `/api/runs/${r.id}/stop`);
    expect(stopped.status).toBe(200);
    expect(['stopping', 'stopped']).toContain(parseRunSummary(stopped.body).state);
    await until('stopped', async () => (await run(r.id)).state === 'stopped', 120_000);
    const job = await new RayJobsClient({ address: dashboard, token: rayToken() }).job(
      r.submissionId as string,
    );
    expect(job?.status).toBe('STOPPED');
    expect((await client.call('POST', `/api/runs/${r.id}/stop`)).status).toBe(409);
  });

  it('answers the negative cases: token, origin, template, parameter; nothing submitted', async () => {
    const runsBefore = (await client.json<{ runs: RunSummary[] }>('GET', '/api/runs')).runs.length;
    const jobsBefore = (await new RayJobsClient({ address: dashboard, token: rayToken() }).jobs()).length;
    expect((await new GatewayClient(gw.url, 'wrong').call('GET', '/api/runs')).status).toBe(401);
    expect((await client.call('GET', '/api/runs', undefined, { origin: 'http://evil.example' })).status).toBe(
      403,
    );
    expect((await client.call('POST', '/api/runs', { template: 'sh -c' })).status).toBe(400);
    expect((await client.call('POST', '/api/runs', { template: 'agl-cpu', params: { lr: 10 } })).status).toBe(
      400,
    );
    expect((await client.json<{ runs: RunSummary[] }>('GET', '/api/runs')).runs.length).toBe(runsBefore);
    expect((await new RayJobsClient({ address: dashboard, token: rayToken() }).jobs()).length).toBe(
      jobsBefore,
    );
  });

  it('a job that fails at start, and a gateway without the Ray token, say why', async () => {
    // the job's Agent Lightning gateway is told to bind an address this machine does not have (TEST-NET-1)
    const dir = mkdtempSync(join(tmpdir(), 'hl-gw-bad-'));
    const bad = await startGateway([
      '--port',
      '0',
      '--data-dir',
      dir,
      '--ray-address',
      dashboard,
      '--ray-token-file',
      tokenFile,
      '--no-static',
      '--agl-host',
      '192.0.2.123',
    ]);
    try {
      const c = new GatewayClient(bad.url, bad.token as string);
      const r = parseRunSummary((await c.call('POST', '/api/runs', { template: 'agl-cpu' })).body);
      await until(
        'failed',
        async () => parseRunSummary(await c.json('GET', `/api/runs/${r.id}`)).state === 'failed',
        180_000,
      );
      const failed = parseRunSummary(await c.json('GET', `/api/runs/${r.id}`));
      expect(failed.message).toMatch(/^Job entrypoint command failed with exit code 1/);
      expect(failed.message).toMatch(/— OSError: \[Errno 99\] Cannot assign requested address$/);
    } finally {
      await bad.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    const dir2 = mkdtempSync(join(tmpdir(), 'hl-gw-notoken-'));
    const noToken = await startGateway(
      ['--port', '0', '--data-dir', dir2, '--ray-address', dashboard, '--no-static'],
      { RAY_AUTH_TOKEN: '' },
    );
    try {
      const c = new GatewayClient(noToken.url, noToken.token as string);
      const info = parseClusterInfo(await c.json('GET', '/api/cluster'));
      expect(info.ray.reachable).toBe(false);
      expect(info.ray.error).toMatch(/HTTP 401.*needs a Ray token/);
      const res = await c.call('POST', '/api/runs', { template: 'agl-cpu' });
      expect(res.status).toBe(503);
    } finally {
      await noToken.stop();
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});
