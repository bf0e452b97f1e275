import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuContext } from '../../src/engine/gpu/device';
import type { Batch } from '../../src/engine/model';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { GpuPolicy } from '../../src/engine/policy/gpuPolicy';
import { context, maxAbsDiff } from './gpuContext';

// The WebGPU policy against the CPU reference policy: same init, same batch, same steps.
const cfg = { vocabSize: 64, contextLength: 16, layers: 2, width: 32, heads: 4, seed: 7 };

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await context();
});
afterAll(() => ctx?.destroy());

function batch(): { batch: Batch; weights: Float32Array } {
  const B = 3;
  const T = 12;
  const lengths = [12, 9, 5];
  const tokens = new Uint32Array(B * T);
  const mask = new Float32Array(B * T);
  const weights = new Float32Array(B * T);
  for (let b = 0; b < B; b++)
    for (let t = 0; t < lengths[b]; t++) {
      tokens[b * T + t] = (b * 17 + t * 5 + ((t * t) % 7)) % cfg.vocabSize;
      mask[b * T + t] = 1;
      // Signed, position-dependent weights, as a trainer's effective weights are (advantage × normalizer).
      if (t > 0) weights[b * T + t] = (b === 1 ? -0.5 : 1) / (1 + t);
    }
  return { batch: { tokens, mask, batchSize: B, seqLen: T }, weights };
}

describe('WebGPU policy vs CPU policy (Chromium WebGPU)', () => {
  it('log-probs and entropies of a padded batch match', async () => {
    const { batch: b } = batch();
    const gpu = GpuPolicy.create(ctx, cfg);
    const ref = await new CpuPolicy(cfg).logProbs(b);
    const got = await gpu.logProbs(b);
    expect(maxAbsDiff(got.logProbs, ref.logProbs)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(got.entropy, ref.entropy)).toBeLessThanOrEqual(1e-5);
    // masked positions are exactly zero
    expect(Object.is(got.logProbs[2 * 12 + 7], 0)).toBe(true);
    gpu.dispose();
  });

  it('a full training step (forward, weighted backward, AdamW) matches the CPU step', async () => {
    const { batch: b, weights } = batch();
    const opt = { lr: 1e-3, maxGradNorm: 0.5 };
    const gpu = GpuPolicy.create(ctx, cfg, opt);
    const cpu = new CpuPolicy(cfg, opt);
    cpu.computeGrads(b, weights);
    const grads = await gpu.computeGrads(b, weights);
    let scale = 0;
    for (const g of cpu.grads) scale = Math.max(scale, Math.abs(g));
    expect(scale).toBeGreaterThan(1e-3);
    expect(maxAbsDiff(grads, cpu.grads)).toBeLessThanOrEqual(1e-5 * Math.max(1, scale));
    for (let s = 0; s < 2; s++) {
      const r = await cpu.trainStep(b, weights);
      const g = await gpu.trainStep(b, weights);
      expect(Math.abs(g.loss - r.loss)).toBeLessThanOrEqual(1e-5);
      expect(Math.abs(g.gradNorm - r.gradNorm)).toBeLessThanOrEqual(1e-5 * r.gradNorm);
      expect(g.step).toBe(r.step);
    }
    // Adam's update m̂/(√v̂+eps) is scale-free, so an element whose gradient is at rounding level can move by a
    // visible fraction of lr on one side and not the other: bound the parameter difference relative to lr.
    expect(maxAbsDiff(await gpu.getParams(), cpu.params)).toBeLessThanOrEqual(5e-3 * opt.lr * 2);
    gpu.dispose();
  });

  it('accumulated micro-batches with log-prob-dependent weights, then one update, match the CPU engine', async () => {
    const { batch: b } = batch();
    const opt = { lr: 1e-3 };
    const gpu = GpuPolicy.create(ctx, cfg, opt);
    const cpu = new CpuPolicy(cfg, opt);
    const T = b.seqLen;
    const row = (r: number) => ({
      tokens: b.tokens.slice(r * T, (r + 1) * T),
      mask: b.mask.slice(r * T, (r + 1) * T),
      batchSize: 1,
      seqLen: T,
    });
    const fn = (lp: { logProbs: Float32Array }) =>
      Float32Array.from(lp.logProbs, (x, i) => (i ? 0.2 * x : 0));
    for (const e of [gpu, cpu]) for (const r of [0, 1, 2]) await e.accumulateGrads(row(r), fn);
    const sg = await gpu.optimizerStep();
    const sc = await cpu.optimizerStep();
    expect(sg.skipped).toBe(false);
    expect(Math.abs(sg.gradNorm - sc.gradNorm)).toBeLessThanOrEqual(1e-5 * sc.gradNorm);
    expect(maxAbsDiff(await gpu.getParams(), cpu.params)).toBeLessThanOrEqual(5e-3 * opt.lr * 2);
    const state = await gpu.getOptimizerState();
    expect(state.step).toBe(1);
    expect(maxAbsDiff(state.m, cpu.m)).toBeLessThanOrEqual(1e-6);
    // restoring the state into a fresh engine gives the same next step
    const copy = GpuPolicy.create(ctx, cfg, opt, await gpu.getParams());
    await copy.setOptimizerState(state);
    const { weights } = batch();
    const n1 = await gpu.trainStep(b, weights);
    const n2 = await copy.trainStep(b, weights);
    expect(n2.step).toBe(n1.step);
    expect(maxAbsDiff(await copy.getParams(), await gpu.getParams())).toBe(0);
    gpu.dispose();
    copy.dispose();
  });

  it('a tiny policy overfits a fixed batch', async () => {
    const { batch: b } = batch();
    const gpu = GpuPolicy.create(ctx, cfg, { lr: 1e-2, weightDecay: 0 });
    let count = 0;
    for (let i = 0; i < b.mask.length; i++) if (b.mask[i] && i % b.seqLen > 0) count++;
    const w = Float32Array.from(b.mask, (m, i) => (m && i % b.seqLen > 0 ? 1 / count : 0));
    const first = await gpu.trainStep(b, w);
    let last = first;
    for (let s = 0; s < 14; s++) last = await gpu.trainStep(b, w);
    // Mean NLL starts near ln(64) ≈ 4.16 and the batch is memorisable: after 15 steps at lr 1e-2 it is ≈ 0.7.
    expect(first.loss).toBeGreaterThan(3.5);
    expect(last.loss).toBeLessThan(0.3 * first.loss);
    gpu.dispose();
  });

  it('sampling with a fixed seed is reproducible and agrees with the CPU engine and with logProbs()', async () => {
    const gpu = GpuPolicy.create(ctx, cfg);
    const cpu = new CpuPolicy(cfg);
    const req = { promptIds: [3, 9, 27], temperature: 0.9, topP: 0.95, maxTokens: 8, seed: 42 };
    const a = await gpu.sample(req);
    const again = await gpu.sample(req);
    expect(again).toEqual(a);
    expect(a.tokenIds.length).toBe(8);
    expect(a.finishReason).toBe('length');
    const ref = await cpu.sample(req);
    expect(a.tokenIds).toEqual(ref.tokenIds);
    expect(maxAbsDiff(a.logProbs, ref.logProbs)).toBeLessThanOrEqual(1e-5);
    // The sampler's log-probs are the model's log-probs of those tokens at that temperature.
    const seq = [...req.promptIds, ...a.tokenIds];
    const T = seq.length;
    const lp = await gpu.logProbs({
      tokens: Uint32Array.from(seq),
      mask: new Float32Array(T).fill(1),
      batchSize: 1,
      seqLen: T,
      temperature: req.temperature,
    });
    expect(maxAbsDiff(lp.logProbs.slice(3), a.logProbs)).toBeLessThanOrEqual(1e-5);
    // A prompt that fills most of the context: batched prefill rounds T up to the context length.
    const longReq = {
      ...req,
      promptIds: Array.from({ length: 13 }, (_, i) => (i * 5 + 1) % 64),
      maxTokens: 10,
    };
    const longGpu = await gpu.sample(longReq);
    const longCpu = await cpu.sample(longReq);
    expect(longGpu.tokenIds).toEqual(longCpu.tokenIds);
    expect(longGpu.tokenIds.length).toBe(4); // positions 13, 14, 15 fed back, a 4th token picked at the end
    expect(maxAbsDiff(longGpu.logProbs, longCpu.logProbs)).toBeLessThanOrEqual(1e-5);
    // Concurrent calls (the proxy may issue several) are serialised and give the sequential results.
    const [c1, c2] = await Promise.all([gpu.sample(req), gpu.sample(longReq)]);
    expect(c1).toEqual(a);
    expect(c2).toEqual(longGpu);
    const other = await gpu.sample({ ...req, seed: 43 });
    expect(other.tokenIds).not.toEqual(a.tokenIds);
    const stopped = await gpu.sample({ ...req, stopIds: [a.tokenIds[2]] });
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.tokenIds.length).toBeLessThanOrEqual(3);
    gpu.dispose();
  });
});

