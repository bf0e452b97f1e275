import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { command as train } from '../../src/cli/commands/train';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import type { GpuContext } from '../../src/engine/gpu/device';
import { KERNEL_CASES, maxAbsError } from '../../src/engine/kernelCases';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { checkLoraConfig, LORA_TARGETS, loraInit, loraLayout } from '../../src/engine/llama/lora';
import { readAdapter } from '../../src/engine/llama/peftAdapter';
import { readSafetensors } from '../../src/engine/llama/safetensors';
import type { Batch } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import type { FolderReader } from '../../src/engine/onnx/hfFolder';
import { createPolicyEngine } from '../../src/engine/policy';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';
import { decodeTrainCheckpoint } from '../../src/train/checkpoint';
import { parseFileLogger } from '../../src/train/verlLog';

// LoRA on the WebGPU Llama-family engine (Dawn in Node; SwiftShader without a GPU driver, see vite.config.ts)
// against PyTorch + PEFT's references (tests/models/lora/, python/tiny_models/lora_refs.py) and the CPU engine.
// No adapter is a failure, never a skip.

const models = resolve(__dirname, '../models');
const ADAPTERS = ['llama', 'qwen2', 'qwen3'];

interface LoraReference {
  batch: { ids: number[][]; mask: number[][]; weights: number[][] };
  logprobs: number[][];
  logprobs_base: number[][];
  loss: number;
  grad_norm: number;
  adamw: { lr: number; betas: [number, number]; eps: number; weight_decay: number; max_grad_norm: number };
}

const reference = (name: string): LoraReference =>
  JSON.parse(readFileSync(join(models, 'lora', name, 'reference.json'), 'utf8'));
const tensors = (name: string, file: string) =>
  readSafetensors(new Uint8Array(readFileSync(join(models, 'lora', name, file))), file);

function batchOf(ref: LoraReference): { batch: Batch; weights: Float32Array } {
  return {
    batch: {
      tokens: Uint32Array.from(ref.batch.ids.flat()),
      mask: Float32Array.from(ref.batch.mask.flat()),
      batchSize: ref.batch.ids.length,
      seqLen: ref.batch.ids[0].length,
    },
    weights: Float32Array.from(ref.batch.weights.flat()),
  };
}

const optimizerOf = (ref: LoraReference) => ({
  lr: ref.adamw.lr,
  beta1: ref.adamw.betas[0],
  beta2: ref.adamw.betas[1],
  eps: ref.adamw.eps,
  weightDecay: ref.adamw.weight_decay,
  maxGradNorm: ref.adamw.max_grad_norm,
});

function memoryFolder(files: Record<string, Uint8Array | string>): FolderReader {
  const bytes = (p: string) => {
    const f = files[p];
    if (f === undefined) throw new Error(`no file ${p}`);
    return typeof f === 'string' ? new TextEncoder().encode(f) : f;
  };
  return {
    paths: () => Object.keys(files),
    bytes: async (p) => bytes(p),
    size: async (p) => bytes(p).length,
  };
}

