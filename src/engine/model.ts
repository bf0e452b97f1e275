/**
 * The policy model: a decoder-only transformer in the GPT-2 shape (Radford et al. 2019; nanoGPT / llm.c
 * layout): token + learned position embeddings, L pre-LayerNorm blocks of causal multi-head attention and a
 * GELU MLP, a final LayerNorm and an output head tied to the token embedding.
 *
 * Every parameter lives in ONE flat Float32Array described by a size table (`layoutOf`); named views index
 * into it. Gradients and both Adam moments are flat buffers of the same length and layout, so the optimizer is
 * a single pass over four arrays (on the CPU here, in shaders/adamw.wgsl on the GPU). Weight matrices come
 * first in the layout and vectors last: weight decay applies to elements below `decayEnd`.
 *
 * Linear layers compute y = x·W + b with W stored (in, out), row-major.
 *
 * This file also holds the CPU forward and backward passes built from the references in cpu/: they are what
 * the WebGPU engine is tested against and the engine used where no WebGPU exists.
 */
import { mulberry32 } from '../core/random';
import type { AdamWHyper } from './cpu/adamw';
import { attentionBackwardCpu, attentionForwardCpu } from './cpu/attention';
import { attentionBackwardFast, attentionForwardFast } from './cpu/attentionFast';
import { embeddingBackwardCpu, embeddingForwardCpu } from './cpu/embedding';
import { geluBackwardCpu, geluForwardCpu } from './cpu/gelu';
import { geluBackwardFast, geluForwardFast } from './cpu/geluFast';
import { layernormBackwardCpu, layernormForwardCpu } from './cpu/layernorm';
import { logprobBackwardCpu, logprobForwardCpu } from './cpu/logprob';
import { logprobBackwardFast, logprobForwardFast } from './cpu/logprobFast';
import { colsumCpu, matmulModeCpu } from './cpu/matmul';

/**
 * The matmul the CPU passes use: the reference (`matmulModeCpu`) or the SIMD fast path (`matmulModeFast`,
 * cpu/matmulFast.ts), which computes the same products. With the reference, every op runs its reference loops
 * (cpu/<op>.ts); with any other matmul, attention runs as matmuls through it (cpu/attentionFast.ts) and the
 * log-softmax and GELU on the SIMD module (cpu/logprobFast.ts, cpu/geluFast.ts).
 */
export type MatmulFn = typeof matmulModeCpu;

export interface PolicyConfig {
  /** Vocabulary size V (token ids 0..V-1). */
  vocabSize: number;
  /** Maximum sequence length (positions) T. */
  contextLength: number;
  /** Number of transformer blocks L. */
  layers: number;
  /** Residual width C. */
  width: number;
  /** Attention heads H (width must be divisible by heads). */
  heads: number;
  /** Seed of the deterministic initialisation. */
  seed: number;
}

export const defaultConfig: PolicyConfig = {
  vocabSize: 1024,
  contextLength: 256,
  layers: 4,
  width: 128,
  heads: 4,
  seed: 1,
};

export const defaultOptimizer: AdamWHyper = {
  lr: 3e-4,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.1,
  maxGradNorm: 1.0,
};

/** Fills in defaults and checks every field; throws a message naming the bad field. */
export function resolveConfig(partial: Partial<PolicyConfig> = {}): PolicyConfig {
  const c = { ...defaultConfig, ...partial };
  for (const k of ['vocabSize', 'contextLength', 'layers', 'width', 'heads'] as const) {
    if (!Number.isInteger(c[k]) || c[k] < 1)
      throw new Error(`policy config: ${k} must be a positive integer, got ${c[k]}`);
  }
  if (!Number.isInteger(c.seed)) throw new Error(`policy config: seed must be an integer, got ${c.seed}`);
  if (c.width % c.heads !== 0)
    throw new Error(`policy config: width ${c.width} is not divisible by heads ${c.heads}`);
  return c;
}

export interface TensorEntry {
  name: string;
  shape: number[];
  offset: number;
  size: number;
}

