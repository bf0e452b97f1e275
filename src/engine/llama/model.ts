/**
 * The Llama-family decoder on the CPU (the reference the WebGPU engine is held to, and the engine where no
 * WebGPU exists): token embedding, L pre-norm blocks of RMSNorm → grouped-query attention with rotary
 * embeddings (qwen3: per-head RMSNorm of q and k first; qwen2: qkv biases) → residual, RMSNorm → SwiGLU MLP →
 * residual, a final RMSNorm and the output head (the embedding when tied), computed as transformers'
 * LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM compute it.
 *
 * Parameters live in one flat Float32Array (matrices first, then norms and biases: weight decay applies below
 * `decayEnd`), each tensor under its Hugging Face name and in its HF orientation: linear weights (out, in),
 * y = x·Wᵀ + b. Positions come from the mask (position = number of real tokens before, as verl computes
 * position_ids), keys where the mask is 0 are never attended, so a left- or right-padded batch gives each row
 * the values of the row alone. The output head runs fused with the log-softmax (cpu/fusedLogprob.ts): no
 * (B·T·V) logits are materialised in the forward or the backward.
 */
import { fusedHeadBackwardCpu, fusedHeadForwardCpu } from '../cpu/fusedLogprob';
import { type GqaKernels, type GqaShape, gqaReference } from '../cpu/gqa';
import { matmulModeCpu } from '../cpu/matmul';
import { rmsnormBackwardCpu, rmsnormForwardCpu } from '../cpu/rmsnorm';
import { ropeApplyCpu, ropeTables } from '../cpu/rope';
import { swigluBackwardCpu, swigluForwardCpu } from '../cpu/swiglu';
import { type Batch, type Layout, layoutFromSpec, type MatmulFn } from '../model';
import { type LlamaConfig, ropeInvFreq } from './config';
import type { LoraAdapter, LoraSaved } from './lora';

/** The HF tensor names and shapes of a config, matrices first. */
export function llamaLayout(cfg: LlamaConfig): Layout {
  const { vocabSize: V, hidden: C, intermediate: F, heads: H, kvHeads: KV, headDim: D } = cfg;
  const spec: [string, number[]][] = [['model.embed_tokens.weight', [V, C]]];
  for (let l = 0; l < cfg.layers; l++) {
    const p = `model.layers.${l}.`;
    spec.push([`${p}self_attn.q_proj.weight`, [H * D, C]]);
    spec.push([`${p}self_attn.k_proj.weight`, [KV * D, C]]);
    spec.push([`${p}self_attn.v_proj.weight`, [KV * D, C]]);
    spec.push([`${p}self_attn.o_proj.weight`, [C, H * D]]);
    spec.push([`${p}mlp.gate_proj.weight`, [F, C]]);
    spec.push([`${p}mlp.up_proj.weight`, [F, C]]);
    spec.push([`${p}mlp.down_proj.weight`, [C, F]]);
  }
  if (!cfg.tiedEmbeddings) spec.push(['lm_head.weight', [V, C]]);
  const matrices = spec.length;
  for (let l = 0; l < cfg.layers; l++) {
    const p = `model.layers.${l}.`;
    spec.push([`${p}input_layernorm.weight`, [C]]);
    spec.push([`${p}post_attention_layernorm.weight`, [C]]);
    if (cfg.qkvBias) {
      spec.push([`${p}self_attn.q_proj.bias`, [H * D]]);
      spec.push([`${p}self_attn.k_proj.bias`, [KV * D]]);
      spec.push([`${p}self_attn.v_proj.bias`, [KV * D]]);
    }
    if (cfg.oBias) spec.push([`${p}self_attn.o_proj.bias`, [C]]);
    if (cfg.qkNorm) {
      spec.push([`${p}self_attn.q_norm.weight`, [D]]);
      spec.push([`${p}self_attn.k_norm.weight`, [D]]);
    }
  }
  spec.push(['model.norm.weight', [C]]);
  return layoutFromSpec(spec, matrices);
}

