/**
 * Whether one training step of a Llama-family model fits where it would run: the step's memory by term
 * (`trainStepMemory`: weights, activations, adapter, gradients, AdamW) for the run's rows and tokens, against a
 * WebGPU adapter's buffer limits (each of the step's single buffers — the flat weights, the adapter, the gradient
 * and each AdamW moment — must fit `maxBufferSize` and `maxStorageBufferBindingSize`) or a stated CPU budget (the
 * whole step). Pure: only the config's shape is needed, so a page can refuse a run before it reads the weights.
 * A LoRA run's base in f16 / bf16 (`baseDtype`) counts as the WebGPU engine stores it: packed halves (half the
 * flat buffer) plus the norm weights and biases in f32; the CPU engine holds the rounded values in f32.
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

export type MemoryLimits =
  | { kind: 'cpu'; budget: number; label: string }
  | { kind: 'webgpu'; maxBufferSize: number; maxStorageBufferBindingSize: number; label: string };

export interface StepShape {
  /** rows of one forward + backward (the micro-batch) */
  rows: number;
  /** tokens of each row (the longest a row can be) */
  tokens: number;
}

/** One term over its limit: by how much, in bytes, and the sentence the page shows. */
export interface MemoryProblem {
  term: MemoryTerm | 'total';
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
    what: string,
    need: number,
    limit: number,
    of: string,
    note = '',
  ) => {
    if (need > limit)
      problems.push({
        term,
        need,
        limit,
        over: need - limit,
        message: `${what} (${mib(need)}${note}) exceeds ${of} (${mib(limit)}) by ${mib(need - limit)}`,
      });
  };
  if (limits.kind === 'cpu') {
    const largest = MEMORY_TERMS.reduce((a, t) => (memory[t] > memory[a] ? t : a), MEMORY_TERMS[0]);
    over(
      'total',
      `one ${lora ? 'LoRA' : 'full fine-tuning'} step`,
      memory.total,
      limits.budget,
      `the ${limits.label}`,
      `; largest term: ${largest} ${mib(memory[largest])}`,
    );
  } else {
    const bind = Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize);
    const which =
      limits.maxBufferSize <= limits.maxStorageBufferBindingSize
        ? 'maxBufferSize'
        : 'maxStorageBufferBindingSize';
    const of = `${limits.label}'s ${which}`;
    // the frozen base of a LoRA run is split into buffers of at most `bind` − SHARD_HEADROOM bytes
    // (planWeightShards); full fine-tuning updates one flat buffer, so it must fit whole (with the same headroom)
    const layout = llamaLayout(cfg);
    const room = `, with ${mib(SHARD_HEADROOM)} headroom`;
    if (lora) {
      const largest = layout.tensors.reduce((a, t) => (t.size > a.size ? t : a), layout.tensors[0]);
      const need = baseBytes(largest.size + 1, stored);
      over(
        'weights',
        `the largest ${stored} weight tensor (${largest.name})`,
        need + SHARD_HEADROOM,
        bind,
        of,
        room,
      );
    } else {
      const need = baseBytes(layout.total, stored);
      over('weights', `the flat ${stored} weight buffer`, need + SHARD_HEADROOM, bind, of, room);
    }
    over('adapter', 'the adapter buffer', memory.adapter, bind, of);
    over('grads', 'the gradient buffer', memory.grads, bind, of);
    over('optimizer', 'each AdamW moment buffer', memory.optimizer / 2, bind, of);
  }
  return { memory, limits, problems };
}