async function load(name: string) {
  const folder = await readLlamaFolder(await nodeFolderReader(join(models, name)));
  const adapter = await readAdapter(await nodeFolderReader(join(models, 'lora', name)), folder.config);
  const ref = reference(name);
  const lora = { config: adapter.config, params: adapter.params };
  const gpu = new LlamaGpuPolicy(ctx, folder.config, folder.params, optimizerOf(ref), { lora });
  return { folder, adapter, ref, gpu, lora };
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

describe('LoRA on the Llama-family WebGPU engine (Dawn) vs PyTorch + PEFT 0.21.2 and the CPU engine', () => {
  it("the scaled matmuls LoRA runs on (s·(x·Aᵀ)·Bᵀ and its backward) match the kernel-case table's CPU reference", async () => {
    const cases = KERNEL_CASES.filter((c) => c.name.startsWith('matmul'));
    expect(cases.filter((c) => c.name.includes('scale')).length).toBeGreaterThanOrEqual(3);
    for (const c of cases)
      for (const cmp of await c.run(ctx))
        expect(maxAbsError(cmp.got, cmp.want), `${c.name}: ${cmp.name}`).toBeLessThanOrEqual(cmp.tolerance);
  });

  for (const name of ADAPTERS) {
    describe(name, () => {
      it('log-probs with the adapter and with it off (the frozen base, the KL reference) match PEFT to 1e-4', async () => {
        const { gpu, ref } = await load(name);
        const { batch } = batchOf(ref);
        const withAdapter = await gpu.logProbs(batch);
        const base = await gpu.referenceLogProbs(batch);
        expect(maxAbs(withAdapter.logProbs, ref.logprobs.flat())).toBeLessThan(1e-4);
        expect(maxAbs(base.logProbs, ref.logprobs_base.flat())).toBeLessThan(1e-4);
        // the adapter moves the log-probs far beyond the tolerance, so both comparisons bite
        expect(maxAbs(ref.logprobs.flat(), ref.logprobs_base.flat())).toBeGreaterThan(1e-2);
        // the reference policy is the same engine's base: the same numbers, no second copy
        const refPolicy = gpu.referencePolicy();
        expect(maxAbs((await refPolicy.logProbs(batch)).logProbs, base.logProbs)).toBe(0);
        await expect(refPolicy.trainStep(batch, new Float32Array(batch.tokens.length))).rejects.toThrow(
          /does not train/,
        );
        gpu.dispose();
      });

      it('gradients of −Σ w·logp for every adapter tensor match PEFT to 1e-4 relative; the base has none', async () => {
        const { gpu, ref, adapter } = await load(name);
        const { batch, weights } = batchOf(ref);
        expect(gpu.trainableLayout.total).toBe(adapter.layout.total);
        const g = await gpu.computeGrads(batch, weights);
        expect(g.length).toBe(adapter.layout.total);
        const want = tensors(name, 'grads.safetensors');
        expect(want.size).toBe(adapter.layout.tensors.length);
        for (const t of adapter.layout.tensors) {
          const w = want.get(t.name)?.data as Float32Array;
          const scale = norm(w);
          expect(scale, `${t.name} has a zero reference gradient`).toBeGreaterThan(0);
          const got = g.subarray(t.offset, t.offset + t.size);
          const diff = Float32Array.from(got, (x, i) => x - w[i]);
          expect(norm(diff) / scale, t.name).toBeLessThan(1e-4);
        }
        expect(Math.abs(norm(g) - ref.grad_norm)).toBeLessThan(1e-4 * ref.grad_norm);
        gpu.dispose();
      });

      it('one clipped AdamW step on the adapter matches torch.optim.AdamW to 1e-6; the base weights stay', async () => {
        const { gpu, ref, adapter, folder } = await load(name);
        const { batch, weights } = batchOf(ref);
        const s = await gpu.trainStep(batch, weights);
        expect(s.step).toBe(1);
        expect(Math.abs(s.gradNorm - ref.grad_norm)).toBeLessThan(1e-4 * ref.grad_norm);
        expect(Math.abs(s.loss - ref.loss)).toBeLessThan(1e-4 * Math.abs(ref.loss));
        const want = tensors(name, 'step.safetensors');
        const after = await gpu.getParams();
        let moved = 0;
        for (const t of adapter.layout.tensors) {
          const got = after.subarray(t.offset, t.offset + t.size);
          expect(maxAbs(got, want.get(t.name)?.data as Float32Array), t.name).toBeLessThan(1e-6);
          moved = Math.max(moved, maxAbs(got, adapter.params.subarray(t.offset, t.offset + t.size)));
        }
        expect(moved).toBeGreaterThan(1e-3);
        expect(maxAbs(await ctx.readF32(gpu.shards[0], folder.params.length), folder.params)).toBe(0);
        const st = await gpu.getOptimizerState();
        expect(st.m.length).toBe(adapter.layout.total);
        expect(st.v.length).toBe(adapter.layout.total);
        expect(st.step).toBe(1);
        gpu.dispose();
      });
    });
  }

  it('resuming from the adapter and its AdamW state reproduces the next step exactly', async () => {
    const { gpu, ref, folder, lora } = await load('qwen3');
    const { batch, weights } = batchOf(ref);
    const w2 = weights.map((x, i) => x * (i % 3 === 0 ? -0.5 : 1));
    const steps = [weights, w2, weights];
    const whole: number[] = [];
    for (const w of steps) whole.push((await gpu.trainStep(batch, w)).gradNorm);
    const want = { params: await gpu.getParams(), opt: await gpu.getOptimizerState() };
    gpu.dispose();

    const first = new LlamaGpuPolicy(ctx, folder.config, folder.params, optimizerOf(ref), { lora });
    for (const w of steps.slice(0, 2)) await first.trainStep(batch, w);
    // what a checkpoint holds: the trainable buffer (the adapter), AdamW's moments and step, PEFT's folder
    const saved = { params: await first.getParams(), opt: await first.getOptimizerState() };
    const files = await first.exportFiles();
    first.dispose();
    const reread = await readAdapter(memoryFolder(files), folder.config);
    expect(maxAbs(reread.params, saved.params)).toBe(0);

    const resumed = new LlamaGpuPolicy(ctx, folder.config, folder.params, optimizerOf(ref), {
      lora: { config: reread.config, params: reread.params },
    });
    await resumed.setOptimizerState(saved.opt);
    const s = await resumed.trainStep(batch, steps[2]);
    expect(s.step).toBe(3);
    expect(s.gradNorm).toBe(whole[2]);
    expect(maxAbs(await resumed.getParams(), want.params)).toBe(0);
    const opt = await resumed.getOptimizerState();
    expect(maxAbs(opt.m, want.opt.m)).toBe(0);
    expect(maxAbs(opt.v, want.opt.v)).toBe(0);
    // the steps did move the adapter (the comparison is not of an untouched buffer)
    expect(maxAbs(want.params, lora.params)).toBeGreaterThan(1e-3);
    resumed.dispose();
    // six training steps and three engines on SwiftShader: longer than the project's default test timeout
  }, 300_000);

  it('merged weights (W + s·B·A) give the adapted log-probs in a plain engine, and equal the CPU engine’s merge', async () => {
    const { gpu, ref, folder, lora } = await load('qwen3');
    const { batch, weights } = batchOf(ref);
    await gpu.trainStep(batch, weights);
    const merged = await gpu.mergedParams();
    expect(merged.length).toBe(folder.params.length);
    const adapted = await gpu.logProbs(batch);
    const plain = new LlamaGpuPolicy(ctx, folder.config, merged);
    expect(maxAbs((await plain.logProbs(batch)).logProbs, adapted.logProbs)).toBeLessThan(1e-4);
    plain.dispose();
    // the CPU engine, given the same adapter values, merges the same (one implementation: lora.ts mergeLora)
    const cpu = new LlamaCpuPolicy(
      folder.config,
      folder.params,
      {},
      {
        lora: { config: lora.config, params: await gpu.getParams() },
      },
    );
    expect(maxAbs(await cpu.mergedParams(), merged)).toBe(0);
    // and the merge changed the targeted weights (B ≠ 0 in PEFT's reference adapter)
    expect(maxAbs(merged, folder.params)).toBeGreaterThan(1e-3);
    gpu.dispose();
  });

  it('samples through the adapter: the CPU engine’s tokens and log-probs, not the base’s', async () => {
    const { gpu, folder, lora } = await load('llama');
    const cpu = new LlamaCpuPolicy(folder.config, folder.params, {}, { lora });
    const req = { promptIds: [1018, 5, 77, 300], temperature: 0, topP: 1, maxTokens: 8, seed: 3 };
    const c = await cpu.sample(req);
    const g = await gpu.sample(req);
    expect(g.tokenIds).toEqual(c.tokenIds);
    expect(maxAbs(g.logProbs, c.logProbs)).toBeLessThan(1e-4);
    const ids = [...req.promptIds, ...g.tokenIds];
    const row: Batch = {
      tokens: Uint32Array.from(ids),
      mask: new Float32Array(ids.length).fill(1),
      batchSize: 1,
      seqLen: ids.length,
    };
    const base = (await gpu.referenceLogProbs(row)).logProbs.subarray(req.promptIds.length);
    expect(maxAbs(base, g.logProbs)).toBeGreaterThan(1e-3);
    gpu.dispose();
  });

  it('createPolicyEngine picks the WebGPU engine for a LoRA run when the adapter holds the model', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const config = checkLoraConfig({ r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] });
    const lora = { config, seed: 7 };
    const { engine, fallbackReason } = await createPolicyEngine({ llama: folder, lora, context: ctx });
    expect(engine).toBeInstanceOf(LlamaGpuPolicy);
    expect(fallbackReason).toBeUndefined();
    const layout = loraLayout(folder.config, config);
    expect(engine.trainableLayout?.total).toBe(layout.total);
    expect(maxAbs(await engine.getParams(), loraInit(layout, 7))).toBe(0);
    const onCpu = await createPolicyEngine({ llama: folder, lora, backend: 'cpu' });
    expect(onCpu.engine).toBeInstanceOf(LlamaCpuPolicy);
    expect(onCpu.engine.trainableLayout?.total).toBe(layout.total);
    await expect(createPolicyEngine({ lora, backend: 'cpu' })).rejects.toThrow(/LoRA adapts a Llama-family/);
    engine.dispose();
  });
});

