/**
 * The rollout engine is not the trainer: a run whose rollouts come from onnxruntime-web (wasm EP) while our CPU
 * engine trains. From the shipped SFT checkpoint of `instruction-short` (its groups have differing rewards, so
 * the loss has non-zero weights), sync, one mini-batch per step.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { computeRolloutCorrection } from '../../../src/core/algos/rolloutCorrection';
import { parseJsonlTrace } from '../../../src/core/trace/io';
import type { Rollout } from '../../../src/core/trace/types';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import type { Batch, WeightsFn } from '../../../src/engine/policy/types';
import {
  CONFIG_FIELDS,
  resolveTrainConfig,
  type TrainConfig,
  type TrainConfigPatch,
} from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { type DeferredRolloutEngine, SamplerRolloutEngine } from '../../../src/train/rolloutEngine';
import { ROLLOUT_ENGINES, resolveRolloutChoice } from '../../../src/train/rolloutEngines';
import { nodeRolloutEnv } from '../../../src/train/rolloutEnvNode';
import { inlineRunner } from '../../../src/train/source';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';

const tok = loadTokenizer('policy');
const ck = decodeCheckpoint(
  new Uint8Array(
    readFileSync(new URL('../../../public/checkpoints/instruction-short.safetensors', import.meta.url)),
  ),
);

function config(patch: TrainConfigPatch): TrainConfig {
  return resolveTrainConfig({
    ...patch,
    lab: { harness: 'instruction-short', train_tasks: 16, val_tasks: 2, seed: 1, ...patch.lab },
    data: { train_batch_size: 4, max_response_length: 24 },
    actor_rollout_ref: {
      actor: { ppo_mini_batch_size: 4, ppo_micro_batch_size_per_gpu: 8, ...patch.actor_rollout_ref?.actor },
      rollout: { n: 4, name: 'onnxruntime-web', ...patch.actor_rollout_ref?.rollout },
    },
    trainer: { total_training_steps: 1, test_freq: 0, val_before_train: false, ...patch.trainer },
  });
}

/** Our CPU engine, recording every per-token weight array the update hands it (in the engine's (B, T) layout). */
class RecordingPolicy extends CpuPolicy {
  readonly seen: { batch: Batch; weights: Float32Array }[] = [];
  override accumulateGrads(batch: Batch, weights: Float32Array | WeightsFn) {
    const keep = (w: Float32Array) => {
      this.seen.push({ batch, weights: Float32Array.from(w) });
      return w;
    };
    return super.accumulateGrads(
      batch,
      typeof weights === 'function' ? (lp) => keep(weights(lp)) : keep(weights),
    );
  }
}

async function train(patch: TrainConfigPatch) {
  const cfg = config(patch);
  const policy = new RecordingPolicy(ck.config, {}, ck.params);
  const storage = new MemoryStorage();
  const local = createLocalRun({
    config: cfg,
    policy,
    tokenizer: tok,
    storage,
    rolloutEnv: nodeRolloutEnv(),
    makeRunner: (h) => inlineRunner(h),
  });
  const summary = await local.run.run();
  const engine = (local.rolloutEngine as DeferredRolloutEngine).engine;
  local.close();
  // a value the file logger wrote as null (NaN) fails the comparisons below as it should
  const metrics = parseFileLogger(storage.text('metrics.jsonl')).map((m) => ({
    step: m.step,
    data: m.data as Record<string, number>,
  }));
  const traces = metrics.map((m) =>
    parseJsonlTrace(storage.text(`traces/step_${String(m.step).padStart(6, '0')}.jsonl`)),
  );
  for (const t of traces) expect(t.issues).toEqual([]);
  return { summary, policy, metrics, traces: traces.map((t) => t.rollouts), engine };
}

/** Per response token of every call: engine and trainer log-probs, as the kept trace records them. */
function pairs(rollouts: Rollout[]): { engine: number[]; trainer: number[] } {
  const engine: number[] = [];
  const trainer: number[] = [];
  for (const r of rollouts)
    for (const c of r.calls) {
      expect(c.responseLogProbs, 'engine log-probs').toBeDefined();
      expect(c.trainerLogProbs, 'trainer log-probs').toBeDefined();
      engine.push(...(c.responseLogProbs as Float32Array));
      trainer.push(...(c.trainerLogProbs as Float32Array));
    }
  return { engine, trainer };
}

