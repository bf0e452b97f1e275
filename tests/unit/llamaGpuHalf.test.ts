import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { command as train } from '../../src/cli/commands/train';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import { baseBytes, roundToDtype, unpackHalves } from '../../src/engine/cpu/half';
import type { GpuContext } from '../../src/engine/gpu/device';
import { KERNEL_CASES, maxAbsError } from '../../src/engine/kernelCases';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { readAdapter } from '../../src/engine/llama/peftAdapter';
import type { Batch } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';
import { parseFileLogger } from '../../src/train/verlLog';

// A LoRA run's frozen base stored as packed f16 / bf16 halves on the WebGPU Llama engine (Dawn in Node;
// SwiftShader without a GPU driver): exact to the rounding (the CPU engine on the same rounded weights), half
// the weight memory, and a folder stored in that dtype held bit for bit. No adapter is a failure, never a skip.

const models = resolve(__dirname, '../models');

async function load(name: string) {
  const folder = await readLlamaFolder(await nodeFolderReader(join(models, name)));
  const adapter = await readAdapter(await nodeFolderReader(join(models, 'lora', name)), folder.config);
  const ref = JSON.parse(readFileSync(join(models, 'lora', name, 'reference.json'), 'utf8'));
  const batch: Batch = {
    tokens: Uint32Array.from(ref.batch.ids.flat()),
    mask: Float32Array.from(ref.batch.mask.flat()),
    batchSize: ref.batch.ids.length,
    seqLen: ref.batch.ids[0].length,
  };
  const weights = Float32Array.from(ref.batch.weights.flat() as number[]);
  return { folder, lora: { config: adapter.config, params: adapter.params }, batch, weights };
}

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  return maxAbsError(a, b);
};
const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await nodeGpuContext();
}, 120_000);
afterAll(() => ctx?.destroy());

describe('packed f16 / bf16 base weights on the Llama-family WebGPU engine (Dawn)', () => {
  it("the packed-weight kernel variants match the kernel-case table's CPU reference on the rounded values", async () => {
    const cases = KERNEL_CASES.filter((c) => c.name.includes('packed'));
    // matmul nt / nn (decode row and tiled), embedding gather and the fused head, each in f16 and bf16
    expect(cases.length).toBe(12);
    for (const c of cases)
      for (const cmp of await c.run(ctx))
        expect(maxAbsError(cmp.got, cmp.want), `${c.name}: ${cmp.name}`).toBeLessThanOrEqual(cmp.tolerance);
  });

  // Measured on tests/models/llama with its PEFT adapter (Dawn / SwiftShader): max |Δ log-prob| between the
  // packed base and the CPU engine on the same rounded weights 4.3e-6 (f16) and 2.9e-6 (bf16); between the
  // packed base and the f32 base 1.1e-2 (f16) and 4.4e-2 (bf16): the rounding, not the kernels, moves them.
  for (const dtype of ['f16', 'bf16'] as const)
    it(`${dtype}: log-probs and LoRA gradients equal the CPU engine on the ${dtype}-rounded base; half the bytes`, async () => {
      const { folder, lora, batch, weights } = await load('llama');
      const { total } = folder.layout;
      const gpu = new LlamaGpuPolicy(ctx, folder.config, folder.params, {}, { lora, baseDtype: dtype });
      const exact = new LlamaGpuPolicy(ctx, folder.config, folder.params, {}, { lora });
      const cpu = new LlamaCpuPolicy(folder.config, roundToDtype(folder.params, dtype), {}, { lora });
      // memory: two halves per word; the norm weights (no biases in llama) stay f32 beside it
      expect(gpu.shards).toHaveLength(1);
      expect(gpu.shards[0].size).toBe(baseBytes(total, dtype));
      expect(gpu.shards[0].size).toBe(Math.ceil(total / 2) * 4);
      expect(exact.shards[0].size).toBe(total * 4);
      const vectors = folder.layout.tensors
        .filter((t) => t.shape.length === 1)
        .reduce((n, t) => n + t.size, 0);
      expect(gpu.vectors.size).toBe(vectors * 4);
      expect(vectors).toBeLessThan(total / 50);

      const got = (await gpu.logProbs(batch)).logProbs;
      const want = (await cpu.logProbs(batch)).logProbs;
      const f32 = (await exact.logProbs(batch)).logProbs;
      const toRounded = maxAbs(got, want);
      const toF32 = maxAbs(got, f32);
      expect(toRounded).toBeLessThan(1e-4);
      // the rounding moves the log-probs well beyond the kernels' f32 error, so the comparison above bites
      expect(toF32).toBeGreaterThan(10 * toRounded);
      expect(toF32).toBeGreaterThan(1e-5);
      console.log(
        `${dtype} base: max |Δ logp| vs CPU on rounded ${toRounded.toExponential(2)}, vs f32 base ${toF32.toExponential(2)}`,
      );
      // the frozen base with the adapter off (the KL reference) reads the same packed weights
      const base = (await gpu.referenceLogProbs(batch)).logProbs;
      expect(maxAbs(base, (await cpu.referencePolicy().logProbs(batch)).logProbs)).toBeLessThan(1e-4);

      const g = await gpu.computeGrads(batch, weights);
      cpu.computeGrads(batch, weights);
      const gw = cpu.grads;
      expect(g.length).toBe(lora.params.length);
      expect(norm(gw)).toBeGreaterThan(0);
      const diff = Float32Array.from(g, (x, i) => x - gw[i]);
      expect(norm(diff) / norm(gw)).toBeLessThan(1e-4);
      // merged weights unpack the base: the CPU engine's merge of the rounded base
      expect(maxAbs(await gpu.mergedParams(), await cpu.mergedParams())).toBe(0);
      for (const p of [gpu, exact]) p.dispose();
    });

  it('a folder stored in f16 / bf16 is held exactly; a 16-bit base without LoRA is refused', async () => {
    for (const [name, dtype] of [
      ['qwen3-f16', 'f16'],
      ['qwen3-bf16', 'bf16'],
    ] as const) {
      const folder = await readLlamaFolder(await nodeFolderReader(join(models, name)));
      const lora = { config: { r: 2, alpha: 4, targetModules: ['q_proj' as const] }, seed: 1 };
      const gpu = new LlamaGpuPolicy(ctx, folder.config, folder.params, {}, { lora, baseDtype: dtype });
      const words = new Uint32Array(
        (await ctx.readF32(gpu.shards[0], Math.ceil(folder.layout.total / 2))).buffer,
      );
      const held = unpackHalves(words, folder.layout.total, dtype);
      expect(Buffer.from(held.buffer).equals(Buffer.from(folder.params.buffer))).toBe(true);
      gpu.dispose();
    }
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'llama')));
    expect(() => new LlamaGpuPolicy(ctx, folder.config, folder.params, {}, { baseDtype: 'f16' })).toThrow(
      /f16 base needs LoRA/,
    );
  });
});

