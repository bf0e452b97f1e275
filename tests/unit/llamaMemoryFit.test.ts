import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseBytes, roundToDtype } from '../../src/engine/cpu/half';
import { parseLlamaConfig } from '../../src/engine/llama/config';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { checkLoraConfig, parseTargetModules, trainStepMemory } from '../../src/engine/llama/lora';
import { SHARD_HEADROOM, stepMemory, trainStepFit, weightBytes } from '../../src/engine/llama/memoryFit';
import { llamaLayout } from '../../src/engine/llama/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import type { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { broughtModel, memoryRefusal, runMemoryFit, runStepShape } from '../../src/train/broughtModel';
import { resolveTrainConfig } from '../../src/train/config';
import { RunLaunchError } from '../../src/train/launch';
import { QWEN3_06B_CONFIG } from '../fixtures/modelShapes';

// Qwen3-0.6B's shape (its config.json's sizes)
const qwen06 = parseLlamaConfig(QWEN3_06B_CONFIG);
const lora16 = checkLoraConfig({ r: 16, alpha: 32, targetModules: parseTargetModules('all-linear') });
const MiB = 2 ** 20;

describe('the memory of a training step against the limits', () => {
  it('scales the saved activations with the rows and nothing else', () => {
    const one = trainStepMemory(qwen06, lora16, 64, llamaLayout(qwen06).total);
    const four = stepMemory(qwen06, lora16, { rows: 4, tokens: 64 });
    expect(four.activations).toBe(4 * one.activations);
    for (const t of ['weights', 'adapter', 'grads', 'optimizer'] as const) expect(four[t]).toBe(one[t]);
    expect(four.total).toBe(four.weights + four.activations + four.adapter + four.grads + four.optimizer);
    expect(() => stepMemory(qwen06, null, { rows: 0, tokens: 8 })).toThrow(
      'rows must be an integer ≥ 1, got 0',
    );
    expect(() => stepMemory(qwen06, null, { rows: 1, tokens: 1.5 })).toThrow('tokens must be an integer ≥ 1');
  });

  it('a CPU budget: the whole step, refused by the exact excess, naming the largest term', () => {
    const shape = { rows: 1, tokens: 16 };
    const full = stepMemory(qwen06, null, shape);
    // Qwen3-0.6B full fine-tuning: 4 × 596,049,920 bytes of weights, as many of gradients, twice of AdamW
    expect(full.weights).toBe(4 * 596_049_920);
    expect(full.grads).toBe(full.weights);
    expect(full.optimizer).toBe(2 * full.weights);
    const budget = { kind: 'cpu' as const, budget: 4096 * MiB, label: 'test budget' };
    const fit = trainStepFit(qwen06, null, shape, budget);
    expect(fit.problems).toHaveLength(1);
    const p = fit.problems[0];
    expect(p.term).toBe('total');
    expect(p.over).toBe(full.total - 4096 * MiB);
    expect(p.message).toMatch(
      /^one full fine-tuning step \(\d+\.\d MiB; largest term: optimizer 4547\.5 MiB\) exceeds/,
    );
    expect(p.message).toContain(
      `exceeds the test budget (4096.0 MiB) by ${((full.total - 4096 * MiB) / MiB).toFixed(1)} MiB`,
    );
    // LoRA on the same shape fits: the adapter's gradient and AdamW are small
    expect(trainStepFit(qwen06, lora16, shape, budget).problems).toEqual([]);
    // a budget of exactly the step fits, one byte less does not
    const t = stepMemory(qwen06, lora16, shape).total;
    expect(trainStepFit(qwen06, lora16, shape, { ...budget, budget: t }).problems).toEqual([]);
    expect(trainStepFit(qwen06, lora16, shape, { ...budget, budget: t - 1 }).problems[0].over).toBe(1);
  });

  it("a WebGPU adapter: each of the step's buffers against the smaller of its two limits", () => {
    const shape = { rows: 1, tokens: 16 };
    const m = stepMemory(qwen06, null, shape);
    const gpu = (maxBufferSize: number, maxStorageBufferBindingSize: number) =>
      trainStepFit(qwen06, null, shape, {
        kind: 'webgpu',
        maxBufferSize,
        maxStorageBufferBindingSize,
        label: 'adapter',
      });
    // 2 GiB binding: the 2273.8 MiB weights, gradient and each 2273.8 MiB AdamW moment are over
    const two = gpu(4 * 2 ** 30, 2 * 2 ** 30);
    expect(two.problems.map((p) => p.term)).toEqual(['weights', 'grads', 'optimizer']);
    expect(two.problems[0].over).toBe(m.weights + SHARD_HEADROOM - 2 * 2 ** 30);
    expect(two.problems[2].need).toBe(m.optimizer / 2);
    expect(two.problems[0].message).toContain("exceeds adapter's maxStorageBufferBindingSize (2048.0 MiB)");
    // the smaller limit is the one named
    expect(gpu(2 * 2 ** 30, 4 * 2 ** 30).problems[0].message).toContain("adapter's maxBufferSize");
    expect(gpu(4 * 2 ** 30, 4 * 2 ** 30).problems).toEqual([]);
  });

  it("a run's step shape and LoRA keys come from its config; a run that cannot fit is refused before building", async () => {
    const cfg = resolveTrainConfig({
      actor_rollout_ref: {
        actor: { ppo_micro_batch_size_per_gpu: 8, ppo_mini_batch_size: 1 },
        rollout: { n: 2, max_model_len: 512 },
        model: { lora_rank: 16, lora_alpha: 32 },
      },
    });
    // the micro-batch is at most the mini-batch's rows; the rows at most the model's context
    expect(runStepShape(cfg, 40960)).toEqual({ rows: 2, tokens: 512 });
    expect(runStepShape(cfg, 128)).toEqual({ rows: 2, tokens: 128 });
    const budget = { kind: 'cpu' as const, budget: 4096 * MiB, label: 'budget' };
    const fit = runMemoryFit(cfg, qwen06, budget);
    expect(fit.memory).toEqual(stepMemory(qwen06, lora16, { rows: 2, tokens: 512 }));
    // at 512 tokens the saved activations (attention probabilities grow as T²) are the term that does not fit
    expect(memoryRefusal(fit)).toMatch(
      /^cannot fit: one LoRA step \(\d+\.\d MiB; largest term: activations \d+\.\d MiB\)/,
    );
    const shorter = resolveTrainConfig({
      ...cfg,
      actor_rollout_ref: {
        ...cfg.actor_rollout_ref,
        rollout: { ...cfg.actor_rollout_ref.rollout, max_model_len: 128 },
      },
    });
    expect(memoryRefusal(runMemoryFit(shorter, qwen06, budget))).toBeNull();
    const bad = resolveTrainConfig({
      actor_rollout_ref: { model: { lora_rank: 4, target_modules: 'lm_head' } },
    });
    expect(() => runMemoryFit(bad, qwen06, budget)).toThrow(RunLaunchError);
    expect(() => runMemoryFit(bad, qwen06, budget)).toThrow(/^actor_rollout_ref\.model\.target_modules /);

    // the tiny qwen3 folder against a 1 MiB budget: refused naming the folder, before any engine exists
    const folder = await readLlamaFolder(await nodeFolderReader(resolve(__dirname, '../models/qwen3')));
    const small = { kind: 'cpu' as const, budget: MiB, label: 'tiny budget' };
    const full = resolveTrainConfig({ actor_rollout_ref: { rollout: { max_model_len: 128 } } });
    const err = await broughtModel(full, folder, { name: 'qwen3', tokenizerName: 'q', limits: small }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(RunLaunchError);
    expect(err.path).toBe('actor_rollout_ref.model.path');
    expect(err.detail).toMatch(
      /^qwen3: cannot fit: one full fine-tuning step .* exceeds the tiny budget \(1\.0 MiB\) by /,
    );
    const ok = await broughtModel(full, folder, { name: 'qwen3', tokenizerName: 'q', limits: PAGE_LIMITS });
    expect(ok.model.policy.trainableLayout?.total).toBe(folder.layout.total);
    expect(ok.model.source).toBe('qwen3 (qwen3, full fine-tuning)');
    ok.model.policy.dispose();
  });

  it('a LoRA run with a 16-bit base (lab.lora_base_dtype): WebGPU counts the packed base, the CPU engine f32', async () => {
    const shape = { rows: 1, tokens: 16 };
    const { total } = llamaLayout(qwen06);
    const f32 = stepMemory(qwen06, lora16, shape);
    const bf16 = stepMemory(qwen06, lora16, shape, 'bf16');
    // packed halves plus the norm weights in f32 (Qwen3-0.6B: 0.1 % of the values)
    const vectors = llamaLayout(qwen06).tensors.reduce((n, t) => n + (t.shape.length === 1 ? t.size : 0), 0);
    expect(bf16.weights).toBe(baseBytes(total, 'bf16') + 4 * vectors);
    expect(weightBytes(qwen06, 'f16')).toBe(bf16.weights);
    expect(bf16.weights).toBeLessThan(0.51 * f32.weights);
    for (const t of ['activations', 'adapter', 'grads', 'optimizer'] as const) expect(bf16[t]).toBe(f32[t]);
    expect(() => stepMemory(qwen06, null, shape, 'f16')).toThrow('a f16 base needs LoRA');
    // the frozen base is split into buffers of whole tensors: a 2 GiB binding holds the f32 base (2273.8 MiB)
    // in two; a 512 MiB binding cannot hold the f32 tied embedding (593.5 MiB) but holds its packed halves
    const at = (binding: number) => ({
      kind: 'webgpu' as const,
      maxBufferSize: 4 * 2 ** 30,
      maxStorageBufferBindingSize: binding,
      label: 'a',
    });
    expect(trainStepFit(qwen06, lora16, shape, at(2 ** 31)).problems).toEqual([]);
    const gpu = at(2 ** 29);
    const refused = trainStepFit(qwen06, lora16, shape, gpu).problems;
    expect(refused.map((p) => p.term)).toEqual(['weights']);
    expect(refused[0].message).toMatch(
      /^the largest f32 weight tensor \(model\.embed_tokens\.weight\) \(594\.5 MiB, including 1\.0 MiB headroom\) exceeds a's maxStorageBufferBindingSize \(512\.0 MiB\)/,
    );
    expect(trainStepFit(qwen06, lora16, shape, gpu, 'bf16').problems).toEqual([]);
    // full fine-tuning updates one flat buffer: the whole f32 base must fit one binding
    expect(trainStepFit(qwen06, null, shape, at(2 ** 31)).problems[0].message).toMatch(
      /^the flat f32 weight buffer \(2274\.8 MiB, including 1\.0 MiB headroom\)/,
    );
    // the CPU engine holds the rounded values in f32: no saving counted against a CPU budget
    const cpu = { kind: 'cpu' as const, budget: 2 ** 40, label: 'cpu' };
    expect(trainStepFit(qwen06, lora16, shape, cpu, 'bf16').memory).toEqual(f32);

    const cfg = (lab: object, lora_rank: number) =>
      resolveTrainConfig({
        lab,
        actor_rollout_ref: { model: { lora_rank }, rollout: { max_model_len: 16 } },
      });
    expect(runMemoryFit(cfg({ lora_base_dtype: 'bf16' }, 16), qwen06, gpu).problems).toEqual([]);
    expect(runMemoryFit(cfg({}, 16), qwen06, gpu).problems).toHaveLength(1);
    const full = cfg({ lora_base_dtype: 'f16' }, 0);
    expect(() => runMemoryFit(full, qwen06, gpu)).toThrow(/^lab\.lora_base_dtype a f16 base needs LoRA/);

    // the CPU engine computes on the rounded values: the run's base is the folder rounded to bf16
    const folder = await readLlamaFolder(await nodeFolderReader(resolve(__dirname, '../models/qwen3')));
    const run = await broughtModel(cfg({ lora_base_dtype: 'bf16' }, 4), folder, {
      name: 'qwen3',
      tokenizerName: 'q',
    });
    expect(run.model.source).toBe(
      'qwen3 (qwen3, LoRA r=4 alpha=16 (' +
        'q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj), bf16 base)',
    );
    // PEFT's init has B = 0: the merged weights are the base the engine holds
    const merged = await (run.model.policy as LlamaCpuPolicy).mergedParams();
    expect(Array.from(merged)).toEqual(Array.from(roundToDtype(folder.params, 'bf16')));
    expect(Array.from(merged)).not.toEqual(Array.from(folder.params));
    run.model.policy.dispose();
  });
});

const PAGE_LIMITS = { kind: 'cpu' as const, budget: 4 * 2 ** 30, label: 'page' };
