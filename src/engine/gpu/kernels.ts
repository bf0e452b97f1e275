/**
 * Dispatch wrappers for every WGSL kernel in shaders/: each adds one or two dispatches to a Program (recorded
 * once, replayed per step). Offsets are in elements (f32, or 16-bit halves in a packed weight buffer). The CPU references in src/engine/cpu/ define what
 * each one must compute.
 */
import type { AdamWHyper } from '../cpu/adamw';
import type { GqaShape } from '../cpu/gqa';
import { type BaseDtype, dtypeCode } from '../cpu/half';
import { grid, type Program, uniformBlock } from './device';

const u = (v: number) => ({ u: v });
const f = (v: number) => ({ f: v });

export interface MatmulArgs {
  mode: 'nn' | 'nt' | 'tn';
  M: number;
  N: number;
  K: number;
  a: GPUBuffer;
  b: GPUBuffer;
  c: GPUBuffer;
  aOff?: number;
  bOff?: number;
  cOff?: number;
  bias?: GPUBuffer;
  biasOff?: number;
  accumulate?: boolean;
  /** C (+)= scale · op(A)·op(B) (+ bias); default 1 */
  scale?: number;
  /** how B is stored: f32 (default) or packed 16-bit halves (src/engine/cpu/half.ts), widened in the kernel */
  bDtype?: BaseDtype;
}

export function matmul(p: Program, x: MatmulArgs): Promise<GPUBuffer[]> {
  const dims = uniformBlock([
    u(x.M),
    u(x.N),
    u(x.K),
    u(x.accumulate ? 1 : 0),
    u(x.aOff ?? 0),
    u(x.bOff ?? 0),
    u(x.cOff ?? 0),
    u(x.biasOff ?? 0),
    u(x.bias ? 1 : 0),
    f(x.scale ?? 1),
    u(dtypeCode(x.bDtype ?? 'f32')),
  ]);
  // An unused bias binding still needs a buffer: any buffer does, the kernel never reads it.
  const buffers = [dims, x.a, x.b, x.c, x.bias ?? x.a];
  if (x.M === 1 && x.mode !== 'tn') return p.add('matmul', `row_${x.mode}`, buffers, [Math.ceil(x.N / 64)]);
  const entry = x.mode === 'nn' ? 'main' : x.mode;
  return p.add('matmul', entry, buffers, [Math.ceil(x.N / 64), Math.ceil(x.M / 16)]);
}

/** out[outOff + j] (+)= Σ_i x[i·N + j]. */
export function colsum(
  p: Program,
  x: GPUBuffer,
  M: number,
  N: number,
  out: GPUBuffer,
  outOff: number,
  accumulate = true,
): Promise<GPUBuffer[]> {
  const dims = uniformBlock([u(M), u(N), u(outOff), u(accumulate ? 1 : 0)]);
  return p.add('reduce', 'colsum', [dims, x, out], [Math.ceil(N / 64)]);
}

export interface EmbeddingDims {
  N: number;
  T: number;
  C: number;
  V: number;
  wteOff: number;
  wpeOff: number;
  pos0?: number;
  /** how the tables are stored (forward and gather): f32 (default) or packed 16-bit halves */
  dtype?: BaseDtype;
}

function embeddingBlock(d: EmbeddingDims): ArrayBuffer {
  return uniformBlock([
    u(d.N),
    u(d.T),
    u(d.C),
    u(d.V),
    u(d.wteOff),
    u(d.wpeOff),
    u(d.pos0 ?? 0),
    u(dtypeCode(d.dtype ?? 'f32')),
  ]);
}

export function embeddingForward(
  p: Program,
  d: EmbeddingDims,
  tokens: GPUBuffer,
  params: GPUBuffer,
  out: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add(
    'embedding',
    'forward',
    [embeddingBlock(d), tokens, params, out],
    grid(Math.ceil((d.N * d.C) / 64)),
  );
}