export interface Layout {
  tensors: TensorEntry[];
  byName: Map<string, TensorEntry>;
  total: number;
  /** Elements [0, decayEnd) are weight matrices and embeddings (decayed); the rest biases and norms. */
  decayEnd: number;
}

/** The size table of the flat parameter buffer. */
export function layoutOf(cfg: PolicyConfig): Layout {
  const { vocabSize: V, contextLength: T, width: C, layers: L } = cfg;
  const spec: [string, number[]][] = [
    ['wte', [V, C]],
    ['wpe', [T, C]],
  ];
  for (let l = 0; l < L; l++) {
    spec.push([`h${l}.attn.qkv.w`, [C, 3 * C]]);
    spec.push([`h${l}.attn.proj.w`, [C, C]]);
    spec.push([`h${l}.mlp.fc.w`, [C, 4 * C]]);
    spec.push([`h${l}.mlp.proj.w`, [4 * C, C]]);
  }
  const matrices = spec.length;
  for (let l = 0; l < L; l++) {
    spec.push([`h${l}.ln1.w`, [C]]);
    spec.push([`h${l}.ln1.b`, [C]]);
    spec.push([`h${l}.attn.qkv.b`, [3 * C]]);
    spec.push([`h${l}.attn.proj.b`, [C]]);
    spec.push([`h${l}.ln2.w`, [C]]);
    spec.push([`h${l}.ln2.b`, [C]]);
    spec.push([`h${l}.mlp.fc.b`, [4 * C]]);
    spec.push([`h${l}.mlp.proj.b`, [C]]);
  }
  spec.push(['lnf.w', [C]]);
  spec.push(['lnf.b', [C]]);
  return layoutFromSpec(spec, matrices);
}

/**
 * A flat layout from (name, shape) entries in buffer order; the first `matrices` entries are the decayed ones
 * (decayEnd is the offset after them).
 */
export function layoutFromSpec(
  spec: readonly (readonly [string, readonly number[]])[],
  matrices: number,
): Layout {
  const tensors: TensorEntry[] = [];
  let offset = 0;
  let decayEnd = 0;
  spec.forEach(([name, shape], i) => {
    const size = shape.reduce((a, b) => a * b, 1);
    tensors.push({ name, shape: [...shape], offset, size });
    offset += size;
    if (i === matrices - 1) decayEnd = offset;
  });
  return { tensors, byName: new Map(tensors.map((t) => [t.name, t])), total: offset, decayEnd };
}

/** Named views into a flat buffer laid out by `layout`. */
export function views(layout: Layout, flat: Float32Array): Record<string, Float32Array> {
  const out: Record<string, Float32Array> = {};
  for (const t of layout.tensors) out[t.name] = flat.subarray(t.offset, t.offset + t.size);
  return out;
}

/**
 * Deterministic GPT-2 initialisation from cfg.seed: N(0, 0.02) weights, residual projections scaled by
 * 1/√(2L) (GPT-2 paper §2.3), zero biases, unit LayerNorm gains. Normals by Box–Muller on mulberry32.
 */
export function initParams(cfg: PolicyConfig, layout = layoutOf(cfg)): Float32Array {
  const flat = new Float32Array(layout.total);
  const rand = mulberry32(cfg.seed);
  const normal = () => {
    const u1 = Math.max(rand(), 1e-12);
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * rand());
  };
  for (const t of layout.tensors) {
    const view = flat.subarray(t.offset, t.offset + t.size);
    if (t.shape.length === 2) {
      const std = t.name.endsWith('proj.w') ? 0.02 / Math.sqrt(2 * cfg.layers) : 0.02;
      for (let i = 0; i < view.length; i++) view[i] = std * normal();
    } else if (/ln\d?\.w$|lnf\.w$/.test(t.name)) view.fill(1);
  }
  return flat;
}

