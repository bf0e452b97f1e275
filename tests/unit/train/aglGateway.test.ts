/**
 * The agl-cpu trainer's loop: `TrainRun` (the loop `lab train` runs) on rollouts from an Agent Lightning gateway
 * through `AglGatewaySource`. The gateway here speaks agl-server 1.0's REST routes over `fetch`; behind it the
 * "agents" are harness rollouts whose tasks are regenerated from the enqueued input (harness, split, seed, index)
 * exactly as `lab agent` regenerates them, and what the trainer reads back is the gateway's events.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { aglCpuTrainConfig, HARNESS_CATALOGUE } from '../../../src/cli/aglCpu';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { toAglEventsBundle } from '../../../src/core/trace/io';
import { initParams, resolveConfig } from '../../../src/engine/model';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { LlmProxy } from '../../../src/harness/proxy';
import { getHarness } from '../../../src/harness/registry';
import { jobPackage } from '../../../src/server/jobs';
import { checkTemplateParams, jobTemplates } from '../../../src/server/protocol/templates';
import { AglGatewayClient, AglGatewaySource } from '../../../src/train/aglSource';
import { resolveTrainConfig } from '../../../src/train/config';
import { ColocatedRolloutEngine } from '../../../src/train/rolloutEngine';
import { TrainRun } from '../../../src/train/run';
import { type GroupRequest, HarnessRolloutSource, inlineRunner } from '../../../src/train/source';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';

const tok = loadTokenizer('policy');
const model = resolveConfig({
  vocabSize: 1024,
  contextLength: 1024,
  layers: 1,
  width: 32,
  heads: 2,
  seed: 6,
});

interface Item {
  rollout_id: string;
  input: { harness: string; split: 'train' | 'val'; seed: number; index: number; data_id: string };
  is_train: boolean;
  metadata: { batch_idx: number; sample_idx_in_batch: number };
}

/** agl-server's routes the trainer uses, in memory, with harness rollouts behind them. */
class FakeGateway {
  readonly enqueued: Item[] = [];
  readonly versions: number[] = [];
  readonly deleted: string[] = [];
  readonly pauses: string[] = [];
  private readonly terminal: { rollout_id: string; state: string; data_id: string; is_train: boolean }[] = [];
  private readonly stored = new Map<string, { rollout: Record<string, unknown>; events: unknown[] }>();
  badTerminalPage = false;

  constructor(private readonly inner: HarnessRolloutSource) {
    void this.pump();
  }

  private async pump(): Promise<void> {
    for (;;) {
      let r: Awaited<ReturnType<HarnessRolloutSource['next']>>;
      try {
        r = await this.inner.next();
      } catch {
        return;
      }
      const b = toAglEventsBundle([r]).rollouts[0] as { rollout: Record<string, unknown>; events: unknown[] };
      this.stored.set(r.rolloutId, JSON.parse(JSON.stringify(b)));
      this.terminal.push({ rollout_id: r.rolloutId, state: r.state, data_id: r.dataId, is_train: true });
    }
  }

  readonly fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const u = new URL(String(url));
    const method = init?.method ?? 'GET';
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    const json = (status: number, v: unknown) =>
      new Response(v === undefined ? '' : JSON.stringify(v), { status });
    const rid = /^\/api\/rollouts\/([^/]+)(\/events)?$/.exec(u.pathname);
    if (method === 'POST' && u.pathname === '/api/rollouts') {
      const items = body as Item[];
      this.enqueued.push(...items);
      const groups = new Map<string, GroupRequest>();
      for (const it of items) {
        const g = groups.get(it.input.data_id);
        if (g) {
          g.rolloutIds.push(it.rollout_id);
          continue;
        }
        // what `lab agent` does with the rollout's input
        const task = getHarness('instruction-short').makeTasks(
          it.input.split,
          it.input.seed,
          it.input.index + 1,
        )[it.input.index];
        groups.set(it.input.data_id, {
          dataId: it.input.data_id,
          task,
          split: it.input.split,
          rolloutIds: [it.rollout_id],
          step: it.metadata.batch_idx,
          sampleIdx: it.metadata.sample_idx_in_batch,
        });
      }
      this.inner.submit([...groups.values()]);
      return json(201, items);
    }
    if (u.pathname === '/api/rollouts/terminal') {
      if (this.badTerminalPage) return json(200, { items: [], next_after: 'x', total_terminal: 0 });
      const after = Number(u.searchParams.get('after'));
      return json(200, {
        items: this.terminal.slice(after),
        next_after: this.terminal.length,
        total_terminal: this.terminal.length,
      });
    }
    if (rid) {
      const id = decodeURIComponent(rid[1]);
      const s = this.stored.get(id);
      if (method === 'DELETE') {
        this.stored.delete(id);
        this.deleted.push(id);
        return json(204, undefined);
      }
      if (!s) return json(404, { detail: 'not found' });
      return json(200, rid[2] ? s.events : { rollout: s.rollout, attempts: [] });
    }
    if (u.pathname === '/proxy/pause') {
      // agl-server's body model: retry_after_seconds is an int (a float is a 422)
      if (!Number.isInteger(body.retry_after_seconds))
        return json(422, { detail: [{ type: 'int_from_float', loc: ['body', 'retry_after_seconds'] }] });
      this.pauses.push(body.reason);
      await this.inner.pause(body.reason, body.retry_after_seconds);
      return json(200, { paused: true, inflight: 0, retry_after_seconds: 1, reason: body.reason });
    }
    if (u.pathname === '/proxy/resume') {
      this.inner.resume();
      return json(200, { paused: false, inflight: 0 });
    }
    if (u.pathname === '/proxy/state') return json(200, { paused: false, inflight: 0 });
    if (method === 'POST' && u.pathname === '/api/models') {
      for (const m of body as { version: number }[]) {
        this.versions.push(m.version);
        this.inner.setPolicyVersion(m.version);
      }
      return json(201, body);
    }
    return json(404, { detail: `no route ${method} ${u.pathname}` });
  };
}