/** out (N, C) = wte[tokens[n]]: the token embedding alone (wpeOff and T are unused). */
export function embeddingGather(
  p: Program,
  d: EmbeddingDims,
  tokens: GPUBuffer,
  params: GPUBuffer,
  out: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add(
    'embedding',
    'gather',
    [embeddingBlock(d), tokens, params, out],
    grid(Math.ceil((d.N * d.C) / 64)),
  );
}

/** grads += the embedding gradients; `positions: false` skips wpe (for embeddingGather's backward). */
export async function embeddingBackward(
  p: Program,
  d: EmbeddingDims,
  tokens: GPUBuffer,
  dout: GPUBuffer,
  grads: GPUBuffer,
  positions = true,
): Promise<void> {
  await p.add(
    'embedding',
    'backward_wte',
    [embeddingBlock(d), tokens, dout, grads],
    grid(Math.ceil((d.V * d.C) / 64)),
  );
  if (!positions) return;
  await p.add(
    'embedding',
    'backward_wpe',
    [embeddingBlock(d), tokens, dout, grads],
    grid(Math.ceil((d.T * d.C) / 64)),
  );
}

export interface LayerNormDims {
  N: number;
  C: number;
  wOff: number;
  bOff: number;
  eps?: number;
}

function lnBlock(d: LayerNormDims): ArrayBuffer {
  return uniformBlock([u(d.N), u(d.C), u(d.wOff), u(d.bOff), f(d.eps ?? 1e-5)]);
}

export function layernormForward(
  p: Program,
  d: LayerNormDims,
  x: GPUBuffer,
  params: GPUBuffer,
  y: GPUBuffer,
  stats: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add('layernorm', 'forward', [lnBlock(d), x, params, y, stats], [Math.ceil(d.N / 64)]);
}

/** dx += LayerNorm input gradient; grads[wOff..], grads[bOff..] += parameter gradients. */
export async function layernormBackward(
  p: Program,
  d: LayerNormDims,
  x: GPUBuffer,
  stats: GPUBuffer,
  dy: GPUBuffer,
  dx: GPUBuffer,
  params: GPUBuffer,
  grads: GPUBuffer,
): Promise<void> {
  await p.add(
    'layernorm_backward',
    'backward',
    [lnBlock(d), x, stats, dy, dx, params],
    [Math.ceil(d.N / 64)],
  );
  await p.add(
    'layernorm_backward',
    'backward_params',
    [lnBlock(d), x, stats, dy, grads, params],
    [Math.ceil(d.C / 64)],
  );
}

export function geluForward(p: Program, n: number, x: GPUBuffer, y: GPUBuffer): Promise<GPUBuffer[]> {
  return p.add('gelu', 'forward', [uniformBlock([u(n)]), x, x, y], grid(Math.ceil(n / 64)));
}

export function geluBackward(
  p: Program,
  n: number,
  x: GPUBuffer,
  dy: GPUBuffer,
  dx: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add('gelu', 'backward', [uniformBlock([u(n)]), x, dy, dx], grid(Math.ceil(n / 64)));
}

export interface AttentionDims {
  B: number;
  T: number;
  C: number;
  H: number;
  t0?: number;
  nq?: number;
}

export function attentionBlock(d: AttentionDims): ArrayBuffer {
  const hs = d.C / d.H;
  return uniformBlock([u(d.B), u(d.T), u(d.C), u(d.H), u(d.t0 ?? 0), u(d.nq ?? d.T), f(1 / Math.sqrt(hs))]);
}

export function attentionForward(
  p: Program,
  d: AttentionDims,
  qkv: GPUBuffer,
  att: GPUBuffer,
  out: GPUBuffer,
): Promise<GPUBuffer[]> {
  const count = d.B * d.H * (d.nq ?? d.T);
  return p.add('attention', 'forward', [attentionBlock(d), qkv, att, out], [Math.ceil(count / 64)]);
}

export async function attentionBackward(
  p: Program,
  d: AttentionDims,
  qkv: GPUBuffer,
  att: GPUBuffer,
  dout: GPUBuffer,
  datt: GPUBuffer,
  dqkv: GPUBuffer,
): Promise<void> {
  const wg = [Math.ceil((d.B * d.H * d.T) / 64)] as [number];
  await p.add('attention_backward', 'backward_q', [attentionBlock(d), qkv, att, dout, datt, dqkv], wg);
  await p.add('attention_backward', 'backward_kv', [attentionBlock(d), qkv, att, dout, datt, dqkv], wg);
}