describe('lab train --model DIR --backend webgpu: LoRA RL on the WebGPU engine', () => {
  const dir = mkdtempSync(join(tmpdir(), 'train-llama-gpu-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const model = join(models, 'qwen3');
  const args = [
    ...['--harness', 'instruction-short', '--model', model, '--backend', 'webgpu'],
    ...['--lora-rank', '4', '--lora-alpha', '8', '--train-batch-size', '2', '--rollout-n', '2'],
    ...['--ppo-mini-batch-size', '2', '--max-response-length', '4', '--max-prompt-length', '100'],
    ...['--max-model-len', '128', '--workers', '1', '--train-tasks', '8', '--val-tasks', '2'],
    ...['--test-freq', '0', '--save-freq', '1', '--lr', '1e-2', '--use-kl-loss'],
  ];
  const KEYS = ['actor/pg_loss', 'actor/grad_norm', 'actor/kl_loss', 'actor/entropy', 'critic/rewards/mean'];
  const quietly = async (argv: string[]) => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const rc = await train.run(argv);
      return { rc, lines: log.mock.calls.map((c) => String(c[0])) };
    } finally {
      log.mockRestore();
    }
  };

  // One step, then a resume for the second: the run's engine, checkpoint and resume path on Dawn (the exactness
  // of a resumed step is held at the engine level above; SwiftShader makes every extra step costly here).
  it('a step on Dawn, then a resume from its checkpoint: finite metrics, the adapter and AdamW state saved', async () => {
    const out = join(dir, 'run');
    const first = await quietly([...args, '--total-training-steps', '1', '--out', out]);
    expect(first.rc).toBe(0);
    expect(first.lines.find((l) => l.startsWith('train: '))).toMatch(/webgpu backend/);
    const resumed = await quietly(['--resume', out, '--total-training-steps', '2', '--out', out]);
    expect(resumed.rc).toBe(0);
    expect(resumed.lines.find((l) => l.startsWith('train: '))).toMatch(/webgpu backend.*resume step 1/);
    const lines = parseFileLogger(readFileSync(join(out, 'metrics.jsonl'), 'utf8'));
    expect(lines.map((l) => l.step)).toEqual([1, 2]);
    for (const l of lines)
      for (const k of KEYS) expect(Number.isFinite(l.data[k]), `${k} at step ${l.step}`).toBe(true);
    // step 1 starts at the base (B = 0): no KL against it
    expect(lines[0].data['actor/kl_loss']).toBe(0);
    const folder = await readLlamaFolder(await nodeFolderReader(model));
    // the run's default target_modules ('all-linear'): every projection of every layer
    const all = loraLayout(
      folder.config,
      checkLoraConfig({ r: 4, alpha: 8, targetModules: [...LORA_TARGETS] }),
    );
    const ck = (step: number) => {
      const file = join(out, 'checkpoints', `step_00000${step}.safetensors`);
      return decodeTrainCheckpoint(new Uint8Array(readFileSync(file)), file, all);
    };
    const [one, two] = [ck(1), ck(2)];
    expect(one.params.length).toBe(all.total);
    expect(one.optimizer.m.length).toBe(all.total);
    expect(one.optimizer.step).toBe(1);
    expect(two.optimizer.step).toBe(2);
    expect(maxAbs(one.params, two.params)).toBeGreaterThan(0);
    const peft = await readAdapter(
      await nodeFolderReader(join(out, 'checkpoints', 'step_000002')),
      folder.config,
    );
    expect(maxAbs(peft.params, two.params)).toBe(0);
  }, 600_000);
});
