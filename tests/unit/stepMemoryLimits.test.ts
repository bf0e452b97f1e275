import { constants } from 'node:buffer';
import { totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { nodeCpuLimits } from '../../src/cli/commands/train';
import { parseLlamaConfig } from '../../src/engine/llama/config';
import {
  type MemoryLimits,
  planWeightShards,
  SHARD_HEADROOM,
  trainStepFit,
  WEBGPU_BUDGET_ESTIMATE,
  webgpuLimits,
} from '../../src/engine/llama/memoryFit';
import { llamaLayout } from '../../src/engine/llama/model';
import {
  largestBuffer,
  memoryRemedies,
  runAdapterLimits,
  runCpuLimits,
  runMemoryFit,
  runMemoryRefusal,
  runStepShape,
  runTarget,
} from '../../src/train/broughtModel';
import { resolveTrainConfig, type TrainConfigPatch } from '../../src/train/config';
import { QWEN3_06B_CONFIG, SMOLLM2_135M_CONFIG } from '../fixtures/modelShapes';

// The two shapes of the benchmark, from their config.json sizes
const smollm2 = parseLlamaConfig(SMOLLM2_135M_CONFIG);
const qwen06 = parseLlamaConfig(QWEN3_06B_CONFIG);
const MiB = 2 ** 20;
const cfgOf = (patch: TrainConfigPatch = {}) =>
  resolveTrainConfig({
    ...patch,
    actor_rollout_ref: {
      ...patch.actor_rollout_ref,
      model: { lora_rank: 16, lora_alpha: 32, ...patch.actor_rollout_ref?.model },
    },
  });
// WebGPU's default limits (what an adapter offers at least) and a large desktop adapter
const DEFAULT_ADAPTER = { maxBufferSize: 256 * MiB, maxStorageBufferBindingSize: 128 * MiB };
const BIG_ADAPTER = { maxBufferSize: 4 * 2 ** 30, maxStorageBufferBindingSize: 2 * 2 ** 30 - 4 };
const fits = (cfg: ReturnType<typeof cfgOf>, model: typeof qwen06, limits: MemoryLimits) =>
  runMemoryFit(cfg, model, limits).problems.length === 0;

describe("a run's step against its target's limits", () => {
  it('the step is as long as the level lets a row be: prompt + response limits, bucketed, capped by the context', () => {
    expect(runStepShape(cfgOf(), 8192)).toEqual({ rows: 8, tokens: 1024 });
    const short = cfgOf({
      agentlightning: { trace_aggregator: { level: 'transition' } },
      data: { max_prompt_length: 100, max_response_length: 8 },
    });
    // 108 tokens at most: the 128 bucket
    expect(runStepShape(short, 8192)).toEqual({ rows: 8, tokens: 128 });
    const trajectory = cfgOf({
      agentlightning: {
        trace_aggregator: {
          level: 'trajectory',
          trajectory_max_prompt_length: 40,
          trajectory_max_response_length: 20,
        },
      },
    });
    expect(runStepShape(trajectory, 8192).tokens).toBe(64);
    expect(runStepShape(cfgOf(), 512).tokens).toBe(512);
  });

  it("SmolLM2-135M on a default-limits adapter: a LoRA base fits as shards of whole tensors; full fine-tuning's flat f32 buffer is refused, named with the limit", () => {
    const cfg = cfgOf({ actor_rollout_ref: { rollout: { max_model_len: 128 } } });
    const limits = webgpuLimits(DEFAULT_ADAPTER, 'a');
    expect(limits).toMatchObject({ budget: WEBGPU_BUDGET_ESTIMATE });
    const fit = runMemoryFit(cfg, smollm2, limits);
    // 134,515,008 f32 values; the largest tensor (the embedding, 49152 × 576) fits the 128 MiB binding
    expect(fit.memory.weights).toBe(4 * 134_515_008);
    expect(fit.problems).toEqual([]);
    const shards = planWeightShards(llamaLayout(smollm2), 'f32', 128 * MiB);
    expect(shards.length).toBeGreaterThan(4);
    const largest = Math.max(...shards.map((sh) => 4 * (sh.end - sh.start)));
    expect(largestBuffer(cfg, smollm2, fit)).toEqual({
      what: `the largest of ${shards.length} f32 weight shards`,
      bytes: largest,
      limit: 128 * MiB - SHARD_HEADROOM,
      limitName: 'maxStorageBufferBindingSize',
    });
    expect(largest).toBeLessThanOrEqual(128 * MiB - SHARD_HEADROOM);
    // full fine-tuning updates one flat buffer: refused, the smaller of the two limits named
    const full = cfgOf({ actor_rollout_ref: { model: { lora_rank: 0 }, rollout: { max_model_len: 128 } } });
    const ffit = runMemoryFit(full, smollm2, limits);
    expect(ffit.problems.map((p) => [p.term, p.limitName])).toContainEqual([
      'weights',
      'maxStorageBufferBindingSize',
    ]);
    const said = runMemoryRefusal(full, smollm2, limits) as string;
    expect(said).toMatch(
      /^cannot fit: the flat f32 weight buffer \(514\.1 MiB, including 1\.0 MiB headroom\) exceeds a's maxStorageBufferBindingSize \(128\.0 MiB\) by 386\.1 MiB/,
    );
    expect(memoryRemedies(full, smollm2, limits).alone).toContainEqual(
      expect.stringMatching(/^actor_rollout_ref\.model\.lora_rank \d+ \(LoRA instead of full fine-tuning\)/),
    );
  });

  it('SmolLM2-135M at the default rows (8 × 1024 tokens): the total is over the stated estimate; the micro-batch is the remedy', () => {
    const cfg = cfgOf();
    const limits = webgpuLimits(BIG_ADAPTER, 'a');
    const fit = runMemoryFit(cfg, smollm2, limits);
    expect(fit.problems.map((p) => p.term)).toEqual(['total']);
    expect(fit.problems[0].message).toMatch(
      /^one LoRA step \(\d+\.\d MiB; largest term: activations \d+\.\d MiB\) exceeds a's memory \(4096\.0 MiB, an estimate: WebGPU reports no memory size\) by /,
    );
    const r = memoryRemedies(cfg, smollm2, limits);
    expect(r.alone).toEqual(['actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu 1 (now 8 rows)']);
    // the named value fits and the next one up does not
    const micro = (n: number) => cfgOf({ actor_rollout_ref: { actor: { ppo_micro_batch_size_per_gpu: n } } });
    expect(fits(micro(1), smollm2, limits)).toBe(true);
    expect(fits(micro(2), smollm2, limits)).toBe(false);
    expect(runMemoryRefusal(cfg, smollm2, limits)).toContain(
      '. It would fit with actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu 1 (now 8 rows)',
    );
  });

  it('Qwen3-0.6B on a 512 MiB binding: its f32 embedding (593.5 MiB) cannot be a shard, and a 16-bit base is named as the fix', () => {
    const cfg = cfgOf({
      actor_rollout_ref: { actor: { ppo_micro_batch_size_per_gpu: 1 }, rollout: { max_model_len: 128 } },
    });
    // on a 2 GiB binding the f32 base (2273.8 MiB) is split into shards and fits
    expect(fits(cfg, qwen06, webgpuLimits(BIG_ADAPTER, 'big'))).toBe(true);
    const limits = webgpuLimits(
      { maxBufferSize: 4 * 2 ** 30, maxStorageBufferBindingSize: 512 * MiB },
      'this WebGPU adapter',
    );
    const fit = runMemoryFit(cfg, qwen06, limits);
    expect(fit.problems.map((p) => p.term)).toEqual(['weights']);
    // 151936 × 1024 f32 values, the packing's spare element and the headroom, over the binding
    expect(fit.problems[0].over).toBe(4 * (151936 * 1024 + 1) + SHARD_HEADROOM - 512 * MiB);
    const said = runMemoryRefusal(cfg, qwen06, limits) as string;
    expect(said).toContain(
      "the largest f32 weight tensor (model.embed_tokens.weight) (594.5 MiB, including 1.0 MiB headroom) exceeds this WebGPU adapter's maxStorageBufferBindingSize (512.0 MiB)",
    );
    expect(memoryRemedies(cfg, qwen06, limits).alone).toEqual([
      'lab.lora_base_dtype bf16 (the frozen base packed: half the weight memory)',
    ]);
    expect(fits(cfgOf({ ...cfg, lab: { lora_base_dtype: 'bf16' } }), qwen06, limits)).toBe(true);
    // the CPU engine holds the base in f32 and has no buffer limit: the same step fits the page's 4 GiB
    const page = { kind: 'cpu' as const, budget: 4 * 2 ** 30, label: 'page' };
    expect(fits(cfg, qwen06, page)).toBe(true);
  });

  it('Qwen3-0.6B full fine-tuning against a 4 GiB CPU budget: LoRA is the remedy, not a 16-bit base', () => {
    const cfg = cfgOf({
      actor_rollout_ref: {
        model: { lora_rank: 0 },
        actor: { ppo_micro_batch_size_per_gpu: 1 },
        rollout: { max_model_len: 128 },
      },
    });
    const page = { kind: 'cpu' as const, budget: 4 * 2 ** 30, label: 'budget', budgetNote: 'an estimate' };
    const fit = runMemoryFit(cfg, qwen06, page);
    expect(fit.problems.map((p) => [p.term, p.limitName])).toEqual([['total', 'budget']]);
    expect(fit.problems[0].message).toContain('exceeds the budget (4096.0 MiB, an estimate) by');
    expect(memoryRemedies(cfg, qwen06, page).alone).toEqual([
      'actor_rollout_ref.model.lora_rank 16 (LoRA instead of full fine-tuning)',
    ]);
  });

  it('a lower LoRA rank is found as the largest that fits', () => {
    // a budget between the r=8 and r=16 steps of Qwen3-0.6B at 16 tokens, one row
    const cfg = cfgOf({
      agentlightning: { trace_aggregator: { level: 'transition' } },
      data: { max_prompt_length: 8, max_response_length: 8 },
      actor_rollout_ref: { actor: { ppo_micro_batch_size_per_gpu: 1 }, rollout: { max_model_len: 16 } },
    });
    const rank = (r: number) =>
      cfgOf({ ...cfg, actor_rollout_ref: { ...cfg.actor_rollout_ref, model: { lora_rank: r } } });
    const cpu = (budget: number) => ({ kind: 'cpu' as const, budget, label: 'b' });
    const at8 = runMemoryFit(rank(8), qwen06, cpu(2 ** 40)).memory.total;
    const limits = cpu(at8);
    const r = memoryRemedies(cfg, qwen06, limits);
    expect(r.alone[0]).toBe('actor_rollout_ref.model.lora_rank 8 (now 16)');
    expect(fits(rank(8), qwen06, limits)).toBe(true);
    expect(fits(rank(9), qwen06, limits)).toBe(false);
  });

  it('lab.memory_limit_mib replaces the total, named as the source; runTarget picks the engine the run gets', () => {
    const tight = cfgOf({
      lab: { memory_limit_mib: 64 },
      actor_rollout_ref: { rollout: { max_model_len: 128 } },
    });
    const cpu = runCpuLimits(tight, { kind: 'cpu', budget: 4 * 2 ** 30, label: 'page', budgetNote: 'est' });
    expect(cpu).toMatchObject({ budget: 64 * MiB, budgetNote: 'lab.memory_limit_mib' });
    expect(runMemoryRefusal(tight, smollm2, cpu)).toMatch(
      /exceeds the page \(64\.0 MiB, lab\.memory_limit_mib\) by .*\. It does not fit even with/,
    );
    const gpu = runAdapterLimits(tight, BIG_ADAPTER, 'a');
    expect(gpu).toMatchObject({ kind: 'webgpu', budget: 64 * MiB, budgetNote: 'lab.memory_limit_mib' });
    expect(runAdapterLimits(cfgOf(), BIG_ADAPTER, 'a')).toMatchObject({
      budget: WEBGPU_BUDGET_ESTIMATE,
      budgetNote: 'an estimate: WebGPU reports no memory size',
    });

    const short = { actor_rollout_ref: { rollout: { max_model_len: 128 } } };
    const page = { kind: 'cpu' as const, budget: 4 * 2 ** 30, label: 'page' };
    const adapter = webgpuLimits(BIG_ADAPTER, 'a');
    const on = (backend: 'cpu' | 'webgpu' | 'auto', model: typeof qwen06) =>
      runTarget(cfgOf({ ...short, lab: { backend } }), model, adapter, page).kind;
    expect(on('cpu', smollm2)).toBe('cpu');
    expect(on('webgpu', qwen06)).toBe('webgpu');
    // auto: the adapter where it holds the step, else the CPU engine
    expect(on('auto', smollm2)).toBe('webgpu');
    expect(on('auto', qwen06)).toBe('cpu');
    expect(runTarget(cfgOf({ lab: { backend: 'webgpu' } }), qwen06, null, page)).toBe(page);
  });

  it("the CLI's CPU limits: the machine's memory and V8's longest typed array, each single array checked", () => {
    const node = nodeCpuLimits();
    expect(node).toMatchObject({ budget: totalmem(), maxArrayLength: constants.MAX_LENGTH });
    const lora = null;
    const shape = { rows: 1, tokens: 16 };
    // an array limit below the flat weights: the weights, the gradient and each AdamW moment are named
    const fit = trainStepFit(smollm2, lora, shape, { ...node, budget: 2 ** 50, maxArrayLength: 2 ** 27 });
    expect(fit.problems.map((p) => [p.term, p.limitName])).toEqual([
      ['weights', 'maxArrayLength'],
      ['grads', 'maxArrayLength'],
      ['optimizer', 'maxArrayLength'],
    ]);
    expect(fit.problems[0].message).toBe(
      "the flat f32 weight array (513.1 MiB) exceeds the machine's memory's longest Float32Array (134217728 values, 512.0 MiB) by 1.1 MiB",
    );
    expect(trainStepFit(smollm2, lora, shape, node).problems).toEqual([]);
  });
});