export interface LogprobDims {
  B: number;
  T: number;
  V: number;
  temperature: number;
}

export function logprobBlock(d: LogprobDims): ArrayBuffer {
  return uniformBlock([u(d.B), u(d.T), u(d.V), u(0), f(1 / d.temperature)]);
}

/** logp, entropy (B·T) and lse (B·T) from logits (B·T, V). Returns the uniform buffer (temperature lives there). */
export function logprobForward(
  p: Program,
  d: LogprobDims,
  logits: GPUBuffer,
  tokens: GPUBuffer,
  mask: GPUBuffer,
  lse: GPUBuffer,
  logp: GPUBuffer,
  entropy: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add(
    'logprob',
    'forward',
    [logprobBlock(d), logits, tokens, mask, lse, logp, entropy],
    [Math.ceil((d.B * d.T) / 64)],
  );
}

export function logprobBackward(
  p: Program,
  d: LogprobDims,
  logits: GPUBuffer,
  tokens: GPUBuffer,
  weights: GPUBuffer,
  lse: GPUBuffer,
  dlogits: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add(
    'logprob',
    'backward',
    [logprobBlock(d), logits, tokens, weights, lse, dlogits, p.scratch()],
    grid(Math.ceil((d.B * d.T * d.V) / 64)),
  );
}

/** The AdamW kernels' uniform: the hyperparameters of cpu/adamw.ts (its reference) and the buffer's extent. */
export interface AdamWUniform extends AdamWHyper {
  n: number;
  decayEnd: number;
  partials: number;
  step: number;
}

export function adamwBlock(a: AdamWUniform): ArrayBuffer {
  return uniformBlock([
    u(a.n),
    u(a.decayEnd),
    u(a.partials),
    u(0),
    f(a.lr),
    f(a.beta1),
    f(a.beta2),
    f(a.eps),
    f(a.weightDecay),
    f(a.maxGradNorm),
    f(1 - a.beta1 ** a.step),
    f(1 - a.beta2 ** a.step),
  ]);
}

/** Number of sum-of-squares workgroups for n gradient elements (grid-strided, ≤ 1024). */
export function adamwPartials(n: number): number {
  return Math.max(1, Math.min(1024, Math.ceil(n / 256)));
}

/**
 * The global gradient norm: `partial` must hold adamwPartials(n) + 1 floats; the norm ends up at
 * partial[partials]. Returns the uniform buffer, shared with `adamwUpdate` (rewrite it per step with adamwBlock).
 */
export async function adamwNorm(
  p: Program,
  a: AdamWUniform,
  grads: GPUBuffer,
  partial: GPUBuffer,
  params: GPUBuffer,
  m: GPUBuffer,
  v: GPUBuffer,
): Promise<GPUBuffer> {
  const [uni] = await p.add('adamw', 'sumsq', [adamwBlock(a), grads, partial, params, m, v], [a.partials]);
  await p.addWithUniform('adamw', 'norm', uni, [grads, partial, params, m, v], [1]);
  return uni;
}

/** The clipped AdamW update, reading the norm `adamwNorm` left in partial[partials]. */
export function adamwUpdate(
  p: Program,
  n: number,
  uniform: GPUBuffer,
  grads: GPUBuffer,
  partial: GPUBuffer,
  params: GPUBuffer,
  m: GPUBuffer,
  v: GPUBuffer,
): Promise<void> {
  return p.addWithUniform(
    'adamw',
    'update',
    uniform,
    [grads, partial, params, m, v],
    grid(Math.ceil(n / 64)),
  );
}

