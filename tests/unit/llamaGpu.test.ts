import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import type { GpuContext } from '../../src/engine/gpu/device';
import { type LlamaFolder, readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { llamaForwardCpu, llamaLayout } from '../../src/engine/llama/model';
import type { Batch } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { createPolicyEngine } from '../../src/engine/policy';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';

// The WebGPU Llama-family engine on Dawn (Node) against transformers' references and the CPU engine.
// Without a GPU driver Dawn runs on Chromium's SwiftShader Vulkan driver (the node project's env in
// vite.config.ts points Vulkan at it). No adapter is a failure, never a skip.

const models = resolve(__dirname, '../models');
const FOLDERS = ['llama', 'llama-linear-bf16', 'qwen2', 'qwen3'];

interface Reference {
  model_type: string;
  sequences: { ids: number[]; logprobs: number[]; entropy: number[] }[];
  left_padded: { ids: number[][]; mask: number[][]; logprobs: number[][]; entropy: number[][] };
}

const reference = (name: string): Reference =>
  JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));

const folders = new Map<string, LlamaFolder>();
async function folder(name: string): Promise<LlamaFolder> {
  let f = folders.get(name);
  if (!f) {
    f = await readLlamaFolder(await nodeFolderReader(join(models, name)));
    folders.set(name, f);
  }
  return f;
}

const row = (ids: number[]): Batch => ({
  tokens: Uint32Array.from(ids),
  mask: new Float32Array(ids.length).fill(1),
  batchSize: 1,
  seqLen: ids.length,
});

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    m = Number.isNaN(d) ? Number.POSITIVE_INFINITY : Math.max(m, d);
  }
  return m;
};

/** A right-padded batch of the reference sequences with signed, position-dependent weights. */
function padded(ref: Reference): { batch: Batch; weights: Float32Array } {
  const B = ref.sequences.length;
  const T = Math.max(...ref.sequences.map((s) => s.ids.length));
  const tokens = new Uint32Array(B * T);
  const mask = new Float32Array(B * T);
  const weights = new Float32Array(B * T);
  ref.sequences.forEach((s, b) => {
    s.ids.forEach((id, t) => {
      tokens[b * T + t] = id;
      mask[b * T + t] = 1;
      if (t > 0) weights[b * T + t] = (b === 1 ? -0.5 : 1) / (1 + t);
    });
  });
  return { batch: { tokens, mask, batchSize: B, seqLen: T }, weights };
}

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await nodeGpuContext();
}, 120_000);
afterAll(() => ctx?.destroy());