/** A right-padded batch of token sequences. */
export interface Batch {
  /** (B·T) token ids, row-major. */
  tokens: Uint32Array;
  batchSize: number;
  seqLen: number;
  /** (B·T) 1 for real tokens, 0 for padding; log-probs and entropies of masked positions are 0. */
  mask: Float32Array;
  /**
   * (B·T) 1 for every real token, where `mask` marks only the tokens whose log-probs are wanted (a training row:
   * its response) and the rest of the row is still context (its prompt); default: `mask`. The Llama family reads
   * it for the key-padding mask and the positions; the GPT-2 policy (causal, right-padded rows) needs only `mask`.
   */
  attention?: Float32Array;
  /** Divides the logits before the softmax (default 1). */
  temperature?: number;
}

/** Checks a batch against the config; the message names the first problem found. */
export function checkBatch(cfg: PolicyConfig, b: Batch): void {
  const { batchSize: B, seqLen: T } = b;
  if (!Number.isInteger(B) || B < 1) throw new Error(`batch: batchSize must be a positive integer, got ${B}`);
  if (!Number.isInteger(T) || T < 1) throw new Error(`batch: seqLen must be a positive integer, got ${T}`);
  if (T > cfg.contextLength)
    throw new Error(`batch: seqLen ${T} exceeds the context length ${cfg.contextLength}`);
  if (b.tokens.length !== B * T)
    throw new Error(`batch: tokens has ${b.tokens.length} ids, expected batchSize*seqLen = ${B * T}`);
  if (b.mask.length !== B * T) throw new Error(`batch: mask has ${b.mask.length} values, expected ${B * T}`);
  if (b.attention && b.attention.length !== B * T)
    throw new Error(`batch: attention has ${b.attention.length} values, expected ${B * T}`);
  for (let i = 0; i < b.tokens.length; i++)
    if (b.tokens[i] >= cfg.vocabSize)
      throw new Error(
        `batch: token ${b.tokens[i]} at row ${Math.floor(i / T)}, position ${i % T} is outside the vocabulary (${cfg.vocabSize})`,
      );
  const temp = b.temperature ?? 1;
  if (!(temp > 0)) throw new Error(`batch: temperature must be > 0, got ${temp}`);
}

interface LayerActs {
  ln1: Float32Array;
  ln1s: Float32Array;
  qkv: Float32Array;
  att: Float32Array;
  atty: Float32Array;
  resMid: Float32Array;
  ln2: Float32Array;
  ln2s: Float32Array;
  fch: Float32Array;
  fcg: Float32Array;
}

/** Everything the CPU forward keeps for its backward pass. */
export interface CpuActivations {
  res: Float32Array[];
  layers: LayerActs[];
  lnf: Float32Array;
  lnfs: Float32Array;
  logits: Float32Array;
  lse: Float32Array;
  logp: Float32Array;
  entropy: Float32Array;
}