/** Global norm then AdamW update in one program. Returns the uniform buffer. */
export async function adamw(
  p: Program,
  a: AdamWUniform,
  grads: GPUBuffer,
  partial: GPUBuffer,
  params: GPUBuffer,
  m: GPUBuffer,
  v: GPUBuffer,
): Promise<GPUBuffer> {
  const uni = await adamwNorm(p, a, grads, partial, params, m, v);
  await adamwUpdate(p, a.n, uni, grads, partial, params, m, v);
  return uni;
}

export interface RmsNormDims {
  N: number;
  C: number;
  /** offset of the weights in the parameter buffer */
  wOff: number;
  eps: number;
}

/** y = rmsnorm(x)·w per row of C; rstd (N) for the backward. */
export function rmsnormForward(
  p: Program,
  d: RmsNormDims,
  x: GPUBuffer,
  params: GPUBuffer,
  y: GPUBuffer,
  rstd: GPUBuffer,
): Promise<GPUBuffer[]> {
  const dims = uniformBlock([u(d.N), u(d.C), u(d.wOff), u(0), f(d.eps)]);
  return p.add('rmsnorm', 'forward', [dims, x, params, y, rstd], [Math.ceil(d.N / 64)]);
}

/** dx (=|+=) the RMSNorm input gradient; grads[gOff..] += the weight gradient (none when `grads` is null: frozen). */
export async function rmsnormBackward(
  p: Program,
  d: RmsNormDims & { gOff: number; accumulate: boolean },
  x: GPUBuffer,
  rstd: GPUBuffer,
  dy: GPUBuffer,
  dx: GPUBuffer,
  params: GPUBuffer,
  grads: GPUBuffer | null,
): Promise<void> {
  const dims = uniformBlock([u(d.N), u(d.C), u(d.wOff), u(d.gOff), u(d.accumulate ? 1 : 0)]);
  await p.add('rmsnorm_backward', 'backward', [dims, x, rstd, dy, dx, params], [Math.ceil(d.N / 64)]);
  if (!grads) return;
  await p.add(
    'rmsnorm_backward',
    'backward_params',
    [dims, x, rstd, dy, grads, params],
    [Math.ceil(d.C / 64)],
  );
}

/** a = silu(g)·u over n elements. */
export function swigluForward(
  p: Program,
  n: number,
  g: GPUBuffer,
  up: GPUBuffer,
  a: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add('swiglu', 'forward', [uniformBlock([u(n)]), g, up, a], grid(Math.ceil(n / 64)));
}

export function swigluBackward(
  p: Program,
  n: number,
  g: GPUBuffer,
  up: GPUBuffer,
  da: GPUBuffer,
  dg: GPUBuffer,
  du: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add(
    'swiglu_backward',
    'backward',
    [uniformBlock([u(n)]), g, up, da, dg, du],
    grid(Math.ceil(n / 64)),
  );
}

export interface RopeDims {
  N: number;
  heads: number;
  D: number;
  /** where the sin table starts in the cos/sin buffer (the cos table is at 0) */
  sinOff: number;
  /** true: rotate by the negative angle (the backward) */
  inverse?: boolean;
}

/** Rotates x (N rows × heads × D) in place by the angles of each row's position. */
export function ropeApply(
  p: Program,
  d: RopeDims,
  pos: GPUBuffer,
  cosSin: GPUBuffer,
  x: GPUBuffer,
): Promise<GPUBuffer[]> {
  const dims = uniformBlock([u(d.N), u(d.heads), u(d.D), u(d.sinOff), f(d.inverse ? -1 : 1)]);
  return p.add('rope', 'apply', [dims, pos, cosSin, x], grid(Math.ceil((d.N * d.heads * d.D) / 2 / 64)));
}

/** The shape of a grouped-query attention call, the one of its reference (cpu/gqa.ts). */
export type GqaDims = GqaShape;

export function gqaBlock(d: GqaDims, hasMask: boolean): ArrayBuffer {
  if (d.D > 256) throw new Error(`gqa: head_dim ${d.D} exceeds the kernel's 256`);
  return uniformBlock([
    u(d.B),
    u(d.Tq),
    u(d.Tk),
    u(d.H),
    u(d.KV),
    u(d.D),
    u(d.offset),
    u(hasMask ? 1 : 0),
    f(1 / Math.sqrt(d.D)),
  ]);
}