describe('rollouts from onnxruntime-web, updates on our engine', () => {
  it('registers the engine choice as config fields and checks it per platform', () => {
    const names = CONFIG_FIELDS.find((f) => f.path === 'actor_rollout_ref.rollout.name')?.choices?.();
    expect(names).toEqual(ROLLOUT_ENGINES.names());
    expect(names).toEqual(['policy', 'onnxruntime-web', 'transformers.js']);
    for (const p of ['lab.rollout_device', 'lab.rollout_precision'])
      expect(CONFIG_FIELDS.some((f) => f.path === p)).toBe(true);
    expect(() =>
      config({ lab: { rollout_precision: 'int8' }, actor_rollout_ref: { rollout: { name: 'policy' } } }),
    ).toThrow("lab.rollout_precision must be f32 with actor_rollout_ref.rollout.name 'policy'");
    const webgpu = config({ lab: { rollout_device: 'webgpu' } });
    expect(resolveRolloutChoice(webgpu, 'page').choice).toEqual({
      name: 'onnxruntime-web',
      device: 'webgpu',
      precision: 'f32',
    });
    expect(resolveRolloutChoice(webgpu, 'node').problem?.message).toContain(
      "'webgpu' is not available for 'onnxruntime-web' in Node (here: 'wasm'",
    );
    expect(resolveRolloutChoice(config({}), 'node').choice?.device).toBe('wasm');
    expect(
      resolveRolloutChoice(config({ actor_rollout_ref: { rollout: { name: 'transformers.js' } } }), 'node')
        .choice?.device,
    ).toBe('cpu');
  });

  it('a rollout engine that cannot start fails the run with the reason, before any rollout', async () => {
    const cfg = config({ actor_rollout_ref: { rollout: { name: 'transformers.js' } } });
    const events: string[] = [];
    const storage = new MemoryStorage();
    const local = createLocalRun({
      config: cfg,
      policy: new CpuPolicy(ck.config, {}, ck.params),
      tokenizer: tok,
      storage,
      rolloutEnv: {
        ...nodeRolloutEnv(),
        tokenizerFiles: async () => {
          throw new Error('tokenizer.json: not readable');
        },
      },
      onEvent: (e) => events.push(e.type === 'run_end' ? `run_end ${e.reason}: ${e.error}` : e.type),
      makeRunner: (h) => inlineRunner(h),
    });
    await expect(local.run.run()).rejects.toThrow(
      "actor_rollout_ref.rollout.name 'transformers.js' on cpu (f32 weights) could not start: tokenizer.json: not readable",
    );
    local.close();
    expect(events).not.toContain('rollout');
    expect(events.at(-1)).toContain('run_end error: actor_rollout_ref.rollout.name');
    // what the run had written stays
    expect(storage.text('config.json')).toContain('"transformers.js"');
  });

  it('int8 weights give a real, reported mismatch; f32 weights only rounding; the engine follows each update', {
    timeout: 120_000,
  }, async () => {
    const int8 = await train({ lab: { rollout_precision: 'int8' }, trainer: { total_training_steps: 2 } });
    const f32 = await train({
      lab: { rollout_precision: 'f32' },
      trainer: { total_training_steps: 2 },
      actor_rollout_ref: { actor: { optim: { lr: 1e-3 } } },
    });
    for (const run of [int8, f32]) {
      expect(run.summary).toMatchObject({ reason: 'done', steps: 2 });
      expect(run.engine).toBeInstanceOf(SamplerRolloutEngine);
      expect(run.engine?.kind).toBe(`ort-wasm-${run === int8 ? 'int8' : 'f32'}`);
      // the engine was synced after each update, and each step's calls were served by the version before it
      expect(run.engine?.version).toBe(2);
      run.traces.forEach((rollouts, i) => {
        for (const r of rollouts)
          for (const c of r.calls) {
            expect(c.engine).toMatchObject({ engine: 'onnxruntime-web', policyVersion: i });
            expect(c.engine?.model).toMatch(/^ort-wasm-(int8|f32)\/policy$/);
          }
        expect(rollouts[0].metadata.tokenizer).toBe('policy');
      });
      for (const m of run.metrics) {
        expect(m.data['lab/weight_sync/bytes']).toBeGreaterThan(0);
        expect(m.data['timing_s/update_weights']).toBeGreaterThan(0);
        expect(m.data['training/rollout_probs_diff_valid']).toBe(1);
        for (const k of ['rollout_corr/kl', 'rollout_corr/log_ppl_abs_diff', 'rollout_corr/chi2_token'])
          expect(m.data, k).toHaveProperty(k);
      }
      // the trainer trained (its weights moved) on what the other engine sampled
      let moved = 0;
      const after = await run.policy.getParams();
      for (let i = 0; i < after.length; i++) moved = Math.max(moved, Math.abs(after[i] - ck.params[i]));
      expect(moved).toBeGreaterThan(1e-5);
    }
    // f32: the same weights in another runtime, so the log-probs agree to float32 rounding, also at step 2,
    // after an update of lr 1e-3 (a missed sync would leave the engine a whole update behind)
    for (const m of f32.metrics) {
      expect(m.data['lab/rollout_logprob_diff/max']).toBeLessThan(1e-4);
      expect(m.data['training/rollout_probs_diff_max']).toBeLessThan(1e-4);
    }
    // int8 weight-only quantisation: a mismatch well beyond rounding (the f32 run's figures), in every metric
    // family (the step-1 |Δ log-prob| mean on this seed is ~9e-5: the SFT policy is confident on most tokens).
    // Both engines accumulate in float32 (the CPU engine's SIMD kernels), so the f32 floor is float32 rounding
    // in two summation orders: an order of magnitude above it is the bar (measured 45x on the probs mean).
    const floor = (k: string) => Math.max(...f32.metrics.map((m) => Math.abs(m.data[k])));
    for (const m of int8.metrics) {
      const d = m.data;
      expect(d['lab/rollout_logprob_diff/max']).toBeGreaterThan(1e-2);
      for (const k of [
        'lab/rollout_logprob_diff/mean',
        'lab/rollout_logprob_diff/max',
        'training/rollout_probs_diff_mean',
        'training/rollout_probs_diff_max',
        'rollout_corr/kl',
        'rollout_corr/log_ppl_abs_diff',
      ])
        expect(Math.abs(d[k]), k).toBeGreaterThan(10 * floor(k));
      // no correction was asked for: only diagnostics, no IS weights
      expect(d).not.toHaveProperty('rollout_corr/rollout_is_mean');
    }
    // the kept traces carry both sides per token, and the step's |Δ log-prob| metrics are theirs
    const { engine, trainer } = pairs(int8.traces[0]);
    let max = 0;
    for (let i = 0; i < engine.length; i++) max = Math.max(max, Math.abs(engine[i] - trainer[i]));
    expect(max).toBeCloseTo(int8.metrics[0].data['lab/rollout_logprob_diff/max'], 6);
  });

  it("with rollout_is: token, the weights our engine receives are the loss's weights times core's truncated IS weights", {
    timeout: 120_000,
  }, async () => {
    // threshold 1: every token whose ratio exceeds 1 is truncated, the rest keep ratio < 1 (both cases occur)
    const correction = { rollout_is_threshold: 1.0 };
    const withIs = await train({
      lab: { rollout_precision: 'int8' },
      algorithm: { rollout_correction: { ...correction, rollout_is: 'token' } },
    });
    const without = await train({
      lab: { rollout_precision: 'int8' },
      algorithm: { rollout_correction: { ...correction, rollout_is: null } },
    });
    // the same rollouts (same seeds and weights): the correction is the only difference
    expect(pairs(withIs.traces[0])).toEqual(pairs(without.traces[0]));
    expect(withIs.metrics[0].data['rollout_corr/rollout_is_mean']).toBeLessThan(1);
    // one mini-batch: every micro-batch is computed from the same weights in both runs
    expect(withIs.policy.seen.length).toBe(without.policy.seen.length);
    const calls = withIs.traces[0].flatMap((r) => r.calls);
    let checked = 0;
    let truncated = 0;
    withIs.policy.seen.forEach(({ batch, weights }, k) => {
      const other = without.policy.seen[k];
      expect(other.batch.tokens).toEqual(batch.tokens);
      const T = batch.seqLen;
      for (let b = 0; b < batch.batchSize; b++) {
        const row = batch.tokens.subarray(b * T, (b + 1) * T);
        const m = batch.mask.subarray(b * T, (b + 1) * T);
        const p = m.indexOf(1);
        // the call this row is (instruction-short: one call per rollout, one row per call)
        const call = calls.find(
          (c) =>
            c.promptTokenIds?.length === p &&
            c.promptTokenIds.every((id, i) => id === row[i]) &&
            (c.responseTokenIds as Int32Array).every((id, j) => id === row[p + j]),
        );
        if (!call) throw new Error(`row ${b} of micro-batch ${k}: no call of the trace has its tokens`);
        const ids = call.responseTokenIds as Int32Array;
        const trainerLp = call.trainerLogProbs as Float32Array;
        const engineLp = call.responseLogProbs as Float32Array;
        const n = ids.length;
        // core's truncated IS weights of these tokens: min(exp(old − rollout), threshold)
        const w = computeRolloutCorrection(
          { nRows: 1, offsets: Int32Array.of(0, n), mask: new Uint8Array(n).fill(1) },
          trainerLp,
          engineLp,
          { rolloutIs: 'token', rolloutIsThreshold: 1.0 },
        ).rolloutIsWeights as Float32Array;
        for (let j = 0; j < n; j++) {
          const plain = other.weights[b * T + p + j];
          const corrected = weights[b * T + p + j];
          if (plain === 0) {
            expect(corrected).toBe(0);
            continue;
          }
          expect(corrected / plain).toBeCloseTo(w[j], 5);
          checked++;
          const ratio = Math.exp(trainerLp[j] - engineLp[j]);
          if (ratio > 1) {
            expect(w[j]).toBe(1);
            truncated++;
          } else expect(w[j]).toBeLessThanOrEqual(1);
        }
      }
    });
    expect(checked).toBeGreaterThan(50);
    expect(truncated).toBeGreaterThan(0);
    expect(truncated).toBeLessThan(checked);
  });
});