function view(layout: Layout, flat: Float32Array, name: string): Float32Array {
  const t = layout.byName.get(name);
  if (!t) throw new Error(`llama: no tensor ${name} in the layout`);
  return flat.subarray(t.offset, t.offset + t.size);
}

const maybe = (layout: Layout, flat: Float32Array, name: string) =>
  layout.byName.has(name) ? view(layout, flat, name) : undefined;

/** The head weights (V, C): lm_head, or the embedding when tied. */
export function headName(cfg: LlamaConfig): string {
  return cfg.tiedEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
}

/** Positions from a mask: the count of real tokens before each one in its row (0 for padding). */
export function positionsOf(mask: Float32Array, B: number, T: number): Int32Array {
  const pos = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    let n = 0;
    for (let t = 0; t < T; t++) {
      pos[b * T + t] = mask[b * T + t] !== 0 ? n : 0;
      if (mask[b * T + t] !== 0) n++;
    }
  }
  return pos;
}

/**
 * The (hidden row, target id) pairs the log-probs are taken at: position t ≥ 1 of row b when it and t−1 are
 * real tokens, predicted from the hidden state at t−1.
 */
export function targetRows(batch: Batch): { at: Int32Array; src: Int32Array; targets: Int32Array } {
  const { batchSize: B, seqLen: T, mask, tokens } = batch;
  const real = batch.attention ?? mask;
  const at: number[] = [];
  for (let b = 0; b < B; b++)
    for (let t = 1; t < T; t++) if (mask[b * T + t] !== 0 && real[b * T + t - 1] !== 0) at.push(b * T + t);
  const a = Int32Array.from(at);
  return { at: a, src: a.map((i) => i - 1), targets: a.map((i) => tokens[i]) };
}

interface LayerActs {
  x: Float32Array;
  h1: Float32Array;
  r1: Float32Array;
  /** q, k before qk-norm (qwen3 only) */
  qRaw?: Float32Array;
  kRaw?: Float32Array;
  rq?: Float32Array;
  rk?: Float32Array;
  /** q and k after norm and rotation, v */
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  probs: Float32Array;
  y: Float32Array;
  xMid: Float32Array;
  h2: Float32Array;
  r2: Float32Array;
  g: Float32Array;
  u: Float32Array;
  a: Float32Array;
  /** t = x·Aᵀ of each LoRA target (when an adapter ran) */
  lora?: LoraSaved;
}

export interface LlamaActivations {
  layers: LayerActs[];
  xOut: Float32Array;
  hf: Float32Array;
  rf: Float32Array;
  /** the gathered final rows the head runs on, their targets and where they sit in (B·T) */
  rows: { at: Int32Array; hidden: Float32Array; targets: Int32Array };
  lse: Float32Array;
  logp: Float32Array;
  entropy: Float32Array;
}

export interface LlamaForwardOptions {
  mm?: MatmulFn;
  /** vocabulary chunk of the fused head */
  chunk?: number;
  /** full distribution: top-k at these flat (B·T) positions (the distribution that predicts the next token) */
  topk?: { positions: number[]; k: number };
  /** a LoRA adapter added to the targeted projections (lora.ts); without it, the base model */
  lora?: LoraAdapter;
  /** the attention kernels (default: the reference loops of cpu/gqa.ts) */
  attention?: GqaKernels;
}

