/**
 * The training loop runs unchanged in the page: harness agents in module Web Workers, the proxy and the trainer
 * on the page's thread here (a worker in the Train tab), the policy on Chromium's WebGPU, the run's files in
 * the origin-private file system. One short RL step from a fresh tiny policy, then a second run resumes from
 * the checkpoint the first wrote to OPFS.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import tokenizerUrl from '../../public/tokenizer/tokenizer.json?url';
import tokenizerConfigUrl from '../../public/tokenizer/tokenizer_config.json?url';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import type { GpuContext } from '../../src/engine/gpu/device';
import { initParams, resolveConfig } from '../../src/engine/model';
import { GpuPolicy } from '../../src/engine/policy/gpuPolicy';
import { workerHandle } from '../../src/harness/browserWorker';
import { serveChannel } from '../../src/harness/http';
import { WorkerPool } from '../../src/harness/pool';
import { decodeTrainCheckpoint, type RunState } from '../../src/train/checkpoint';
import { resolveTrainConfig } from '../../src/train/config';
import type { TrainEvent } from '../../src/train/events';
import { createLocalRun } from '../../src/train/local';
import type { DeferredRolloutEngine } from '../../src/train/rolloutEngine';
import { MemoryStorage, opfsStorage } from '../../src/train/storage';
import { parseFileLogger } from '../../src/train/verlLog';
import { context } from './gpuContext';

let ctx: GpuContext;
let tok: ChatTokenizer;
beforeAll(async () => {
  ctx = await context();
  const [json, cfg] = await Promise.all([
    fetch(tokenizerUrl).then((r) => r.json()),
    fetch(tokenizerConfigUrl).then((r) => r.json()),
  ]);
  tok = new ChatTokenizer('policy', json, cfg);
});
afterAll(() => ctx?.destroy());

const model = resolveConfig({
  vocabSize: 1024,
  contextLength: 1024,
  layers: 1,
  width: 32,
  heads: 2,
  seed: 2,
});
const config = resolveTrainConfig({
  lab: { harness: 'instruction-short', train_tasks: 8, val_tasks: 2, backend: 'webgpu' },
  data: { train_batch_size: 2, max_response_length: 6 },
  actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 2 } },
  trainer: { total_training_steps: 1, test_freq: 1, save_freq: 1, val_before_train: false },
});

function run(
  policy: GpuPolicy,
  storage: ReturnType<typeof opfsStorage>,
  events: TrainEvent[],
  state?: RunState,
) {
  return createLocalRun({
    config: state ? { ...config, trainer: { ...config.trainer, total_training_steps: 2 } } : config,
    policy,
    tokenizer: tok,
    storage,
    resumeState: state,
    onEvent: (e) => events.push(e),
    makeRunner: (handler) =>
      new WorkerPool({
        size: 2,
        spawn: () =>
          workerHandle(
            new Worker(new URL('../../src/harness/worker.ts', import.meta.url), { type: 'module' }),
          ),
        connect: (port) => serveChannel(port, handler),
        timeoutMs: 60_000,
      }),
  });
}

describe('the training loop in the page', () => {
  it('trains on WebGPU with harnesses in Web Workers, keeps its files in OPFS, and resumes from them', async () => {
    const storage = opfsStorage(`runs/test-${Date.now()}`);
    const events: TrainEvent[] = [];
    const policy = GpuPolicy.create(ctx, model, {}, initParams(model));
    const a = run(policy, storage, events);
    const first = await a.run.run();
    a.close();
    expect(first.steps).toBe(1);
    expect(events.filter((e) => e.type === 'rollout' && e.split === 'train')).toHaveLength(4);
    expect(events.some((e) => e.type === 'phase' && e.phase === 'update_actor')).toBe(true);
    const metrics = parseFileLogger(
      new TextDecoder().decode((await storage.readFile('metrics.jsonl')) as Uint8Array),
    );
    expect(metrics[0].data['actor/n_updates']).toBe(2);
    expect(metrics[0].data).toHaveProperty('val/reward');
    expect(await storage.list('traces')).toEqual(['traces/step_000001.jsonl']);
    const ck = decodeTrainCheckpoint(
      (await storage.readFile('checkpoints/step_000001.safetensors')) as Uint8Array,
    );
    expect(ck.state.step).toBe(1);
    // resume: a fresh engine from the checkpoint continues at step 2
    const again = GpuPolicy.create(ctx, ck.policyConfig, {}, ck.params);
    await again.setOptimizerState(ck.optimizer);
    const b = run(again, storage, [], ck.state);
    const second = await b.run.run();
    b.close();
    expect(second.history.map((h) => h.step)).toEqual([2]);
    policy.dispose();
    again.dispose();
  });

  it("takes its rollouts from onnxruntime-web's webgpu EP (int8 weights) while WebGPU trains, and reports the gap", async () => {
    const cfg = resolveTrainConfig({
      ...config,
      lab: { ...config.lab, rollout_precision: 'int8', rollout_device: 'webgpu' },
      actor_rollout_ref: {
        ...config.actor_rollout_ref,
        rollout: { ...config.actor_rollout_ref.rollout, name: 'onnxruntime-web', val_kwargs: { n: 1 } },
      },
      trainer: { ...config.trainer, total_training_steps: 2, test_freq: 0, save_freq: 0 },
    });
    const storage = new MemoryStorage();
    const policy = GpuPolicy.create(ctx, model, {}, initParams(model));
    // no rolloutEnv: the page's own (its ORT entries and wasm served by the app, the tokenizer fetched)
    const local = createLocalRun({
      config: cfg,
      policy,
      tokenizer: tok,
      storage,
      makeRunner: (handler) =>
        new WorkerPool({
          size: 2,
          spawn: () =>
            workerHandle(
              new Worker(new URL('../../src/harness/worker.ts', import.meta.url), { type: 'module' }),
            ),
          connect: (port) => serveChannel(port, handler),
          timeoutMs: 60_000,
        }),
    });
    const summary = await local.run.run();
    const engine = (local.rolloutEngine as DeferredRolloutEngine).engine;
    local.close();
    policy.dispose();
    expect(summary.steps).toBe(2);
    expect(engine?.kind).toBe('ort-webgpu-int8');
    expect(engine?.version).toBe(2);
    const metrics = parseFileLogger(storage.text('metrics.jsonl'));
    for (const m of metrics) {
      expect(m.data['lab/weight_sync/bytes']).toBeGreaterThan(0);
      expect(m.data['training/rollout_probs_diff_valid']).toBe(1);
      // int8 weights against the trainer's f32: a gap beyond float32 rounding
      expect(m.data['lab/rollout_logprob_diff/max']).toBeGreaterThan(1e-4);
      expect(m.data).toHaveProperty('rollout_corr/kl');
    }
    const trace = storage.text('traces/step_000002.jsonl');
    expect(trace).toContain('"trainer_log_probs"');
    expect(trace).toContain('ort-webgpu-int8/policy');
  });
});
