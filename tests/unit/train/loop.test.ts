import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { parseJsonlTrace } from '../../../src/core/trace/io';
import { initParams, resolveConfig } from '../../../src/engine/model';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { decodeTrainCheckpoint } from '../../../src/train/checkpoint';
import { resolveTrainConfig, type TrainConfigPatch } from '../../../src/train/config';
import type { TrainEvent } from '../../../src/train/events';
import { parseTrainEvent } from '../../../src/train/events';
import { createLocalRun } from '../../../src/train/local';
import { inlineRunner } from '../../../src/train/source';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';

// Short runs of the whole loop on the CPU engine with a tiny freshly initialised policy (these test the loop,
// not learning: see learning.test.ts). Rollouts run inline (no worker threads) unless a test needs the pool.

const tok = loadTokenizer('policy');
const model = resolveConfig({
  vocabSize: 1024,
  contextLength: 1024,
  layers: 1,
  width: 32,
  heads: 2,
  seed: 9,
});

function config(patch: TrainConfigPatch) {
  return resolveTrainConfig({
    ...patch,
    lab: { harness: 'instruction-short', train_tasks: 16, val_tasks: 4, seed: 3, ...patch.lab },
    data: { train_batch_size: 2, max_response_length: 12, ...patch.data },
    actor_rollout_ref: {
      ...patch.actor_rollout_ref,
      actor: { ppo_mini_batch_size: 1, ppo_micro_batch_size_per_gpu: 3, ...patch.actor_rollout_ref?.actor },
      rollout: { n: 2, ...patch.actor_rollout_ref?.rollout },
    },
    trainer: {
      total_training_steps: 2,
      test_freq: 0,
      save_freq: 0,
      val_before_train: false,
      ...patch.trainer,
    },
  });
}

function start(
  patch: TrainConfigPatch,
  opts: { params?: Float32Array; storage?: MemoryStorage; concurrency?: number } = {},
) {
  const cfg = config(patch);
  const policy = new CpuPolicy(model, {}, opts.params ?? initParams(model));
  const events: TrainEvent[] = [];
  const local = createLocalRun({
    config: cfg,
    policy,
    tokenizer: tok,
    storage: opts.storage ?? new MemoryStorage(),
    makeRunner: (h) => inlineRunner(h, { concurrency: opts.concurrency }),
    onEvent: (e) => events.push(parseTrainEvent(JSON.parse(JSON.stringify(e)))),
  });
  return { cfg, policy, events, local };
}

const noTiming = (m: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(m).filter(([k]) => !k.startsWith('timing_s/') && !k.endsWith('tokens_per_s')),
  );