/** One block's attention and MLP on N = B·T rows in place on x, keeping what the backward needs. */
function blockForward(
  cfg: LlamaConfig,
  layout: Layout,
  flat: Float32Array,
  l: number,
  x: Float32Array,
  pos: Int32Array,
  rope: { cos: Float32Array; sin: Float32Array },
  keyMask: Float32Array | null,
  shape: GqaShape,
  mm: MatmulFn,
  kv: { k: Float32Array; v: Float32Array } | undefined,
  lora: LoraAdapter | undefined,
  attn: GqaKernels,
): LayerActs {
  const { hidden: C, intermediate: F, heads: H, kvHeads: KV, headDim: D, rmsEps: eps } = cfg;
  const N = shape.B * shape.Tq;
  const par = (n: string) => view(layout, flat, `model.layers.${l}.${n}`);
  const opt = (n: string) => maybe(layout, flat, `model.layers.${l}.${n}`);
  const h1 = new Float32Array(N * C);
  const r1 = new Float32Array(N);
  const xIn = new Float32Array(x);
  rmsnormForwardCpu(x, par('input_layernorm.weight'), h1, r1, N, C, eps);
  const q = new Float32Array(N * H * D);
  const k = new Float32Array(N * KV * D);
  const v = new Float32Array(N * KV * D);
  mm('nt', h1, par('self_attn.q_proj.weight'), q, N, H * D, C, { bias: opt('self_attn.q_proj.bias') });
  mm('nt', h1, par('self_attn.k_proj.weight'), k, N, KV * D, C, { bias: opt('self_attn.k_proj.bias') });
  mm('nt', h1, par('self_attn.v_proj.weight'), v, N, KV * D, C, { bias: opt('self_attn.v_proj.bias') });
  const acts: Partial<LayerActs> = { x: xIn, h1, r1 };
  const saved: LoraSaved | undefined = lora ? {} : undefined;
  if (lora) {
    acts.lora = saved;
    lora.forward(l, 'q_proj', h1, q, N, mm, saved);
    lora.forward(l, 'k_proj', h1, k, N, mm, saved);
    lora.forward(l, 'v_proj', h1, v, N, mm, saved);
  }
  if (cfg.qkNorm) {
    acts.qRaw = new Float32Array(q);
    acts.kRaw = new Float32Array(k);
    acts.rq = new Float32Array(N * H);
    acts.rk = new Float32Array(N * KV);
    rmsnormForwardCpu(acts.qRaw, par('self_attn.q_norm.weight'), q, acts.rq, N * H, D, eps);
    rmsnormForwardCpu(acts.kRaw, par('self_attn.k_norm.weight'), k, acts.rk, N * KV, D, eps);
  }
  ropeApplyCpu(q, pos, rope.cos, rope.sin, N, H, D);
  ropeApplyCpu(k, pos, rope.cos, rope.sin, N, KV, D);
  // decoding: the new keys and values join the cache, and attention reads the whole cache
  let K: Float32Array = k;
  let Vv: Float32Array = v;
  if (kv) {
    kv.k.set(k, shape.offset * KV * D);
    kv.v.set(v, shape.offset * KV * D);
    K = kv.k;
    Vv = kv.v;
  }
  const probs = new Float32Array(shape.B * H * shape.Tq * shape.Tk);
  const y = new Float32Array(N * H * D);
  attn.forward(q, K, Vv, keyMask, probs, y, shape);
  mm('nt', y, par('self_attn.o_proj.weight'), x, N, C, H * D, {
    bias: opt('self_attn.o_proj.bias'),
    accumulate: true,
  });
  lora?.forward(l, 'o_proj', y, x, N, mm, saved);
  const xMid = new Float32Array(x);
  const h2 = new Float32Array(N * C);
  const r2 = new Float32Array(N);
  rmsnormForwardCpu(x, par('post_attention_layernorm.weight'), h2, r2, N, C, eps);
  const g = new Float32Array(N * F);
  const u = new Float32Array(N * F);
  mm('nt', h2, par('mlp.gate_proj.weight'), g, N, F, C);
  mm('nt', h2, par('mlp.up_proj.weight'), u, N, F, C);
  lora?.forward(l, 'gate_proj', h2, g, N, mm, saved);
  lora?.forward(l, 'up_proj', h2, u, N, mm, saved);
  const a = new Float32Array(N * F);
  swigluForwardCpu(g, u, a);
  mm('nt', a, par('mlp.down_proj.weight'), x, N, C, F, { accumulate: true });
  lora?.forward(l, 'down_proj', a, x, N, mm, saved);
  return { ...acts, q, k, v, probs, y, xMid, h2, r2, g, u, a } as LayerActs;
}

