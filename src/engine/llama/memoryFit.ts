/**
 * Whether one training step of a Llama-family model fits where it would run: the step's memory by term
 * (`trainStepMemory`: weights, activations, adapter, gradients, AdamW) for the run's rows and tokens, against the
 * target's limits (`MemoryLimits`): the whole step against a budget (the machine's memory where the platform
 * states it, else a stated estimate: a page's CPU budget, `WEBGPU_BUDGET_ESTIMATE`), and each of the step's
 * single allocations (`stepBuffers`: the weights — one flat buffer, or on WebGPU a LoRA base's shards of whole
 * tensors, `planWeightShards` — the adapter, the gradient, each AdamW moment) against a WebGPU adapter's
 * `maxBufferSize` / `maxStorageBufferBindingSize` (less `SHARD_HEADROOM` for weight buffers) or the runtime's
 * longest Float32Array. Each
 * problem names the term, the limit, the need and the excess. Pure: only the config's shape is needed, so a
 * page can refuse a run before it reads the weights. A LoRA run's base in f16 / bf16 (`baseDtype`) counts as
 * the WebGPU engine stores it: packed halves (half the flat buffer) plus the norm weights and biases in f32; the
 * CPU engine holds the rounded values in f32. Which config setting would make a refused step fit is the run's
 * business (train/broughtModel.ts memoryRemedies), found by asking this module again.
 */
import { type BaseDtype, baseBytes } from '../cpu/half';
import type { Layout } from '../model';
import type { LlamaConfig } from './config';
import { type LoraConfig, type TrainStepMemory, trainStepMemory } from './lora';
import { llamaLayout } from './model';

export type MemoryTerm = Exclude<keyof TrainStepMemory, 'total'>;
export const MEMORY_TERMS: readonly MemoryTerm[] = [
  'weights',
  'activations',
  'adapter',
  'grads',
  'optimizer',
];

/**
 * Where a step runs and what it may hold. `budget` is the whole step's limit; where the platform states none
 * (a page's worker, WebGPU, which reports no memory size) it is an estimate, and `budgetNote` says so in the
 * refusal ("an estimate: …"). WebGPU adds the adapter's two per-buffer limits; the CPU engine the runtime's
 * longest typed array (`maxArrayLength`, elements), where known. `label` names the target in messages.
 */
export type MemoryLimits =
  | {
      kind: 'cpu';
      budget: number;
      label: string;
      budgetNote?: string;
      /** the longest Float32Array the runtime makes (Node: buffer.constants.MAX_LENGTH); unset: not checked */
      maxArrayLength?: number;
    }
  | {
      kind: 'webgpu';
      maxBufferSize: number;
      maxStorageBufferBindingSize: number;
      label: string;
      /** the whole step's limit (WebGPU states none: an estimate, `budgetNote` saying so); unset: not checked */
      budget?: number;
      budgetNote?: string;
    };

/**
 * What a WebGPU step is checked against when nothing better is known: 4 GiB in all. WebGPU reports no memory
 * size; 4 GiB is the smallest common discrete GPU and about what an integrated GPU may share. Stated in every
 * refusal it causes; `lab.memory_limit_mib` replaces it with the real figure.
 */
export const WEBGPU_BUDGET_ESTIMATE = 4 * 2 ** 30;
export const WEBGPU_BUDGET_NOTE = 'an estimate: WebGPU reports no memory size';

/** A WebGPU adapter's limits (its two buffer limits; the total `budget`, else the stated estimate). */
export function webgpuLimits(
  adapter: { maxBufferSize: number; maxStorageBufferBindingSize: number },
  label: string,
  budget?: { bytes: number; note: string },
): MemoryLimits {
  return {
    kind: 'webgpu',
    maxBufferSize: adapter.maxBufferSize,
    maxStorageBufferBindingSize: adapter.maxStorageBufferBindingSize,
    label,
    budget: budget?.bytes ?? WEBGPU_BUDGET_ESTIMATE,
    budgetNote: budget ? budget.note : WEBGPU_BUDGET_NOTE,
  };
}

export interface StepShape {
  /** rows of one forward + backward (the micro-batch) */
  rows: number;
  /** tokens of each row (the longest a row can be) */
  tokens: number;
}

/** One term over its limit: by how much, in bytes, and the sentence the page shows. */
export interface MemoryProblem {
  term: MemoryTerm | 'total';
  /** the limit it is over: the step's budget, an adapter's buffer limit or the runtime's longest array */
  limitName: 'budget' | 'maxBufferSize' | 'maxStorageBufferBindingSize' | 'maxArrayLength';
  need: number;
  limit: number;
  over: number;
  message: string;
}