describe('the training loop', () => {
  it('writes verl file-logger metrics under verl names, kept traces with trainer log-probs, and timed phases', async () => {
    const storage = new MemoryStorage();
    const { events, local, policy } = start(
      { trainer: { total_training_steps: 2, test_freq: 2, save_freq: 2 } },
      { storage },
    );
    const summary = await local.run.run();
    local.close();
    expect(summary).toMatchObject({ reason: 'done', steps: 2 });
    const lines = parseFileLogger(storage.text('metrics.jsonl'));
    expect(lines.map((l) => l.step)).toEqual([1, 2]);
    for (const k of [
      'critic/rewards/mean',
      'critic/advantages/mean',
      'actor/pg_loss',
      'actor/entropy',
      'actor/pg_clipfrac',
      'actor/ppo_kl',
      'actor/grad_norm',
      'response_length/mean',
      'timing_s/gen',
      'timing_s/old_log_prob',
      'timing_s/update_actor',
      'timing_s/update_weights',
      'training/rollout_probs_diff_mean',
      'lab/merge_rate',
      'lab/retokenization_mismatch_rate',
      'lab/tool_calls_per_rollout',
      'lab/rows_per_rollout',
      'lab/staleness/call_mean',
    ])
      expect(lines[0].data, k).toHaveProperty(k);
    expect(lines[1].data).toHaveProperty('val/reward');
    // the engine that sampled is the one that trains: the two log-probs agree to f32 rounding
    expect(lines[0].data['training/rollout_probs_diff_max']).toBeLessThan(1e-3);
    const trace = parseJsonlTrace(storage.text('traces/step_000001.jsonl'));
    expect(trace.issues).toEqual([]);
    expect(trace.rollouts).toHaveLength(4);
    const call = trace.rollouts[0].calls[0];
    expect(call.trainerLogProbs?.length).toBe(call.responseTokenIds?.length);
    const i = 0;
    expect(
      Math.abs((call.trainerLogProbs as Float32Array)[i] - (call.responseLogProbs as Float32Array)[i]),
    ).toBeLessThan(1e-3);
    expect(call.engine?.policyVersion).toBe(0);
    const phases = events.filter((e) => e.type === 'phase').map((e) => (e as { phase: string }).phase);
    for (const p of [
      'gen',
      'pause',
      'old_log_prob',
      'adv',
      'update_actor',
      'update_weights',
      'resume',
      'validate',
      'save_checkpoint',
    ])
      expect(phases).toContain(p);
    const ck = decodeTrainCheckpoint(
      (await storage.readFile('checkpoints/step_000002.safetensors')) as Uint8Array,
    );
    expect(ck.state).toMatchObject({ step: 2, policyVersion: 2 });
    expect(ck.optimizer.step).toBe(4); // 2 steps × 2 mini-batches
    expect(Array.from(ck.params)).toEqual(Array.from(await policy.getParams()));
    expect(storage.text('checkpoints/latest')).toBe('checkpoints/step_000002.safetensors');
  });

  it('resumes from a checkpoint and takes exactly the step an uninterrupted run takes', async () => {
    const through = start({ trainer: { total_training_steps: 3 } });
    const full = await through.local.run.run();
    through.local.close();
    const first = new MemoryStorage();
    const a = start({ trainer: { total_training_steps: 3, save_freq: 2 } }, { storage: first });
    // run two steps, then stop as an interrupted run would
    await a.local.run.runStep();
    await a.local.run.runStep();
    a.local.close();
    const ck = decodeTrainCheckpoint(
      (await first.readFile('checkpoints/step_000002.safetensors')) as Uint8Array,
    );
    const policy = new CpuPolicy(ck.policyConfig, {}, ck.params);
    await policy.setOptimizerState(ck.optimizer);
    const local = createLocalRun({
      config: ck.config,
      policy,
      tokenizer: tok,
      makeRunner: (h) => inlineRunner(h),
      resumeState: ck.state,
    });
    const resumed = await local.run.run();
    local.close();
    expect(resumed.history.map((h) => h.step)).toEqual([3]);
    expect(noTiming(resumed.history[0].data)).toEqual(noTiming(full.history[2].data));
    expect(Array.from(await policy.getParams())).toEqual(Array.from(await through.policy.getParams()));
  });

  it('async: groups carried over an update finish under the new weights, so one rollout spans two versions', async () => {
    const storage = new MemoryStorage();
    const { local, events } = start(
      {
        lab: { harness: 'search', max_turns: 4 },
        data: { train_batch_size: 1, max_response_length: 4 },
        agentlightning: { async_rollout: { enabled: true, async_train_batch_size: 3 } },
        trainer: { total_training_steps: 3 },
      },
      { storage, concurrency: 2 },
    );
    const summary = await local.run.run();
    local.close();
    expect(summary.steps).toBe(3);
    const lines = parseFileLogger(storage.text('metrics.jsonl'));
    const spanning = lines.reduce((a, l) => a + (l.data['lab/n_rollouts_spanning_versions'] ?? 0), 0);
    expect(spanning).toBeGreaterThan(0);
    expect(Math.max(...lines.map((l) => l.data['lab/staleness/call_max'] ?? 0))).toBeGreaterThan(0);
    expect(lines[1].data['training/async/n_prev_carry_over_rollouts']).toBeGreaterThan(0);
    // verl 0.9's names for the same: a trajectory spanning two versions, trained a version after its first call
    expect(Math.max(...lines.map((l) => l.data['training/off_policy/trajectory_spans/max'] ?? 0))).toBe(2);
    for (const l of lines) {
      const worst = l.data['training/off_policy/trajectory_staleness_worst/max'];
      const newest = l.data['training/off_policy/trajectory_staleness/max'];
      expect(worst).toBeGreaterThanOrEqual(newest ?? Number.NaN);
    }
    expect(
      Math.max(...lines.map((l) => l.data['training/off_policy/trajectory_staleness_worst/max'] ?? 0)),
    ).toBeGreaterThan(0);
    expect(lines.every((l) => l.data['training/off_policy/evicted_samples'] === 0)).toBe(true);
    // the kept trace shows it call by call
    const versions = new Set<string>();
    for (const step of [2, 3])
      for (const r of parseJsonlTrace(storage.text(`traces/step_00000${step}.jsonl`)).rollouts) {
        const vs = new Set(r.calls.map((c) => c.engine?.policyVersion));
        if (vs.size > 1) versions.add([...vs].sort().join(','));
      }
    expect(versions.size).toBeGreaterThan(0);
    // agents were refused (429) while the proxy was paused for the update
    expect(events.some((e) => e.type === 'rejections')).toBe(true);
  });

  for (const threshold of [0, 1])
    it(`async drop at max_off_policy_threshold ${threshold}: stale groups are evicted and counted, fresh ones fill every batch`, async () => {
      const storage = new MemoryStorage();
      const { local } = start(
        {
          lab: { harness: 'search', max_turns: 4 },
          data: { train_batch_size: 1, max_response_length: 4 },
          agentlightning: { async_rollout: { enabled: true, async_train_batch_size: 3 } },
          trainer: {
            total_training_steps: 3,
            v1: { sampler: { max_off_policy_threshold: threshold, max_off_policy_strategy: 'drop' } },
          },
        },
        { storage, concurrency: 2 },
      );
      const summary = await local.run.run();
      local.close();
      expect(summary).toMatchObject({ reason: 'done', steps: 3 });
      const lines = parseFileLogger(storage.text('metrics.jsonl'));
      expect(lines.map((l) => l.step)).toEqual([1, 2, 3]);
      for (const l of lines) {
        // every step trained on a full batch (train_batch_size 1 × n 2) of groups within the threshold
        expect(l.data['training/async/n_completed_rollouts']).toBe(2);
        expect(l.data['training/off_policy/trajectory_staleness_worst/max']).toBeLessThanOrEqual(threshold);
        expect(l.data['training/off_policy/evicted_samples']).toBe(
          2 * (l.data['lab/async/n_dropped_stale_groups'] ?? Number.NaN),
        );
      }
      const evicted = lines.reduce(
        (a, l) => a + (l.data['training/off_policy/evicted_samples'] ?? Number.NaN),
        0,
      );
      if (threshold === 0) expect(evicted).toBeGreaterThan(0);
    });

  for (const threshold of [0, 1])
    it(`async wait at max_off_policy_threshold ${threshold}: nothing is evicted, groups reaching the threshold are trained oldest first`, async () => {
      const storage = new MemoryStorage();
      const { local } = start(
        {
          lab: { harness: 'search', max_turns: 4 },
          data: { train_batch_size: 1, max_response_length: 4 },
          agentlightning: { async_rollout: { enabled: true, async_train_batch_size: 3 } },
          trainer: {
            total_training_steps: 4,
            v1: { sampler: { max_off_policy_threshold: threshold, max_off_policy_strategy: 'wait' } },
          },
        },
        { storage, concurrency: 2 },
      );
      // groups finished past a full batch are carried over complete: the next step trains them (it used to
      // wait for their rollouts again, for ever)
      const summary = await local.run.run();
      local.close();
      expect(summary).toMatchObject({ reason: 'done', steps: 4 });
      const lines = parseFileLogger(storage.text('metrics.jsonl'));
      expect(lines.map((l) => l.step)).toEqual([1, 2, 3, 4]);
      for (const l of lines) {
        // a full batch (train_batch_size 1 × n 2) every step, and wait never evicts
        expect(l.data['training/async/n_completed_rollouts']).toBe(2);
        expect(l.data['training/off_policy/evicted_samples']).toBe(0);
        expect(l.data['lab/async/n_dropped_stale_groups'] ?? 0).toBe(0);
      }
      for (const l of lines) {
        const trained = l.data['training/off_policy/trajectory_staleness_worst/min'] ?? Number.NaN;
        // oldest first: no group carried over is older (in steps) than the one trained
        expect(l.data['training/async/new_carry_over_age_max_steps']).toBeLessThanOrEqual(trained);
        // three groups in the system, one trained a step, oldest first: none waits more than three steps
        expect(l.data['training/off_policy/trajectory_staleness_worst/max']).toBeLessThanOrEqual(2);
      }
    });

  it('pause holds the run between phases, resume continues it, stop ends it cleanly', async () => {
    const { local, events } = start({ trainer: { total_training_steps: 50 } });
    const run = local.run;
    const done = run.run();
    await new Promise((r) => setTimeout(r, 50));
    run.pause();
    expect(run.isPaused).toBe(true);
    const stepsAtPause = events.filter((e) => e.type === 'step').length;
    await new Promise((r) => setTimeout(r, 400));
    // at most the step in progress completes while paused
    expect(events.filter((e) => e.type === 'step').length).toBeLessThanOrEqual(stepsAtPause + 1);
    run.resume();
    // The pause is reported as lab/paused_s, not in timing_s/step. It may fall partly in the step in progress
    // (which finishes while paused) and partly in the next one (which waits at its first phase boundary), so
    // the steps up to the one after the pause account for all of it between them, and the earlier ones for none.
    const steps = () =>
      events.filter((e) => e.type === 'step') as unknown as { metrics: Record<string, number | null> }[];
    while (steps().length < stepsAtPause + 2) await new Promise((r) => setTimeout(r, 20));
    const done2 = steps().slice(0, stepsAtPause + 2);
    const paused = done2.reduce((a, e) => a + (e.metrics['lab/paused_s'] ?? 0), 0);
    expect(paused).toBeGreaterThanOrEqual(0.4);
    for (const e of done2) expect(e.metrics['timing_s/step']).toBeGreaterThanOrEqual(0);
    for (const e of done2.slice(0, stepsAtPause)) expect(e.metrics['lab/paused_s']).toBe(0);
    run.stop();
    const summary = await done;
    local.close();
    expect(summary.reason).toBe('stopped');
    expect(summary.steps).toBeLessThan(50);
    expect(events[events.length - 1]).toMatchObject({ type: 'run_end', reason: 'stopped' });
  });
});