describe('Llama-family WebGPU engine on Dawn vs transformers 4.57.3 and the CPU engine', () => {
  for (const name of FOLDERS) {
    describe(name, () => {
      const ref = reference(name);

      it('log-probs and entropies of each sequence and of a left-padded batch match transformers to 1e-4', async () => {
        const f = await folder(name);
        expect(f.config.modelType).toBe(ref.model_type);
        const gpu = new LlamaGpuPolicy(ctx, f.config, f.params);
        for (const s of ref.sequences) {
          const r = await gpu.logProbs(row(s.ids));
          expect(maxAbs(r.logProbs, s.logprobs)).toBeLessThan(1e-4);
          expect(maxAbs(r.entropy, s.entropy)).toBeLessThan(1e-4);
        }
        const lp = ref.left_padded;
        const B = lp.ids.length;
        const T = lp.ids[0].length;
        const r = await gpu.logProbs({
          tokens: Uint32Array.from(lp.ids.flat()),
          mask: Float32Array.from(lp.mask.flat()),
          batchSize: B,
          seqLen: T,
        });
        expect(maxAbs(r.logProbs, lp.logprobs.flat())).toBeLessThan(1e-4);
        expect(maxAbs(r.entropy, lp.entropy.flat())).toBeLessThan(1e-4);
        gpu.dispose();
      });

      it('the gradient of a weighted, right-padded batch and two AdamW steps match the CPU engine', async () => {
        const f = await folder(name);
        const { batch, weights } = padded(ref);
        const opt = { lr: 1e-3, maxGradNorm: 0.5 };
        const gpu = new LlamaGpuPolicy(ctx, f.config, f.params, opt);
        const cpu = new LlamaCpuPolicy(f.config, f.params, opt, { kernels: 'reference' });
        cpu.computeGrads(batch, weights);
        const grads = await gpu.computeGrads(batch, weights);
        let scale = 0;
        for (const g of cpu.grads) scale = Math.max(scale, Math.abs(g));
        expect(scale).toBeGreaterThan(1e-3);
        expect(maxAbs(grads, cpu.grads)).toBeLessThanOrEqual(1e-4 * Math.max(1, scale));
        for (let s = 0; s < 2; s++) {
          const c = await cpu.trainStep(batch, weights);
          const g = await gpu.trainStep(batch, weights);
          expect(g.step).toBe(c.step);
          expect(Math.abs(g.gradNorm - c.gradNorm)).toBeLessThan(1e-4 * c.gradNorm);
          expect(Math.abs(g.loss - c.loss)).toBeLessThan(1e-4 * Math.max(1, Math.abs(c.loss)));
        }
        // k_proj's bias shifts every score of a query equally, so softmax makes its gradient zero in exact
        // arithmetic: Adam normalises rounding noise there, bounded only by lr per step. Everything else to 1e-5.
        const after = await gpu.getParams();
        const kBias = f.layout.tensors.filter((t) => t.name.endsWith('k_proj.bias'));
        const isKBias = (i: number) => kBias.some((t) => i >= t.offset && i < t.offset + t.size);
        let rest = 0;
        let bias = 0;
        for (let i = 0; i < after.length; i++) {
          const d = Math.abs(after[i] - cpu.params[i]);
          if (isKBias(i)) bias = Math.max(bias, d);
          else rest = Math.max(rest, d);
        }
        expect(rest).toBeLessThan(1e-5);
        expect(bias).toBeLessThanOrEqual(2 * 2 * opt.lr);
        // the parameters moved, so the comparison above is not of two untouched copies
        expect(maxAbs(cpu.params, f.params)).toBeGreaterThan(1e-4);
        gpu.dispose();
      });

      it('sampling through the KV cache gives the CPU engine’s tokens and log-probs (greedy and at T = 0.8)', async () => {
        const f = await folder(name);
        const gpu = new LlamaGpuPolicy(ctx, f.config, f.params);
        const cpu = new LlamaCpuPolicy(f.config, f.params);
        const promptIds = ref.sequences[1].ids;
        for (const temperature of [0, 0.8]) {
          const req = { promptIds, temperature, topP: 1, maxTokens: 12, seed: 5, topK: 5 };
          const c = await cpu.sample(req);
          const g = await gpu.sample(req);
          expect(g.tokenIds).toEqual(c.tokenIds);
          expect(g.finishReason).toBe(c.finishReason);
          expect(maxAbs(g.logProbs, c.logProbs)).toBeLessThan(1e-4);
          // each position's recorded top-5 alternatives agree too
          expect(g.topK).toHaveLength(c.tokenIds.length);
          g.topK!.forEach((a, i) => {
            expect(a.ids).toEqual(c.topK![i].ids);
            expect(maxAbs(a.logProbs, c.topK![i].logProbs)).toBeLessThan(1e-4);
          });
        }
        // the sampled continuation's log-probs agree with a full forward over prompt + continuation
        const req = { promptIds, temperature: 0, topP: 1, maxTokens: 12, seed: 1 };
        const s = await gpu.sample(req);
        const all = [...promptIds, ...s.tokenIds];
        const full = await gpu.logProbs(row(all));
        expect(maxAbs(full.logProbs.subarray(promptIds.length), s.logProbs)).toBeLessThan(1e-4);
        gpu.dispose();
      });
    });
  }

  it('the temperature scales the logits in the log-probs and their gradient', async () => {
    const f = await folder('qwen3');
    const { batch, weights } = padded(reference('qwen3'));
    const hot = { ...batch, temperature: 0.7 };
    const gpu = new LlamaGpuPolicy(ctx, f.config, f.params);
    const cpu = new LlamaCpuPolicy(f.config, f.params, {}, { kernels: 'reference' });
    const a = await gpu.logProbs(batch);
    const b = await gpu.logProbs(hot);
    expect(maxAbs(a.logProbs, b.logProbs)).toBeGreaterThan(1e-3);
    expect(maxAbs(b.logProbs, (await cpu.logProbs(hot)).logProbs)).toBeLessThan(1e-4);
    cpu.computeGrads(hot, weights);
    expect(maxAbs(await gpu.computeGrads(hot, weights), cpu.grads)).toBeLessThan(1e-4);
    gpu.dispose();
  });

  it('the residual stream after the embedding and after each layer equals the CPU engine’s', async () => {
    const f = await folder('qwen2');
    const { batch } = padded(reference('qwen2'));
    const gpu = new LlamaGpuPolicy(ctx, f.config, f.params);
    const res = await gpu.residuals(batch);
    const cpu = llamaForwardCpu(f.config, llamaLayout(f.config), f.params, batch);
    const want = [...cpu.layers.map((a) => a.x), cpu.xOut];
    expect(res).toHaveLength(f.config.layers + 1);
    res.forEach((r, l) => {
      const scale = Math.max(...want[l].map(Math.abs));
      expect(maxAbs(r, want[l])).toBeLessThan(1e-5 * scale);
    });
    // the layers change the stream, so equal arrays are not one buffer read twice
    expect(maxAbs(res[0], res[f.config.layers])).toBeGreaterThan(1e-3);
    gpu.dispose();
  });

  it('createPolicyEngine picks the engine by the folder’s architecture and the backend', async () => {
    const f = await folder('qwen2');
    const onGpu = await createPolicyEngine({ llama: f, context: ctx });
    expect(onGpu.engine).toBeInstanceOf(LlamaGpuPolicy);
    expect(onGpu.engine.backend).toBe('webgpu');
    const onCpu = await createPolicyEngine({ llama: f, backend: 'cpu' });
    expect(onCpu.engine).toBeInstanceOf(LlamaCpuPolicy);
    const ids = reference('qwen2').sequences[0].ids;
    const d = maxAbs(
      (await onGpu.engine.logProbs(row(ids))).logProbs,
      (await onCpu.engine.logProbs(row(ids))).logProbs,
    );
    expect(d).toBeLessThan(1e-4);
    await expect(createPolicyEngine({ llama: f, config: { layers: 3 } })).rejects.toThrow(/config/);
    onGpu.engine.dispose();
    // what the kernels or the adapter cannot hold falls back to the CPU engine, saying why
    const wide = { ...f.config, headDim: 258 };
    const params = new Float32Array(llamaLayout(wide).total);
    const fallback = await createPolicyEngine({ llama: { config: wide, params }, context: ctx });
    expect(fallback.engine).toBeInstanceOf(LlamaCpuPolicy);
    expect(fallback.fallbackReason).toMatch(/head_dim 258 exceeds/);
    await expect(
      createPolicyEngine({ llama: { config: wide, params }, context: ctx, backend: 'webgpu' }),
    ).rejects.toThrow(/head_dim 258/);
    const huge = { ...f.config, vocabSize: 2 ** 28 };
    expect(LlamaGpuPolicy.unfit(ctx, huge)).toMatch(/exceeds this adapter's largest storage binding/);
  });
});