/** The transformer trunk (embeddings and blocks) on the CPU, for B sequences of T tokens. */
function trunkCpu(
  cfg: PolicyConfig,
  p: Record<string, Float32Array>,
  tokens: Uint32Array,
  B: number,
  T: number,
  mm: MatmulFn,
): { res: Float32Array[]; layers: LayerActs[] } {
  const { width: C, heads: H } = cfg;
  const N = B * T;
  const res = [new Float32Array(N * C)];
  embeddingForwardCpu(tokens, p.wte, p.wpe, res[0], T, C);
  const layers: LayerActs[] = [];
  for (let l = 0; l < cfg.layers; l++) {
    const a: LayerActs = {
      ln1: new Float32Array(N * C),
      ln1s: new Float32Array(2 * N),
      qkv: new Float32Array(N * 3 * C),
      att: new Float32Array(B * H * T * T),
      atty: new Float32Array(N * C),
      resMid: new Float32Array(res[l]),
      ln2: new Float32Array(N * C),
      ln2s: new Float32Array(2 * N),
      fch: new Float32Array(N * 4 * C),
      fcg: new Float32Array(N * 4 * C),
    };
    const h = `h${l}.`;
    layernormForwardCpu(res[l], p[`${h}ln1.w`], p[`${h}ln1.b`], a.ln1, a.ln1s, N, C);
    mm('nn', a.ln1, p[`${h}attn.qkv.w`], a.qkv, N, 3 * C, C, { bias: p[`${h}attn.qkv.b`] });
    if (mm === matmulModeCpu) attentionForwardCpu(a.qkv, a.att, a.atty, B, T, C, H);
    else attentionForwardFast(a.qkv, a.att, a.atty, B, T, C, H, mm);
    mm('nn', a.atty, p[`${h}attn.proj.w`], a.resMid, N, C, C, {
      bias: p[`${h}attn.proj.b`],
      accumulate: true,
    });
    layernormForwardCpu(a.resMid, p[`${h}ln2.w`], p[`${h}ln2.b`], a.ln2, a.ln2s, N, C);
    mm('nn', a.ln2, p[`${h}mlp.fc.w`], a.fch, N, 4 * C, C, { bias: p[`${h}mlp.fc.b`] });
    (mm === matmulModeCpu ? geluForwardCpu : geluForwardFast)(a.fch, a.fcg);
    const out = new Float32Array(a.resMid);
    mm('nn', a.fcg, p[`${h}mlp.proj.w`], out, N, C, 4 * C, {
      bias: p[`${h}mlp.proj.b`],
      accumulate: true,
    });
    res.push(out);
    layers.push(a);
  }
  return { res, layers };
}

/** CPU forward: per-token log-probs and entropies for a padded batch, plus the saved activations. */
export function forwardCpu(
  cfg: PolicyConfig,
  layout: Layout,
  params: Float32Array,
  batch: Batch,
  mm: MatmulFn = matmulModeCpu,
): CpuActivations {
  const { batchSize: B, seqLen: T } = batch;
  const { width: C, vocabSize: V } = cfg;
  const N = B * T;
  const p = views(layout, params);
  const { res, layers } = trunkCpu(cfg, p, batch.tokens, B, T, mm);
  const lnf = new Float32Array(N * C);
  const lnfs = new Float32Array(2 * N);
  layernormForwardCpu(res[cfg.layers], p['lnf.w'], p['lnf.b'], lnf, lnfs, N, C);
  const logits = new Float32Array(N * V);
  mm('nt', lnf, p.wte, logits, N, V, C);
  const { logp, entropy, lse } = (mm === matmulModeCpu ? logprobForwardCpu : logprobForwardFast)(
    logits,
    batch.tokens,
    batch.mask,
    B,
    T,
    V,
    batch.temperature ?? 1,
  );
  return { res, layers, lnf, lnfs, logits, lse, logp, entropy };
}

/**
 * A prompt through the trunk in one batched pass (B = 1): every layer's qkv rows (the KV cache a decode loop
 * continues from) and the next-token logits after the last prompt token (the head runs on that row only).
 */
export function prefillCpu(
  cfg: PolicyConfig,
  layout: Layout,
  params: Float32Array,
  promptIds: ArrayLike<number>,
  mm: MatmulFn = matmulModeCpu,
): { qkv: Float32Array[]; logits: Float32Array } {
  const P = promptIds.length;
  const { width: C, vocabSize: V } = cfg;
  const p = views(layout, params);
  const { res, layers } = trunkCpu(cfg, p, Uint32Array.from(promptIds), 1, P, mm);
  const last = res[cfg.layers].subarray((P - 1) * C, P * C);
  const ln = new Float32Array(C);
  layernormForwardCpu(last, p['lnf.w'], p['lnf.b'], ln, new Float32Array(2), 1, C);
  const logits = new Float32Array(V);
  mm('nt', ln, p.wte, logits, 1, V, C);
  return { qkv: layers.map((a) => a.qkv), logits };
}

/**
 * CPU backward of L = −Σ_{b,t} weights[b,t]·logp[b,t] into `grads` from saved activations: overwritten, or
 * added to when `accumulate` (gradient accumulation over micro-batches).
 */
