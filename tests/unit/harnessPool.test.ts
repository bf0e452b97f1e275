import { beforeAll, describe, expect, it } from 'vitest';
import { spawnNodeHarnessWorker } from '../../src/cli/nodeWorkers';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { RandomEngine, ScriptedEngine } from '../../src/harness/engines';
import { serveChannel } from '../../src/harness/http';
import { WorkerPool } from '../../src/harness/pool';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness } from '../../src/harness/registry';
import { planRollouts, type RunSpec, runRollouts } from '../../src/harness/runner';
import { qwen3 } from './qwen3';

let tok: ChatTokenizer;
beforeAll(() => {
  tok = qwen3();
});

const misbehaving = new URL('../tools/misbehavingWorker.ts', import.meta.url);

describe('worker pool over node:worker_threads', () => {
  it('runs real harness rollouts in worker threads through the proxy channel', async () => {
    const spec: RunSpec = { harness: 'coding', split: 'val', n: 3, groupSize: 2, seed: 5, behaviours: [] };
    const plan = planRollouts(spec);
    const tasks = new Map(plan.map((p) => [p.job.rolloutId, p.task]));
    const h = getHarness('coding');
    const proxy = new LlmProxy({
      engine: new ScriptedEngine(tok, (c) => h.expert(tasks.get(c.rolloutId) as never, c.messages)),
      tokenizer: tok,
    });
    const pool = new WorkerPool({
      size: 2,
      spawn: () => spawnNodeHarnessWorker(),
      connect: (p) => serveChannel(p, proxy.handle),
      timeoutMs: 30_000,
    });
    try {
      await pool.ready();
      const rs = await runRollouts(spec, plan, proxy, pool);
      expect(rs.map((r) => r.state)).toEqual(Array(6).fill('succeeded'));
      expect(rs.map((r) => r.finalReward)).toEqual(Array(6).fill(1));
      // the two rollouts of a task share its dataId (one GRPO group)
      expect(rs[0].dataId).toBe(rs[1].dataId);
      expect(rs[0].dataId).not.toBe(rs[2].dataId);
      for (const r of rs) expect(r.calls.length).toBeGreaterThan(0);
    } finally {
      pool.close();
    }
  });

  it('a crashed, hung or garbling worker fails its rollout with the reason, keeps its calls and is replaced', async () => {
    const proxy = new LlmProxy({ engine: new RandomEngine(tok, 1), tokenizer: tok });
    const pool = new WorkerPool({
      size: 2,
      spawn: () => spawnNodeHarnessWorker(misbehaving),
      connect: (p) => serveChannel(p, proxy.handle),
      timeoutMs: 4000,
    });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'train',
      n: 1,
      groupSize: 1,
      seed: 0,
      behaviours: [],
    };
    const [base] = planRollouts(spec);
    const job = (id: string, rid: string) => ({
      ...base,
      job: {
        ...base.job,
        rolloutId: rid,
        task: { ...base.job.task, id },
        baseUrl: `/rollout/${rid}/attempt/0/mode/train/openai/v1`,
        eventUrl: `/api/rollouts/${rid}/attempt/0/events`,
      },
    });
    const plan = [
      job('crash:1', 'r-crash'),
      job('hang:1', 'r-hang'),
      job('garbage:1', 'r-garbage'),
      job(base.task.id, 'r-ok'),
    ];
    try {
      const rs = await runRollouts(spec, plan, proxy, pool);
      const by = Object.fromEntries(rs.map((r) => [r.rolloutId, r]));
      expect(by['r-crash'].state).toBe('failed');
      expect(by['r-crash'].error).toMatch(/worker crashed: simulated harness crash/);
      expect(by['r-crash'].calls).toHaveLength(1);
      expect(by['r-hang'].state).toBe('failed');
      expect(by['r-hang'].error).toBe('timed out after 4000 ms');
      expect(by['r-hang'].calls).toHaveLength(1);
      expect(by['r-hang'].calls[0].httpStatus).toBe(200);
      expect(by['r-garbage'].error).toMatch(/bad message from worker: done.reward must be a finite number/);
      expect(by['r-ok'].state).toBe('succeeded');
      expect(pool.replaced).toBe(3);
    } finally {
      pool.close();
    }
  });

  it('cancels a running rollout through its AbortSignal', async () => {
    const proxy = new LlmProxy({ engine: new RandomEngine(tok, 1), tokenizer: tok });
    const pool = new WorkerPool({
      size: 1,
      spawn: () => spawnNodeHarnessWorker(misbehaving),
      connect: (p) => serveChannel(p, proxy.handle),
      timeoutMs: 60_000,
    });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'train',
      n: 1,
      groupSize: 1,
      seed: 0,
      behaviours: [],
    };
    const [base] = planRollouts(spec);
    const ac = new AbortController();
    try {
      const pending = pool.run({ ...base.job, task: { ...base.job.task, id: 'hang:2' } }, ac.signal);
      // wait until the worker's one call is recorded, then cancel
      for (let i = 0; i < 1200 && !proxy.record(base.job.rolloutId)?.calls[0]?.response; i++)
        await new Promise((r) => setTimeout(r, 25));
      ac.abort();
      expect(await pending).toEqual({ type: 'failed', rolloutId: base.job.rolloutId, error: 'cancelled' });
      expect(proxy.record(base.job.rolloutId)?.calls).toHaveLength(1);
    } finally {
      pool.close();
    }
  });

  it('a worker that never says ready is given up after the start timeout; the queue fails with the reason', async () => {
    const proxy = new LlmProxy({ engine: new RandomEngine(tok, 1), tokenizer: tok });
    const silent = new URL('data:text/javascript,setInterval(() => {}, 1000)');
    const pool = new WorkerPool({
      size: 1,
      spawn: () => spawnNodeHarnessWorker(silent),
      connect: (p) => serveChannel(p, proxy.handle),
      timeoutMs: 60_000,
      startTimeoutMs: 300,
    });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'train',
      n: 2,
      groupSize: 1,
      seed: 0,
      behaviours: [],
    };
    try {
      const rs = await runRollouts(spec, planRollouts(spec), proxy, pool);
      expect(rs.map((r) => r.error)).toEqual(
        Array(2).fill('workers keep failing before they start (last: worker did not start within 300 ms)'),
      );
      expect(pool.replaced).toBe(2);
    } finally {
      pool.close();
    }
  });
});