export interface MemoryFit {
  memory: TrainStepMemory;
  limits: MemoryLimits;
  problems: MemoryProblem[];
}

export const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** Bytes of the model's weights stored in `dtype`: f32, or packed halves beside the f32 norm weights and biases. */
export function weightBytes(cfg: LlamaConfig, dtype: BaseDtype): number {
  const layout = llamaLayout(cfg);
  if (dtype === 'f32') return 4 * layout.total;
  const vectors = layout.tensors.reduce((n, t) => n + (t.shape.length === 1 ? t.size : 0), 0);
  return baseBytes(layout.total, dtype) + 4 * vectors;
}

/** Elements [start, end) of the flat layout held by one GPU weight buffer (start even: packed halves stay whole). */
export interface WeightShard {
  start: number;
  end: number;
}

/**
 * Bytes a weight buffer keeps below the adapter's limit: Dawn on SwiftShader (maxBufferSize 1 GiB) fails to
 * allocate a buffer of exactly 1 GiB (VK_ERROR_OUT_OF_DEVICE_MEMORY; 1023 MiB succeeds), so a shard stays 1 MiB
 * under the limit.
 */
export const SHARD_HEADROOM = 2 ** 20;

/**
 * How the WebGPU engine splits the base weights into buffers no larger than `limit` bytes (the adapter's
 * min(maxStorageBufferBindingSize, maxBufferSize)): tensors in layout order, each whole inside one buffer, a new
 * buffer begun where the next tensor would overflow (each at most limit − SHARD_HEADROOM bytes). One shard when
 * the flat buffer fits. Throws, naming the
 * tensor, when a single tensor exceeds the limit.
 */
export function planWeightShards(layout: Layout, dtype: BaseDtype, adapterLimit: number): WeightShard[] {
  const bytes = (n: number) => baseBytes(n, dtype);
  const limit = adapterLimit - SHARD_HEADROOM;
  if (bytes(layout.total) <= limit) return [{ start: 0, end: layout.total }];
  const shards: WeightShard[] = [];
  let start = 0;
  for (const t of layout.tensors) {
    if (bytes(t.size + 1) > limit)
      throw new Error(
        `tensor ${t.name} (${mib(bytes(t.size))} as ${dtype}) exceeds this adapter's largest storage binding (${mib(adapterLimit)}, less ${mib(SHARD_HEADROOM)} headroom)`,
      );
    const end = t.offset + t.size;
    if (bytes(end - start) > limit) {
      shards.push({ start, end: t.offset });
      start = dtype === 'f32' ? t.offset : t.offset - (t.offset % 2);
    }
  }
  shards.push({ start, end: layout.total });
  return shards;
}

/** The step's memory for `rows` rows of `tokens` tokens (the saved activations grow with the rows; the rest does not). */
export function stepMemory(
  cfg: LlamaConfig,
  lora: LoraConfig | null,
  shape: StepShape,
  baseDtype: BaseDtype = 'f32',
  /** where the step runs: the WebGPU engine's head workspace holds a vocabulary chunk for every token */
  engine: 'cpu' | 'webgpu' = 'cpu',
): TrainStepMemory {
  if (baseDtype !== 'f32' && !lora)
    throw new Error(
      `memory: a ${baseDtype} base needs LoRA (a frozen base); full fine-tuning keeps f32 weights`,
    );
  if (!Number.isInteger(shape.rows) || shape.rows < 1)
    throw new Error(`memory: rows must be an integer ≥ 1, got ${shape.rows}`);
  if (!Number.isInteger(shape.tokens) || shape.tokens < 1)
    throw new Error(`memory: tokens must be an integer ≥ 1, got ${shape.tokens}`);
  const one = trainStepMemory(
    cfg,
    lora,
    shape.tokens,
    llamaLayout(cfg).total,
    weightBytes(cfg, baseDtype),
    engine === 'webgpu' ? shape.tokens : 32,
  );
  const activations = one.activations * shape.rows;
  return { ...one, activations, total: one.total - one.activations + activations };
}

/**
 * The step's single allocations (one buffer or typed array each), largest first: the weights (in `stored`,
 * packed halves on WebGPU), the adapter, the gradient and each AdamW moment. The saved activations are many
 * smaller arrays and are counted in the total only. On the CPU (no `gpu`) the weights are one flat array. On
 * WebGPU (`gpu`: the adapter's min(maxBufferSize, maxStorageBufferBindingSize)) full fine-tuning updates one
 * flat buffer, and a LoRA run's frozen base is split into shards of whole tensors (`planWeightShards`): the
 * largest shard, or, where one tensor alone cannot fit, that tensor. Each WebGPU weight buffer keeps
 * `headroom` bytes below the limit (SHARD_HEADROOM).
 */