export function backwardCpu(
  cfg: PolicyConfig,
  layout: Layout,
  params: Float32Array,
  batch: Batch,
  acts: CpuActivations,
  weights: Float32Array,
  grads: Float32Array,
  mm: MatmulFn = matmulModeCpu,
  accumulate = false,
): void {
  const { batchSize: B, seqLen: T } = batch;
  const { width: C, heads: H, vocabSize: V } = cfg;
  const N = B * T;
  const p = views(layout, params);
  const g = views(layout, grads);
  if (!accumulate) grads.fill(0);
  const dlogits = (mm === matmulModeCpu ? logprobBackwardCpu : logprobBackwardFast)(
    acts.logits,
    batch.tokens,
    weights,
    acts.lse,
    B,
    T,
    V,
    batch.temperature ?? 1,
  );
  const dlnf = new Float32Array(N * C);
  mm('nn', dlogits, p.wte, dlnf, N, C, V);
  mm('tn', dlogits, acts.lnf, g.wte, V, C, N, { accumulate: true });
  const dres = new Float32Array(N * C);
  layernormBackwardCpu(acts.res[cfg.layers], p['lnf.w'], acts.lnfs, dlnf, dres, g['lnf.w'], g['lnf.b'], N, C);
  const dfcg = new Float32Array(N * 4 * C);
  const dfch = new Float32Array(N * 4 * C);
  const dln = new Float32Array(N * C);
  const datty = new Float32Array(N * C);
  const dqkv = new Float32Array(N * 3 * C);
  for (let l = cfg.layers - 1; l >= 0; l--) {
    const a = acts.layers[l];
    const h = `h${l}.`;
    mm('nt', dres, p[`${h}mlp.proj.w`], dfcg, N, 4 * C, C);
    mm('tn', a.fcg, dres, g[`${h}mlp.proj.w`], 4 * C, C, N, { accumulate: true });
    colsumCpu(dres, N, C, g[`${h}mlp.proj.b`]);
    (mm === matmulModeCpu ? geluBackwardCpu : geluBackwardFast)(a.fch, dfcg, dfch);
    mm('nt', dfch, p[`${h}mlp.fc.w`], dln, N, C, 4 * C);
    mm('tn', a.ln2, dfch, g[`${h}mlp.fc.w`], C, 4 * C, N, { accumulate: true });
    colsumCpu(dfch, N, 4 * C, g[`${h}mlp.fc.b`]);
    layernormBackwardCpu(a.resMid, p[`${h}ln2.w`], a.ln2s, dln, dres, g[`${h}ln2.w`], g[`${h}ln2.b`], N, C);
    mm('nt', dres, p[`${h}attn.proj.w`], datty, N, C, C);
    mm('tn', a.atty, dres, g[`${h}attn.proj.w`], C, C, N, { accumulate: true });
    colsumCpu(dres, N, C, g[`${h}attn.proj.b`]);
    if (mm === matmulModeCpu) attentionBackwardCpu(a.qkv, a.att, datty, dqkv, B, T, C, H);
    else attentionBackwardFast(a.qkv, a.att, datty, dqkv, B, T, C, H, mm);
    mm('nt', dqkv, p[`${h}attn.qkv.w`], dln, N, C, 3 * C);
    mm('tn', a.ln1, dqkv, g[`${h}attn.qkv.w`], C, 3 * C, N, { accumulate: true });
    colsumCpu(dqkv, N, 3 * C, g[`${h}attn.qkv.b`]);
    layernormBackwardCpu(
      acts.res[l],
      p[`${h}ln1.w`],
      a.ln1s,
      dln,
      dres,
      g[`${h}ln1.w`],
      g[`${h}ln1.b`],
      N,
      C,
    );
  }
  embeddingBackwardCpu(batch.tokens, dres, g.wte, g.wpe, T, C);
}

/** The loss the backward pass differentiates: −Σ w·logp. */
export function weightedLoss(logp: Float32Array, weights: Float32Array): number {
  let loss = 0;
  for (let i = 0; i < logp.length; i++) loss -= weights[i] * logp[i];
  return loss;
}
