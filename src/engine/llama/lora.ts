/**
 * LoRA (Hu et al. 2021, arXiv 2106.09685) on the Llama-family decoder, as PEFT's `LoraModel` defines it
 * (peft/tuners/lora/layer.py, `Linear`): each targeted linear layer y = x·Wᵀ + b gains
 *   y += s · (x·Aᵀ)·Bᵀ,   A (r, in), B (out, r),   s = lora_alpha / r   (lora_alpha / √r with use_rslora)
 * with the base W frozen. PEFT's default initialisation (`init_lora_weights=True`, `reset_lora_parameters`):
 * A by `nn.init.kaiming_uniform_(A, a=√5)`, i.e. U(−1/√in, 1/√in) (gain √(2/(1+a²)) = √(1/3), bound
 * gain·√(3/fan_in)), and B = 0, so a fresh adapter leaves the model's outputs unchanged. Targets are HF module
 * names (`target_modules`), matched on the last component of the module path as PEFT matches a list.
 *
 * The adapter's tensors live in ONE flat Float32Array (like the model's parameters), each under the name PEFT
 * saves it with in `adapter_model.safetensors`: `base_model.model.model.layers.{l}.self_attn.q_proj.lora_A.weight`.
 * Every adapter tensor is a matrix, so AdamW's weight decay covers the whole buffer (decayEnd = total), as
 * torch.optim.AdamW over the trainable parameters does.
 *
 * Backward of y += s·(x·Aᵀ)·Bᵀ with t = x·Aᵀ (N, r) saved from the forward:
 *   dB += s·dyᵀ·t,   dt = s·dy·B,   dA += dtᵀ·x,   dx += dt·A.
 */
import { mulberry32 } from '../../core/random';
import { matmulModeCpu } from '../cpu/matmul';
import { type Layout, layoutFromSpec, type MatmulFn, type TensorEntry } from '../model';
import type { LlamaConfig } from './config';

/** The linear modules of a Llama-family block, by their Hugging Face names. */
export const LORA_TARGETS = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

/** PEFT's module path of each target inside a decoder layer. */
export const MODULE_PATH: Record<LoraTarget, string> = {
  q_proj: 'self_attn.q_proj',
  k_proj: 'self_attn.k_proj',
  v_proj: 'self_attn.v_proj',
  o_proj: 'self_attn.o_proj',
  gate_proj: 'mlp.gate_proj',
  up_proj: 'mlp.up_proj',
  down_proj: 'mlp.down_proj',
};

export interface LoraConfig {
  /** the rank r */
  r: number;
  /** lora_alpha; the update is scaled by alpha / r */
  alpha: number;
  /** targeted modules, in LORA_TARGETS order */
  targetModules: LoraTarget[];
  /** PEFT's use_rslora: scale by alpha / √r instead */
  useRslora?: boolean;
}