function embed(flat: Float32Array, layout: Layout, tokens: ArrayLike<number>, C: number): Float32Array {
  const wte = view(layout, flat, 'model.embed_tokens.weight');
  const x = new Float32Array(tokens.length * C);
  for (let n = 0; n < tokens.length; n++) x.set(wte.subarray(tokens[n] * C, (tokens[n] + 1) * C), n * C);
  return x;
}

/** Forward of a padded batch: per-token log-probs and entropies (LogProbResult alignment) and the activations. */
export function llamaForwardCpu(
  cfg: LlamaConfig,
  layout: Layout,
  flat: Float32Array,
  batch: Batch,
  opts: LlamaForwardOptions = {},
): LlamaActivations & { topk?: { position: number; ids: number[]; logprobs: number[] }[] } {
  const mm = opts.mm ?? matmulModeCpu;
  const { batchSize: B, seqLen: T } = batch;
  const C = cfg.hidden;
  const N = B * T;
  const pos = positionsOf(batch.attention ?? batch.mask, B, T);
  const rope = ropeTables(ropeInvFreq(cfg), T);
  const x = embed(flat, layout, batch.tokens, C);
  const shape: GqaShape = { B, Tq: T, Tk: T, H: cfg.heads, KV: cfg.kvHeads, D: cfg.headDim, offset: 0 };
  const layers: LayerActs[] = [];
  for (let l = 0; l < cfg.layers; l++)
    layers.push(
      blockForward(
        cfg,
        layout,
        flat,
        l,
        x,
        pos,
        rope,
        batch.attention ?? batch.mask,
        shape,
        mm,
        undefined,
        opts.lora,
        opts.attention ?? gqaReference,
      ),
    );
  const hf = new Float32Array(N * C);
  const rf = new Float32Array(N);
  rmsnormForwardCpu(x, view(layout, flat, 'model.norm.weight'), hf, rf, N, C, cfg.rmsEps);
  const { at, src, targets } = targetRows(batch);
  // top-k rows ride along as extra head rows with no target
  const extra = opts.topk?.positions ?? [];
  for (const p of extra)
    if (!Number.isInteger(p) || p < 0 || p >= N) throw new Error(`topk: position ${p} is outside [0, ${N})`);
  const M = at.length + extra.length;
  const hidden = new Float32Array(M * C);
  const tg = new Int32Array(M).fill(-1);
  for (let i = 0; i < at.length; i++) {
    hidden.set(hf.subarray(src[i] * C, (src[i] + 1) * C), i * C);
    tg[i] = targets[i];
  }
  extra.forEach((p, i) => {
    hidden.set(hf.subarray(p * C, (p + 1) * C), (at.length + i) * C);
  });
  const head = view(layout, flat, headName(cfg));
  const r = fusedHeadForwardCpu(hidden, head, tg, M, C, cfg.vocabSize, mm, {
    temperature: batch.temperature ?? 1,
    chunk: opts.chunk,
    topk: opts.topk ? { rows: extra.map((_, i) => at.length + i), k: opts.topk.k } : undefined,
  });
  const logp = new Float32Array(N);
  const entropy = new Float32Array(N);
  for (let i = 0; i < at.length; i++) {
    logp[at[i]] = r.logp[i];
    entropy[at[i]] = r.entropy[i];
  }
  const out: LlamaActivations & { topk?: { position: number; ids: number[]; logprobs: number[] }[] } = {
    layers,
    xOut: x,
    hf,
    rf,
    rows: { at, hidden: hidden.subarray(0, at.length * C), targets: tg.subarray(0, at.length) },
    lse: r.lse.subarray(0, at.length),
    logp,
    entropy,
  };
  if (r.topk) out.topk = r.topk.map((t, i) => ({ position: extra[i], ids: t.ids, logprobs: t.logprobs }));
  return out;
}