describe('policy engine factory and browser checkpoints', () => {
  it('picks WebGPU where an adapter exists and the CPU when asked', async () => {
    const { createPolicyEngine } = await import('../../src/engine/policy');
    const gpu = await createPolicyEngine({ config: cfg, context: ctx });
    expect(gpu.engine.backend).toBe('webgpu');
    const cpu = await createPolicyEngine({ config: cfg, backend: 'cpu' });
    expect(cpu.engine.backend).toBe('cpu');
    gpu.engine.dispose();
  });

  it('saves and loads a safetensors checkpoint in the origin-private file system', async () => {
    const { encodeCheckpoint, loadCheckpointBrowser, saveCheckpointBrowser, listCheckpointsBrowser } =
      await import('../../src/engine/checkpoint');
    const gpu = GpuPolicy.create(ctx, cfg);
    const params = await gpu.getParams();
    await saveCheckpointBrowser('test-policy', encodeCheckpoint(gpu.config, params, { note: 'browser' }));
    expect(await listCheckpointsBrowser()).toContain('test-policy');
    const back = await loadCheckpointBrowser('test-policy');
    expect(back.params).toEqual(params);
    expect(back.metadata.note).toBe('browser');
    await expect(loadCheckpointBrowser('absent')).rejects.toThrow("no checkpoint named 'absent'");
    const restored = GpuPolicy.create(ctx, back.config, {}, back.params);
    const { batch: b } = batch();
    expect(maxAbsDiff((await restored.logProbs(b)).logProbs, (await gpu.logProbs(b)).logProbs)).toBe(0);
    gpu.dispose();
    restored.dispose();
  });
});