export class LoraConfigError extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${field}: ${detail}`);
    this.name = 'LoraConfigError';
  }
}

/** Checks a LoRA config and puts the targets in canonical order (duplicates and unknown names are errors). */
export function checkLoraConfig(c: LoraConfig): LoraConfig {
  if (!Number.isInteger(c.r) || c.r < 1)
    throw new LoraConfigError('r', `must be a positive integer, got ${c.r}`);
  if (typeof c.alpha !== 'number' || !Number.isFinite(c.alpha) || c.alpha <= 0)
    throw new LoraConfigError('lora_alpha', `must be a positive number, got ${c.alpha}`);
  if (!Array.isArray(c.targetModules) || c.targetModules.length === 0)
    throw new LoraConfigError(
      'target_modules',
      `must name at least one of ${LORA_TARGETS.join(', ')} (or be 'all-linear')`,
    );
  const seen = new Set<string>();
  for (const m of c.targetModules) {
    if (!(LORA_TARGETS as readonly string[]).includes(m))
      throw new LoraConfigError(
        'target_modules',
        `unknown module '${m}'; the Llama-family linear layers are ${LORA_TARGETS.join(', ')}`,
      );
    if (seen.has(m)) throw new LoraConfigError('target_modules', `'${m}' is listed twice`);
    seen.add(m);
  }
  return {
    r: c.r,
    alpha: c.alpha,
    targetModules: LORA_TARGETS.filter((t) => seen.has(t)),
    useRslora: c.useRslora === true,
  };
}

/** target_modules as PEFT and verl accept it: a list of names, a comma-separated string, or 'all-linear'. */
export function parseTargetModules(v: unknown): LoraTarget[] {
  // PEFT's 'all-linear' is every linear layer but the output head: the seven block projections here
  if (v === 'all-linear') return [...LORA_TARGETS];
  const names =
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : Array.isArray(v) && v.every((s) => typeof s === 'string')
        ? (v as string[])
        : null;
  if (!names)
    throw new LoraConfigError(
      'target_modules',
      `must be a list of module names or 'all-linear', got ${JSON.stringify(v)}`,
    );
  return checkLoraConfig({ r: 1, alpha: 1, targetModules: names as LoraTarget[] }).targetModules;
}

export const loraScaling = (c: LoraConfig): number =>
  c.useRslora ? c.alpha / Math.sqrt(c.r) : c.alpha / c.r;

/** (in, out) features of a target in a config. */
export function targetShape(cfg: LlamaConfig, m: LoraTarget): { inF: number; outF: number } {
  const { hidden: C, intermediate: F, heads: H, kvHeads: KV, headDim: D } = cfg;
  switch (m) {
    case 'q_proj':
      return { inF: C, outF: H * D };
    case 'k_proj':
    case 'v_proj':
      return { inF: C, outF: KV * D };
    case 'o_proj':
      return { inF: H * D, outF: C };
    case 'gate_proj':
    case 'up_proj':
      return { inF: C, outF: F };
    case 'down_proj':
      return { inF: F, outF: C };
  }
}

/** PEFT's saved name of a layer's target tensor (`base_model.model.` + the module path + `.lora_A.weight`). */
export function loraTensorName(l: number, m: LoraTarget, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${l}.${MODULE_PATH[m]}.lora_${which}.weight`;
}

/** The adapter's flat layout: per layer, per target in LORA_TARGETS order, A then B. */
export function loraLayout(cfg: LlamaConfig, lora: LoraConfig): Layout {
  const spec: [string, number[]][] = [];
  for (let l = 0; l < cfg.layers; l++)
    for (const m of lora.targetModules) {
      const { inF, outF } = targetShape(cfg, m);
      spec.push([loraTensorName(l, m, 'A'), [lora.r, inF]]);
      spec.push([loraTensorName(l, m, 'B'), [outF, lora.r]]);
    }
  return layoutFromSpec(spec, spec.length);
}

/** PEFT's default initialisation from a seeded generator: A ~ U(−1/√in, 1/√in) (kaiming_uniform_, a=√5), B = 0. */
export function loraInit(layout: Layout, seed: number): Float32Array {
  const rand = mulberry32(seed);
  const flat = new Float32Array(layout.total);
  for (const t of layout.tensors) {
    if (!t.name.endsWith('.lora_A.weight')) continue;
    const bound = 1 / Math.sqrt(t.shape[1]);
    for (let i = 0; i < t.size; i++) flat[t.offset + i] = (2 * rand() - 1) * bound;
  }
  return flat;
}

/** What the forward keeps per layer for the backward: t = x·Aᵀ of each target. */
export type LoraSaved = Partial<Record<LoraTarget, Float32Array>>;

/**
 * An adapter config checked and bound to a model: its layout (checked against the `length` values of the
 * adapter's flat buffer), scaling and adapted modules. The CPU adapter and the WebGPU one (llamaGpuLora.ts)
 * both start from it.
 */
export abstract class BoundLora {
  readonly config: LoraConfig;
  readonly layout: Layout;
  readonly scaling: number;
  protected readonly targets: Set<LoraTarget>;