export function stepBuffers(
  cfg: LlamaConfig,
  memory: TrainStepMemory,
  stored: BaseDtype,
  gpu?: { adapterLimit: number; lora: boolean },
): { term: MemoryTerm; what: string; bytes: number; headroom?: number }[] {
  const layout = llamaLayout(cfg);
  let weights: { term: 'weights'; what: string; bytes: number; headroom?: number } = {
    term: 'weights',
    what: `the flat ${stored} weight buffer`,
    bytes: baseBytes(layout.total, stored),
  };
  if (gpu) weights.headroom = SHARD_HEADROOM;
  if (gpu?.lora) {
    try {
      const shards = planWeightShards(layout, stored, gpu.adapterLimit);
      if (shards.length > 1)
        weights = {
          term: 'weights',
          what: `the largest of ${shards.length} ${stored} weight shards`,
          bytes: Math.max(...shards.map((sh) => baseBytes(sh.end - sh.start, stored))),
          headroom: SHARD_HEADROOM,
        };
    } catch {
      const largest = layout.tensors.reduce((a, t) => (t.size > a.size ? t : a), layout.tensors[0]);
      weights = {
        term: 'weights',
        what: `the largest ${stored} weight tensor (${largest.name})`,
        bytes: baseBytes(largest.size + 1, stored),
        headroom: SHARD_HEADROOM,
      };
    }
  }
  const list = [
    weights,
    { term: 'adapter' as const, what: 'the adapter buffer', bytes: memory.adapter },
    { term: 'grads' as const, what: 'the gradient buffer', bytes: memory.grads },
    { term: 'optimizer' as const, what: 'each AdamW moment buffer', bytes: memory.optimizer / 2 },
  ];
  return list.filter((b) => b.bytes > 0).sort((a, b) => b.bytes - a.bytes);
}

export function trainStepFit(
  cfg: LlamaConfig,
  lora: LoraConfig | null,
  shape: StepShape,
  limits: MemoryLimits,
  baseDtype: BaseDtype = 'f32',
): MemoryFit {
  // the CPU engine computes on the rounded values in f32: only the WebGPU engine stores the halves
  const stored = limits.kind === 'webgpu' ? baseDtype : 'f32';
  const memory = stepMemory(cfg, lora, shape, stored, limits.kind);
  const problems: MemoryProblem[] = [];
  const over = (
    term: MemoryTerm | 'total',
    limitName: MemoryProblem['limitName'],
    what: string,
    need: number,
    limit: number,
    of: string,
    note = '',
  ) => {
    if (need > limit)
      problems.push({
        term,
        limitName,
        need,
        limit,
        over: need - limit,
        message: `${what} (${mib(need)}${note}) exceeds ${of} by ${mib(need - limit)}`,
      });
  };
  const buffers = stepBuffers(cfg, memory, stored);
  if (limits.budget !== undefined) {
    const largest = MEMORY_TERMS.reduce((a, t) => (memory[t] > memory[a] ? t : a), MEMORY_TERMS[0]);
    const note = limits.budgetNote ? `, ${limits.budgetNote}` : '';
    over(
      'total',
      'budget',
      `one ${lora ? 'LoRA' : 'full fine-tuning'} step`,
      memory.total,
      limits.budget,
      `${limits.kind === 'webgpu' ? `${limits.label}'s memory` : `the ${limits.label}`} (${mib(limits.budget)}${note})`,
      `; largest term: ${largest} ${mib(memory[largest])}`,
    );
  }
  if (limits.kind === 'cpu') {
    if (limits.maxArrayLength !== undefined)
      for (const b of buffers)
        over(
          b.term,
          'maxArrayLength',
          b.what.replace('buffer', 'array'),
          b.bytes,
          4 * limits.maxArrayLength,
          `the ${limits.label}'s longest Float32Array (${limits.maxArrayLength} values, ${mib(4 * limits.maxArrayLength)})`,
        );
  } else {
    const bind = Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize);
    const which =
      limits.maxBufferSize <= limits.maxStorageBufferBindingSize
        ? 'maxBufferSize'
        : 'maxStorageBufferBindingSize';
    const of = `${limits.label}'s ${which}`;
    for (const b of stepBuffers(cfg, memory, stored, { adapterLimit: bind, lora: lora !== null }))
      over(
        b.term,
        which,
        b.what,
        b.bytes + (b.headroom ?? 0),
        bind,
        `${of} (${mib(bind)})`,
        b.headroom ? `, including ${mib(b.headroom)} headroom` : '',
      );
  }
  return { memory, limits, problems };
}