function setUp(steps: number) {
  const config = resolveTrainConfig({
    lab: { harness: 'instruction-short', train_tasks: 8, val_tasks: 2, seed: 3 },
    data: { train_batch_size: 2, max_response_length: 8 },
    actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 2 } },
    trainer: { total_training_steps: steps, test_freq: 0, val_before_train: false },
  });
  const policy = new CpuPolicy(model, {}, initParams(model));
  const engine = new ColocatedRolloutEngine(policy, tok, { seed: 1 });
  const proxy = new LlmProxy({
    engine: engine.chat({ temperature: 1, topP: 1 }),
    tokenizer: tok,
    temperature: 1,
    maxResponseTokens: 8,
  });
  const gateway = new FakeGateway(
    new HarnessRolloutSource({
      harness: 'instruction-short',
      behaviours: [],
      maxTurns: null,
      proxy,
      runner: inlineRunner(proxy.handle),
    }),
  );
  const client = new AglGatewayClient('http://gateway.test', 'k', gateway.fetch as typeof fetch, 5000, 0);
  const h = getHarness('instruction-short');
  const indexOf = new Map(h.makeTasks('train', 3, 8).map((t, i) => [t.id, i]));
  const source = (isTrain: boolean) =>
    new AglGatewaySource({
      client,
      model: 'harness-lab-policy',
      endpoint: 'http://policy.test/v1',
      agentClass: 'a:B',
      envMap: {},
      isTrain,
      input: (g) => ({
        harness: 'instruction-short',
        split: g.split,
        seed: 3,
        index: indexOf.get(g.task.id) as number,
        behaviour: 'none',
      }),
      deleteAfterMs: 0,
      pollMs: 5,
    });
  const train = source(true);
  // as lab agl-train does: the initial weights are published as version 0 before the first step
  train.setPolicyVersion(0);
  const storage = new MemoryStorage();
  const run = new TrainRun({
    config,
    policy,
    tokenizer: tok,
    rolloutEngine: engine,
    source: train,
    valSource: source(false),
    storage,
  });
  return { run, gateway, train, storage };
}