/**
 * Backward of L = −Σ weights·logp into grads (overwritten, or added to when `accumulate`). With `lora` (the
 * adapter the forward ran with), its gradient goes to `loraGrads` (same rule); `grads: null` freezes the base:
 * no base-weight gradient is computed or stored, only the input gradients the adapter needs.
 */
export function llamaBackwardCpu(
  cfg: LlamaConfig,
  layout: Layout,
  flat: Float32Array,
  batch: Batch,
  acts: LlamaActivations,
  weights: Float32Array,
  grads: Float32Array | null,
  opts: {
    mm?: MatmulFn;
    chunk?: number;
    accumulate?: boolean;
    lora?: LoraAdapter;
    loraGrads?: Float32Array;
    attention?: GqaKernels;
  } = {},
): void {
  const mm = opts.mm ?? matmulModeCpu;
  const lora = opts.lora;
  const loraGrads = opts.loraGrads ?? null;
  if (!opts.accumulate) {
    grads?.fill(0);
    loraGrads?.fill(0);
  }
  const { batchSize: B, seqLen: T } = batch;
  const { hidden: C, intermediate: F, heads: H, kvHeads: KV, headDim: D } = cfg;
  const N = B * T;
  // a frozen base: weight-gradient products are skipped and norm-gain / bias gradients land in a scratch
  const scratch = new Float32Array(grads ? 0 : Math.max(C, F, H * D));
  const grad = (n: string) =>
    grads ? view(layout, grads, n) : scratch.subarray(0, Math.min(layoutSize(layout, n), scratch.length));
  const wgrad: MatmulFn = grads ? mm : () => {};
  const par = (n: string) => view(layout, flat, n);
  const M = acts.rows.at.length;
  const w = new Float32Array(M);
  for (let i = 0; i < M; i++) w[i] = weights[acts.rows.at[i]];
  const dRows = new Float32Array(M * C);
  fusedHeadBackwardCpu(
    acts.rows.hidden,
    par(headName(cfg)),
    acts.rows.targets,
    w,
    acts.lse,
    dRows,
    grads ? grad(headName(cfg)) : null,
    M,
    C,
    cfg.vocabSize,
    mm,
    {
      temperature: batch.temperature ?? 1,
      chunk: opts.chunk,
    },
  );
  const dhf = new Float32Array(N * C);
  for (let i = 0; i < M; i++) {
    const s = acts.rows.at[i] - 1;
    for (let c = 0; c < C; c++) dhf[s * C + c] += dRows[i * C + c];
  }
  const dx = new Float32Array(N * C);
  rmsnormBackwardCpu(
    acts.xOut,
    par('model.norm.weight'),
    acts.rf,
    dhf,
    dx,
    grad('model.norm.weight'),
    N,
    C,
    false,
  );
  const pos = positionsOf(batch.attention ?? batch.mask, B, T);
  const rope = ropeTables(ropeInvFreq(cfg), T);
  const shape: GqaShape = { B, Tq: T, Tk: T, H, KV, D, offset: 0 };
  const da = new Float32Array(N * F);
  const dg = new Float32Array(N * F);
  const du = new Float32Array(N * F);
  const dh = new Float32Array(N * C);
  const dy = new Float32Array(N * H * D);
  const dq = new Float32Array(N * H * D);
  const dk = new Float32Array(N * KV * D);
  const dv = new Float32Array(N * KV * D);
  for (let l = cfg.layers - 1; l >= 0; l--) {
    const a = acts.layers[l];
    const p = `model.layers.${l}.`;
    const opt = (n: string) => (grads ? maybe(layout, grads, p + n) : undefined);
    const ls = a.lora ?? {};
    // MLP: x_out = x_mid + down(silu(gate(h2))·up(h2))
    mm('nn', dx, par(`${p}mlp.down_proj.weight`), da, N, F, C);
    lora?.backward(l, 'down_proj', a.a, ls.down_proj, dx, da, N, mm, loraGrads);
    wgrad('tn', dx, a.a, grad(`${p}mlp.down_proj.weight`), C, F, N, { accumulate: true });
    swigluBackwardCpu(a.g, a.u, da, dg, du);
    mm('nn', dg, par(`${p}mlp.gate_proj.weight`), dh, N, C, F);
    mm('nn', du, par(`${p}mlp.up_proj.weight`), dh, N, C, F, { accumulate: true });
    lora?.backward(l, 'gate_proj', a.h2, ls.gate_proj, dg, dh, N, mm, loraGrads);
    lora?.backward(l, 'up_proj', a.h2, ls.up_proj, du, dh, N, mm, loraGrads);
    wgrad('tn', dg, a.h2, grad(`${p}mlp.gate_proj.weight`), F, C, N, { accumulate: true });
    wgrad('tn', du, a.h2, grad(`${p}mlp.up_proj.weight`), F, C, N, { accumulate: true });
    rmsnormBackwardCpu(
      a.xMid,
      par(`${p}post_attention_layernorm.weight`),
      a.r2,
      dh,
      dx,
      grad(`${p}post_attention_layernorm.weight`),
      N,
      C,
      true,
    );
    // attention: x_mid = x + o(attn(rope(norm(q)), rope(norm(k)), v))
    mm('nn', dx, par(`${p}self_attn.o_proj.weight`), dy, N, H * D, C);
    lora?.backward(l, 'o_proj', a.y, ls.o_proj, dx, dy, N, mm, loraGrads);
    wgrad('tn', dx, a.y, grad(`${p}self_attn.o_proj.weight`), C, H * D, N, { accumulate: true });
    const gob = opt('self_attn.o_proj.bias');
    if (gob) colsum(dx, N, C, gob);
    (opts.attention ?? gqaReference).backward(a.q, a.k, a.v, a.probs, dy, dq, dk, dv, shape);
    ropeApplyCpu(dq, pos, rope.cos, rope.sin, N, H, D, true);
    ropeApplyCpu(dk, pos, rope.cos, rope.sin, N, KV, D, true);
    let dqRaw = dq;
    let dkRaw = dk;
    if (cfg.qkNorm && a.qRaw && a.kRaw && a.rq && a.rk) {
      dqRaw = new Float32Array(N * H * D);
      dkRaw = new Float32Array(N * KV * D);
      rmsnormBackwardCpu(
        a.qRaw,
        par(`${p}self_attn.q_norm.weight`),
        a.rq,
        dq,
        dqRaw,
        grad(`${p}self_attn.q_norm.weight`),
        N * H,
        D,
        false,
      );
      rmsnormBackwardCpu(
        a.kRaw,
        par(`${p}self_attn.k_norm.weight`),
        a.rk,
        dk,
        dkRaw,
        grad(`${p}self_attn.k_norm.weight`),
        N * KV,
        D,
        false,
      );
    }
    mm('nn', dqRaw, par(`${p}self_attn.q_proj.weight`), dh, N, C, H * D);
    mm('nn', dkRaw, par(`${p}self_attn.k_proj.weight`), dh, N, C, KV * D, { accumulate: true });
    mm('nn', dv, par(`${p}self_attn.v_proj.weight`), dh, N, C, KV * D, { accumulate: true });
    lora?.backward(l, 'q_proj', a.h1, ls.q_proj, dqRaw, dh, N, mm, loraGrads);
    lora?.backward(l, 'k_proj', a.h1, ls.k_proj, dkRaw, dh, N, mm, loraGrads);
    lora?.backward(l, 'v_proj', a.h1, ls.v_proj, dv, dh, N, mm, loraGrads);
    wgrad('tn', dqRaw, a.h1, grad(`${p}self_attn.q_proj.weight`), H * D, C, N, { accumulate: true });
    wgrad('tn', dkRaw, a.h1, grad(`${p}self_attn.k_proj.weight`), KV * D, C, N, { accumulate: true });
    wgrad('tn', dv, a.h1, grad(`${p}self_attn.v_proj.weight`), KV * D, C, N, { accumulate: true });
    if (cfg.qkvBias && grads) {
      colsum(dqRaw, N, H * D, grad(`${p}self_attn.q_proj.bias`));
      colsum(dkRaw, N, KV * D, grad(`${p}self_attn.k_proj.bias`));
      colsum(dv, N, KV * D, grad(`${p}self_attn.v_proj.bias`));
    }
    rmsnormBackwardCpu(
      a.x,
      par(`${p}input_layernorm.weight`),
      a.r1,
      dh,
      dx,
      grad(`${p}input_layernorm.weight`),
      N,
      C,
      true,
    );
  }
  // embedding: scatter-add the residual gradient into the rows of the ids
  if (!grads) return;
  const dwte = grad('model.embed_tokens.weight');
  for (let n = 0; n < N; n++) {
    const o = batch.tokens[n] * C;
    for (let c = 0; c < C; c++) dwte[o + c] += dx[n * C + c];
  }
}