/** Grouped-query causal attention with an optional key mask (B·Tk f32; null: every key). */
export function gqaForward(
  p: Program,
  d: GqaDims,
  q: GPUBuffer,
  k: GPUBuffer,
  v: GPUBuffer,
  mask: GPUBuffer | null,
  probs: GPUBuffer,
  y: GPUBuffer,
): Promise<GPUBuffer[]> {
  return p.add(
    'gqa',
    'forward',
    [gqaBlock(d, mask !== null), q, k, v, mask ?? q, probs, y],
    grid(Math.ceil((d.B * d.H * d.Tq) / 64)),
  );
}

/** dq (overwritten) and dk ‖ dv in one buffer (dk at 0, dv at B·Tk·KV·D; overwritten). */
export async function gqaBackward(
  p: Program,
  d: GqaDims,
  q: GPUBuffer,
  k: GPUBuffer,
  v: GPUBuffer,
  probs: GPUBuffer,
  dy: GPUBuffer,
  y: GPUBuffer,
  dq: GPUBuffer,
  dkv: GPUBuffer,
): Promise<void> {
  const dims = gqaBlock(d, false);
  await p.add(
    'gqa_backward',
    'backward_q',
    [dims, q, k, v, probs, dy, y, dq],
    grid(Math.ceil((d.B * d.H * d.Tq) / 64)),
  );
  await p.add(
    'gqa_backward',
    'backward_kv',
    [dims, q, k, v, probs, dy, y, dkv],
    grid(Math.ceil((d.B * d.KV * d.Tk) / 64)),
  );
}

export interface FusedHeadDims {
  N: number;
  C: number;
  V: number;
  /** offset of the head (V, C) in the parameter buffer */
  wOff: number;
  temperature?: number;
  /** offset of the head's gradient in the gradient buffer */
  gOff?: number;
  /** how the parameter buffer is stored: f32 (default) or packed 16-bit halves */
  dtype?: BaseDtype;
  /** the vocabulary chunk of a workspace the call makes itself (default: headChunk's) */
  chunk?: number;
}

export function headBlock(d: FusedHeadDims): ArrayBuffer {
  return uniformBlock([
    u(d.N),
    u(d.C),
    u(d.V),
    u(d.wOff),
    f(1 / (d.temperature ?? 1)),
    u(d.gOff ?? 0),
    u(dtypeCode(d.dtype ?? 'f32')),
  ]);
}

/** The widest vocabulary chunk of the fused head: its workspace holds N × chunk f32 logits. */
export const HEAD_CHUNK = 4096;

/**
 * The fused head's vocabulary chunk for N rows: at most HEAD_CHUNK (and V), and narrow enough that the N × chunk
 * workspace fits one storage binding of `limit` bytes.
 */
export function headChunk(N: number, V: number, limit: number): number {
  const fit = Math.floor(limit / (4 * Math.max(1, N)));
  if (fit < 1) throw new Error(`fused head: ${N} rows do not fit one ${limit}-byte storage binding`);
  return Math.max(1, Math.min(HEAD_CHUNK, V, fit));
}

/** The fused head's workspace: one vocabulary chunk of logits (N × chunk) and the running per-row state (4·N). */
export interface HeadWork {
  logits: GPUBuffer;
  state: GPUBuffer;
  chunk: number;
}

/** A workspace for `fusedHeadForward` / `fusedHeadBackward` on N rows (shareable by programs run in turn). */
export function headWork(ctx: Program['ctx'], N: number, V: number): HeadWork {
  const { maxStorageBufferBindingSize: bind, maxBufferSize: max } = ctx.status.limits;
  const chunk = headChunk(N, V, Math.min(bind, max));
  return {
    logits: ctx.empty(N * chunk * 4, 'head.logits'),
    state: ctx.empty(4 * N * 4, 'head.state'),
    chunk,
  };
}

function chunksOf(V: number, chunk: number): { v0: number; width: number }[] {
  const out: { v0: number; width: number }[] = [];
  for (let v0 = 0; v0 < V; v0 += chunk) out.push({ v0, width: Math.min(chunk, V - v0) });
  return out;
}