describe('the agl-cpu trainer: lab train’s loop on rollouts from an Agent Lightning gateway', () => {
  it('enqueues, waits, pauses, trains on core’s pipeline, publishes each version, resumes, deletes', async () => {
    const { run, gateway, train, storage } = setUp(2);
    const summary = await run.run();
    await train.settled();
    train.close();
    await train.drained();
    expect(summary.steps).toBe(2);
    // 2 steps × 2 tasks × rollout.n 2, each task regenerated by the agent from (harness, split, seed, index)
    expect(gateway.enqueued.length).toBe(8);
    const tasks = getHarness('instruction-short').makeTasks('train', 3, 8);
    for (const it of gateway.enqueued) {
      expect(it.input).toMatchObject({ harness: 'instruction-short', split: 'train', seed: 3 });
      expect(it.input.data_id.startsWith(`${tasks[it.input.index].id}@`)).toBe(true);
      expect(it.is_train).toBe(true);
    }
    expect(gateway.pauses).toEqual(['training step 1', 'training step 2']);
    // each version published once by the train source and once by the val source (an upsert)
    expect([...new Set(gateway.versions)]).toEqual([0, 1, 2]);
    expect(gateway.deleted.sort()).toEqual(gateway.enqueued.map((i) => i.rollout_id).sort());
    const lines = parseFileLogger(storage.text('metrics.jsonl'));
    expect(lines.map((l) => l.step)).toEqual([1, 2]);
    for (const l of lines) {
      expect(l.data['lab/n_rollouts']).toBe(4);
      expect(l.data['training/n_sample_trained']).toBe(4);
      // the gateway's events carry the engine's log-probs and the version that served each call
      expect(l.data['training/rollout_probs_diff_max']).toBeLessThan(1e-3);
      expect(l.data['lab/staleness/call_max']).toBe(0);
      expect(l.data['actor/n_updates']).toBe(2);
      expect(Number.isFinite(l.data['actor/pg_loss'])).toBe(true);
    }
  });

  it('a group submitted right after the last watched rollout arrives is still polled', async () => {
    const { train } = setUp(1);
    const task = getHarness('instruction-short').makeTasks('train', 3, 8)[0];
    const group = (k: number): GroupRequest => ({
      dataId: `${task.id}@${k}`,
      task,
      split: 'train',
      rolloutIds: [`r${k}`],
      step: k,
      sampleIdx: 0,
    });
    const within = <T>(p: Promise<T>, what: string) =>
      Promise.race([
        p,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no rollout`)), 20_000)),
      ]);
    train.submit([group(1)]);
    expect((await within(train.next(), 'first')).rolloutId).toBe('r1');
    // no macrotask in between: the poll loop that delivered r1 is just ending
    train.submit([group(2)]);
    expect((await within(train.next(), 'second')).rolloutId).toBe('r2');
    await train.settled();
    train.close();
  });

  it('a reply the trainer cannot read fails the run with the field named', async () => {
    const { run, gateway, train } = setUp(1);
    gateway.badTerminalPage = true;
    await expect(run.run()).rejects.toThrow(/terminal page\.next_after must be an integer/);
    train.close();
  });

  it('the template’s parameters become the loop’s config under their upstream keys', () => {
    const { params } = checkTemplateParams(jobTemplates(HARNESS_CATALOGUE), 'agl-cpu', {
      harness: 'instruction-short',
      train_batch_size: 3,
      rollout_n: 4,
      adv_estimator: 'rloo',
      loss_agg_mode: 'seq-mean-token-mean',
      policy_loss_mode: 'vanilla',
      max_response_length: 40,
      max_prompt_length: 150,
      lr: 5e-4,
      seed: 9,
    });
    const cfg = aglCpuTrainConfig(params, 1024);
    expect(cfg.lab).toMatchObject({ harness: 'instruction-short', seed: 9, behaviours: [], val_tasks: 4 });
    // validation once, after the last step
    expect(cfg.trainer).toMatchObject({ test_freq: params.total_training_steps, val_before_train: false });
    expect(cfg.data).toMatchObject({ train_batch_size: 3, max_response_length: 40, max_prompt_length: 150 });
    expect(cfg.algorithm.adv_estimator).toBe('rloo');
    expect(cfg.actor_rollout_ref.actor).toMatchObject({
      ppo_mini_batch_size: 3,
      loss_agg_mode: 'seq-mean-token-mean',
      policy_loss: { loss_mode: 'vanilla' },
    });
    expect(cfg.actor_rollout_ref.actor.optim.lr).toBe(5e-4);
    expect(cfg.actor_rollout_ref.rollout).toMatchObject({ n: 4, max_model_len: 1024 });
    expect(cfg.agentlightning.trace_aggregator).toMatchObject({
      trajectory_max_prompt_length: 150,
      trajectory_max_response_length: 40,
    });
  });

  it('the job carries the harness’s SFT checkpoint, and both processes start from it', () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const { params } = checkTemplateParams(jobTemplates(HARNESS_CATALOGUE), 'agl-cpu', { harness: 'coding' });
    const files = unzipSync(
      jobPackage('agl-cpu', params, {
        runId: 'r',
        submissionId: 's',
        aglKey: 'k',
        aglHost: '127.0.0.1',
        root,
        clusterCli: `${root}package.json`,
      }),
    );
    const ck = 'checkpoints/coding.safetensors';
    expect(files[ck]).toEqual(new Uint8Array(readFileSync(`${root}public/${ck}`)));
    const job = JSON.parse(new TextDecoder().decode(files['job.json']));
    for (const argv of [job.policy_server_args, job.trainer_command] as string[][])
      expect(argv[argv.indexOf('--checkpoint') + 1]).toBe(ck);
  });
});