function layoutSize(layout: Layout, name: string): number {
  const t = layout.byName.get(name);
  if (!t) throw new Error(`llama: no tensor ${name} in the layout`);
  return t.size;
}

function colsum(x: Float32Array, M: number, N: number, out: Float32Array): void {
  for (let j = 0; j < N; j++) {
    let acc = 0;
    for (let i = 0; i < M; i++) acc += x[i * N + j];
    out[j] += acc;
  }
}

/**
 * Sampling state: a per-layer cache of rotated keys and values for `capacity` positions, fed one token or a
 * prompt at a time; `feed` returns the logits (V) after the last fed token (the full head on that one row).
 */
export class LlamaKvCache {
  readonly k: Float32Array[];
  readonly v: Float32Array[];
  length = 0;
  private readonly rope: { cos: Float32Array; sin: Float32Array };

  constructor(
    readonly cfg: LlamaConfig,
    readonly layout: Layout,
    readonly flat: Float32Array,
    readonly capacity: number,
    readonly mm: MatmulFn = matmulModeCpu,
    readonly lora?: LoraAdapter,
    readonly attention: GqaKernels = gqaReference,
  ) {
    const w = capacity * cfg.kvHeads * cfg.headDim;
    this.k = Array.from({ length: cfg.layers }, () => new Float32Array(w));
    this.v = Array.from({ length: cfg.layers }, () => new Float32Array(w));
    this.rope = ropeTables(ropeInvFreq(cfg), capacity);
  }