function ownedWork(p: Program, d: FusedHeadDims, work?: HeadWork): HeadWork {
  if (work) return work;
  const { maxStorageBufferBindingSize: bind, maxBufferSize: max } = p.ctx.status.limits;
  const chunk = d.chunk ?? headChunk(d.N, d.V, Math.min(bind, max));
  return { logits: p.scratch(d.N * chunk * 4), state: p.scratch(16 * d.N), chunk };
}

/**
 * stats (3·N: logp, entropy, lse per row) of the fused head; targets 0xFFFFFFFF mark rows without one. Per
 * vocabulary chunk: the chunk's logits by the matmul kernel, folded into each row's online log-sum-exp. Returns
 * the head's uniform buffers (temperature lives there: rewrite them with headBlock).
 */
export async function fusedHeadForward(
  p: Program,
  d: FusedHeadDims,
  h: GPUBuffer,
  params: GPUBuffer,
  targets: GPUBuffer,
  stats: GPUBuffer,
  work?: HeadWork,
): Promise<GPUBuffer[]> {
  const w = ownedWork(p, d, work);
  const uniforms: GPUBuffer[] = [];
  for (const c of chunksOf(d.V, w.chunk)) {
    await matmul(p, {
      mode: 'nt',
      M: d.N,
      N: c.width,
      K: d.C,
      a: h,
      b: params,
      bOff: d.wOff + c.v0 * d.C,
      bDtype: d.dtype,
      c: w.logits,
    });
    const chunk = uniformBlock([u(c.v0), u(c.width)]);
    const [dims] = await p.add(
      'fused_head',
      'chunk_stats',
      [headBlock(d), chunk, w.logits, targets, w.state, stats],
      [Math.ceil(d.N / 64)],
    );
    uniforms.push(dims);
  }
  return uniforms;
}

/**
 * dh (N·C, overwritten) and grads[gOff..] += the head's gradient, from the forward's stats (no head gradient when
 * `grads` is null: a frozen head). Per vocabulary chunk: its logits again, ∂L/∂z in place, then dh += dz·W_chunk
 * and dW_chunk += dzᵀ·h by the matmul kernel. Returns the head's uniform buffers.
 */
export async function fusedHeadBackward(
  p: Program,
  d: FusedHeadDims,
  h: GPUBuffer,
  params: GPUBuffer,
  targets: GPUBuffer,
  weights: GPUBuffer,
  stats: GPUBuffer,
  dh: GPUBuffer,
  grads: GPUBuffer | null,
  work?: HeadWork,
): Promise<GPUBuffer[]> {
  const w = ownedWork(p, d, work);
  const uniforms: GPUBuffer[] = [];
  for (const c of chunksOf(d.V, w.chunk)) {
    const wOff = d.wOff + c.v0 * d.C;
    await matmul(p, {
      mode: 'nt',
      M: d.N,
      N: c.width,
      K: d.C,
      a: h,
      b: params,
      bOff: wOff,
      bDtype: d.dtype,
      c: w.logits,
    });
    const chunk = uniformBlock([u(c.v0), u(c.width)]);
    const [dims] = await p.add(
      'fused_head_backward',
      'dz',
      [headBlock(d), chunk, w.logits, targets, weights, stats],
      grid(Math.ceil((d.N * c.width) / 64)),
    );
    uniforms.push(dims);
    await matmul(p, {
      mode: 'nn',
      M: d.N,
      N: d.C,
      K: c.width,
      a: w.logits,
      b: params,
      bOff: wOff,
      bDtype: d.dtype,
      c: dh,
      accumulate: c.v0 > 0,
    });
    if (grads)
      await matmul(p, {
        mode: 'tn',
        M: c.width,
        N: d.C,
        K: d.N,
        a: w.logits,
        b: h as GPUBuffer,
        c: grads,
        cOff: (d.gOff ?? 0) + c.v0 * d.C,
        accumulate: true,
      });
  }
  return uniforms;
}