  constructor(
    readonly model: LlamaConfig,
    config: LoraConfig,
    length: number,
  ) {
    this.config = checkLoraConfig(config);
    this.layout = loraLayout(model, this.config);
    if (length !== this.layout.total)
      throw new Error(`lora: params has ${length} values, the adapter layout needs ${this.layout.total}`);
    this.scaling = loraScaling(this.config);
    this.targets = new Set(this.config.targetModules);
  }
}

/**
 * A LoRA adapter bound to a model config and its flat buffer. `forward` adds a target's update to the base
 * layer's output; `backward` adds the adapter's contribution to the input gradient and, when given a gradient
 * buffer (laid out like `params`), accumulates dA and dB into it.
 */
export class LoraAdapter extends BoundLora {
  constructor(
    model: LlamaConfig,
    config: LoraConfig,
    public params: Float32Array,
  ) {
    super(model, config, params.length);
  }

  has(m: LoraTarget): boolean {
    return this.targets.has(m);
  }

  private ab(buf: Float32Array, l: number, m: LoraTarget): { A: Float32Array; B: Float32Array } {
    const a = this.layout.byName.get(loraTensorName(l, m, 'A')) as TensorEntry;
    const b = this.layout.byName.get(loraTensorName(l, m, 'B')) as TensorEntry;
    return { A: buf.subarray(a.offset, a.offset + a.size), B: buf.subarray(b.offset, b.offset + b.size) };
  }

  /** y (N, out) += s·(x·Aᵀ)·Bᵀ for x (N, in); returns t = x·Aᵀ (N, r) into `saved`. */
  forward(
    l: number,
    m: LoraTarget,
    x: Float32Array,
    y: Float32Array,
    N: number,
    mm: MatmulFn,
    saved?: LoraSaved,
  ) {
    if (!this.targets.has(m)) return;
    const { inF, outF } = targetShape(this.model, m);
    const r = this.config.r;
    const { A, B } = this.ab(this.params, l, m);
    const t = new Float32Array(N * r);
    mm('nt', x, A, t, N, r, inF);
    const ts = this.scaling === 1 ? t : t.map((v) => v * this.scaling);
    mm('nt', ts, B, y, N, outF, r, { accumulate: true });
    if (saved) saved[m] = t;
  }

  /** dx (N, in) += s·(dy·B)·A; with `grads`, dA += s·(dy·B)ᵀ·x and dB += s·dyᵀ·t. */
  backward(
    l: number,
    m: LoraTarget,
    x: Float32Array,
    t: Float32Array | undefined,
    dy: Float32Array,
    dx: Float32Array,
    N: number,
    mm: MatmulFn,
    grads: Float32Array | null,
  ) {
    if (!this.targets.has(m)) return;
    if (!t)
      throw new Error(`lora: layer ${l} ${m} has no saved activation (forward ran without the adapter)`);
    const { inF, outF } = targetShape(this.model, m);
    const r = this.config.r;
    const s = this.scaling;
    const { A, B } = this.ab(this.params, l, m);
    const dt = new Float32Array(N * r);
    mm('nn', dy, B, dt, N, r, outF);
    if (s !== 1) for (let i = 0; i < dt.length; i++) dt[i] *= s;
    mm('nn', dt, A, dx, N, inF, r, { accumulate: true });
    if (!grads) return;
    const g = this.ab(grads, l, m);
    mm('tn', dt, x, g.A, r, inF, N, { accumulate: true });
    const ts = s === 1 ? t : t.map((v) => v * s);
    mm('tn', dy, ts, g.B, outF, r, N, { accumulate: true });
  }
}

/** Bytes one training step holds, by part (f32 throughout), for a model config, a LoRA config or full fine-tuning. */
export interface TrainStepMemory {
  /** the model's weights */
  weights: number;
  /** what the forward keeps for the backward, for `tokens` positions of one row of length `tokens` */
  activations: number;
  /** the adapter's A and B (0 for full fine-tuning) */
  adapter: number;
  /** the gradient of the trainable buffer */
  grads: number;
  /** AdamW's two moments of the trainable buffer */
  optimizer: number;
  total: number;
}