  feed(ids: ArrayLike<number>): Float32Array {
    const n = ids.length;
    if (n < 1) throw new Error('kv cache: feed needs at least one id');
    if (this.length + n > this.capacity)
      throw new Error(`kv cache: ${this.length + n} positions exceed the capacity ${this.capacity}`);
    const { hidden: C, vocabSize: V } = this.cfg;
    const x = embed(this.flat, this.layout, ids, C);
    const pos = Int32Array.from({ length: n }, (_, i) => this.length + i);
    const shape: GqaShape = {
      B: 1,
      Tq: n,
      Tk: this.length + n,
      H: this.cfg.heads,
      KV: this.cfg.kvHeads,
      D: this.cfg.headDim,
      offset: this.length,
    };
    for (let l = 0; l < this.cfg.layers; l++)
      blockForward(
        this.cfg,
        this.layout,
        this.flat,
        l,
        x,
        pos,
        this.rope,
        null,
        shape,
        this.mm,
        { k: this.k[l], v: this.v[l] },
        this.lora,
        this.attention,
      );
    this.length += n;
    const last = x.subarray((n - 1) * C, n * C);
    const hf = new Float32Array(C);
    rmsnormForwardCpu(
      last,
      view(this.layout, this.flat, 'model.norm.weight'),
      hf,
      new Float32Array(1),
      1,
      C,
      this.cfg.rmsEps,
    );
    const logits = new Float32Array(V);
    this.mm('nt', hf, view(this.layout, this.flat, headName(this.cfg)), logits, 1, V, C);
    return logits;
  }
}
