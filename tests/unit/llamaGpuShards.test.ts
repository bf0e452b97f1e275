import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import type { BaseDtype } from '../../src/engine/cpu/half';
import { GpuContext } from '../../src/engine/gpu/device';
import { headChunk } from '../../src/engine/gpu/kernels';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { planWeightShards, SHARD_HEADROOM, trainStepFit } from '../../src/engine/llama/memoryFit';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';

// The WebGPU Llama engine under an adapter whose largest binding is smaller than the model: the frozen base split
// into several weight buffers (each tensor whole in one), giving the numbers of the one-buffer engine (the fused
// head walked in several vocabulary chunks is the kernel-case table's row). The small limit is a second context on Dawn's device that reports
// it (Dawn / SwiftShader in Node; no adapter is a failure, never a skip).

const models = resolve(__dirname, '../models');
let ctx: GpuContext;
beforeAll(async () => {
  ctx = await nodeGpuContext();
}, 120_000);
afterAll(() => ctx?.destroy());

/** The same device, reporting `bytes` as both of its buffer limits. */
function limited(bytes: number): GpuContext {
  const limits = { ...ctx.status.limits, maxStorageBufferBindingSize: bytes, maxBufferSize: bytes };
  return new GpuContext(ctx.device, { ...ctx.status, limits });
}

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

describe('weights in several buffers when one binding cannot hold them (Dawn)', () => {
  it('plans shards of whole tensors under the limit, names a tensor that cannot fit', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const { layout } = folder;
    for (const dtype of ['f32', 'bf16'] as BaseDtype[]) {
      const per = dtype === 'f32' ? 4 : 2;
      const largest = Math.max(...layout.tensors.map((t) => t.size));
      const limit = 4 * Math.ceil(((largest + 1) * per) / 4) + SHARD_HEADROOM;
      const shards = planWeightShards(layout, dtype, limit);
      expect(shards.length).toBeGreaterThan(1);
      expect(shards[0].start).toBe(0);
      expect(shards[shards.length - 1].end).toBe(layout.total);
      for (const s of shards) {
        expect(s.start % 2).toBe(0);
        expect(Math.ceil(((s.end - s.start) * per) / 4) * 4).toBeLessThanOrEqual(limit - SHARD_HEADROOM);
      }
      for (const t of layout.tensors)
        expect(
          shards.some((s) => t.offset >= s.start && t.offset + t.size <= s.end),
          t.name,
        ).toBe(true);
      expect(planWeightShards(layout, dtype, 4 * layout.total + SHARD_HEADROOM)).toEqual([
        { start: 0, end: layout.total },
      ]);
      expect(() => planWeightShards(layout, dtype, limit - 8)).toThrow(
        /^tensor \S+ \(.* exceeds this adapter/,
      );
    }
    expect(headChunk(64, 151936, 2 ** 30)).toBe(4096);
    expect(headChunk(64, 100, 2 ** 30)).toBe(100);
    expect(headChunk(64, 151936, 64 * 4 * 10)).toBe(10);
    expect(() => headChunk(64, 100, 16)).toThrow(/do not fit/);
  });

  it('a sharded base gives the one-buffer log-probs and LoRA gradients', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const { config, layout, params } = folder;
    const lora = { config: { r: 4, alpha: 8, targetModules: ['q_proj', 'down_proj'] as const }, seed: 3 };
    const B = 2;
    const T = 7;
    const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 31 + 5) % config.vocabSize);
    const mask = Float32Array.from({ length: B * T }, (_, i) => (i === T || i === T + 1 ? 0 : 1));
    const batch = { tokens, mask, batchSize: B, seqLen: T };
    const weights = Float32Array.from({ length: B * T }, (_, i) => (mask[i] ? ((i % 5) - 2) / 3 : 0));
    for (const dtype of ['f32', 'f16'] as BaseDtype[]) {
      const largest = Math.max(...layout.tensors.map((t) => t.size));
      const per = dtype === 'f32' ? 4 : 2;
      const small = limited(
        Math.max(4 * Math.ceil(((largest + 1) * per) / 4) + SHARD_HEADROOM, B * T * 4 * 7),
      );
      const opts = {
        lora: { ...lora, config: { ...lora.config, targetModules: [...lora.config.targetModules] } },
        baseDtype: dtype,
      };
      const one = new LlamaGpuPolicy(ctx, config, params, {}, opts);
      const split = new LlamaGpuPolicy(small, config, params, {}, opts);
      expect(one.shards).toHaveLength(1);
      expect(split.shards.length).toBeGreaterThan(1);
      const a = await one.logProbs(batch);
      const b = await split.logProbs(batch);
      expect(maxAbs(b.logProbs, a.logProbs)).toBeLessThan(1e-5);
      expect(maxAbs(b.entropy, a.entropy)).toBeLessThan(1e-5);
      const ga = await one.computeGrads(batch, weights);
      const gb = await split.computeGrads(batch, weights);
      const scale = Math.max(...Array.from(ga, Math.abs));
      expect(scale).toBeGreaterThan(0);
      expect(maxAbs(gb, ga) / scale).toBeLessThan(1e-4);
      expect(maxAbs(await split.mergedParams(), await one.mergedParams())).toBe(0);
      one.dispose();
      split.dispose();
    }
    const tiny = limited(4 * (Math.max(...layout.tensors.map((t) => t.size)) + 1) + SHARD_HEADROOM);
    // full fine-tuning updates one flat buffer: under a limit that splits the base the engine infers, and a
    // training call is refused saying why
    expect(LlamaGpuPolicy.unfit(tiny, config)).toBeNull();
    const full = new LlamaGpuPolicy(tiny, config, params);
    expect(full.shards.length).toBeGreaterThan(1);
    const lp = await full.logProbs(batch);
    expect(lp.logProbs.every(Number.isFinite)).toBe(true);
    await expect(full.computeGrads(batch, weights)).rejects.toThrow(/full fine-tuning updates the flat f32/);
    full.dispose();
  });

  it('the pre-start fit counts a LoRA base by its largest tensor, full fine-tuning by the flat buffer', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const { config, layout } = folder;
    const largest = Math.max(...layout.tensors.map((t) => t.size));
    const bytes = 4 * (largest + 1) + SHARD_HEADROOM;
    const limits = {
      kind: 'webgpu' as const,
      maxBufferSize: bytes,
      maxStorageBufferBindingSize: bytes,
      label: 'adapter',
    };
    const lora = { r: 2, alpha: 4, targetModules: ['q_proj' as const] };
    const shape = { rows: 1, tokens: 8 };
    expect(trainStepFit(config, lora, shape, limits).problems.map((p) => p.term)).not.toContain('weights');
    expect(trainStepFit(config, null, shape, limits).problems.map((p) => p.term)).toContain('weights');
    const under = { ...limits, maxBufferSize: bytes - 8, maxStorageBufferBindingSize: bytes - 8 };
    expect(trainStepFit(config, lora, shape, under).problems[0].message).toMatch(/largest f32 weight tensor/);
  });
});