describe('lab train --model DIR --backend webgpu --lora-base-dtype', () => {
  const dir = mkdtempSync(join(tmpdir(), 'train-llama-half-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const args = [
    ...['--harness', 'instruction-short', '--model', join(models, 'llama'), '--backend', 'webgpu'],
    ...['--train-batch-size', '2', '--rollout-n', '2', '--ppo-mini-batch-size', '2'],
    ...[
      '--max-response-length',
      '4',
      '--max-prompt-length',
      '100',
      '--max-model-len',
      '128',
      '--workers',
      '1',
    ],
    ...['--train-tasks', '8', '--val-tasks', '2', '--test-freq', '0', '--save-freq', '0', '--use-kl-loss'],
  ];

  it('refuses a 16-bit base without LoRA, naming the flag', async () => {
    await expect(
      train.run([...args, '--lora-base-dtype', 'f16', '--out', join(dir, 'full')]),
    ).rejects.toThrow('--lora-base-dtype: a f16 base needs LoRA');
  });

  it('one LoRA step on a bf16 base on Dawn: finite metrics, the run names the base', async () => {
    const out = join(dir, 'bf16');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    let rc: number;
    let lines: string[];
    try {
      rc = await train.run([
        ...args,
        ...['--lora-rank', '4', '--lora-alpha', '8', '--lora-base-dtype', 'bf16'],
        ...['--total-training-steps', '1', '--out', out],
      ]);
      lines = log.mock.calls.map((c) => String(c[0]));
    } finally {
      log.mockRestore();
    }
    expect(rc).toBe(0);
    expect(lines.find((l) => l.startsWith('train: '))).toMatch(/webgpu backend/);
    expect(lines.find((l) => l.startsWith('train: '))).toMatch(/bf16 base/);
    const [step] = parseFileLogger(readFileSync(join(out, 'metrics.jsonl'), 'utf8'));
    for (const k of ['actor/pg_loss', 'actor/grad_norm', 'actor/kl_loss', 'actor/entropy'])
      expect(Number.isFinite(step.data[k]), k).toBe(true);
    expect(step.data['actor/kl_loss']).toBe(0);
  }, 600_000);
});