/**
 * The memory of one step of `llamaForwardCpu` + `llamaBackwardCpu` on a row of T tokens, counted from what the
 * code allocates: per layer and token the saved x, h1, xMid, h2 (C each), q, y (H·D), k, v (KV·D), qwen3's
 * pre-norm q, k copies, g, u, a (F each), the attention probabilities (H·T per token), LoRA's t = x·Aᵀ (r per
 * target); then the final x and its norm (2C per token), and the fused head's tile (32 rows × 4096 vocabulary).
 * The backward's working buffers (a few N·F arrays, freed per layer) come on top.
 */
export function trainStepMemory(
  cfg: LlamaConfig,
  lora: LoraConfig | null,
  T: number,
  nParams: number,
  /** bytes of the weights as stored (default f32; a LoRA run's packed f16 / bf16 base is about half) */
  weightBytes = 4 * nParams,
  /**
   * rows of the fused head's logit workspace (× a vocabulary chunk of min(4096, V)): the CPU engine's 32-row
   * block (default), or every token of the row on WebGPU (its workspace holds all N rows of one chunk)
   */
  headRows = 32,
): TrainStepMemory {
  const { hidden: C, intermediate: F, heads: H, kvHeads: KV, headDim: D } = cfg;
  let perTokenLayer = 4 * C + 2 * H * D + 2 * KV * D + 3 * F + H * T + 2;
  if (cfg.qkNorm) perTokenLayer += H * D + KV * D + H + KV;
  if (lora) perTokenLayer += lora.r * lora.targetModules.length;
  const activations =
    4 * (T * (cfg.layers * perTokenLayer + 3 * C + 4) + headRows * Math.min(4096, cfg.vocabSize));
  const adapterN = lora ? loraLayout(cfg, lora).total : 0;
  const trainable = lora ? adapterN : nParams;
  const m: Omit<TrainStepMemory, 'total'> = {
    weights: weightBytes,
    activations,
    adapter: 4 * adapterN,
    grads: 4 * trainable,
    optimizer: 8 * trainable,
  };
  return { ...m, total: m.weights + m.activations + m.adapter + m.grads + m.optimizer };
}

/**
 * The merged weights PEFT's `merge_and_unload()` gives: for every targeted linear W (out, in) of the base,
 * W + s·B·A (LoRA's delta_weight = (B @ A)·scaling, added to the base layer's weight), every other tensor as it
 * is. A copy in the base layout, so a plain (adapter-free) engine or a weight sync to another runtime reads it.
 */
export function mergeLora(
  model: LlamaConfig,
  baseLayout: Layout,
  base: Float32Array,
  adapter: LoraAdapter,
): Float32Array {
  if (base.length !== baseLayout.total)
    throw new Error(`mergeLora: base has ${base.length} values, the layout needs ${baseLayout.total}`);
  const merged = new Float32Array(base);
  const r = adapter.config.r;
  const s = adapter.scaling;
  for (let l = 0; l < model.layers; l++)
    for (const m of adapter.config.targetModules) {
      const { inF, outF } = targetShape(model, m);
      const w = baseLayout.byName.get(`model.layers.${l}.${MODULE_PATH[m]}.weight`);
      if (!w) throw new Error(`mergeLora: the base has no model.layers.${l}.${MODULE_PATH[m]}.weight`);
      const a = adapter.layout.byName.get(loraTensorName(l, m, 'A')) as TensorEntry;
      const b = adapter.layout.byName.get(loraTensorName(l, m, 'B')) as TensorEntry;
      const A = adapter.params.subarray(a.offset, a.offset + a.size);
      const B = adapter.params.subarray(b.offset, b.offset + b.size);
      const delta = new Float32Array(outF * inF);
      matmulModeCpu('nn', B, A, delta, outF, inF, r);
      for (let i = 0; i < delta.length; i++) merged[w.offset + i] += delta[i] * s;
    }
  return merged;
}
