/**
 * Exports a Llama-family model (`llama`, `qwen2`, `qwen3`: llama/config.ts) as an ONNX log-prob forward for a fixed
 * (B, T) batch, so onnxruntime-web can run the same weights as a Hugging Face folder read by llama/hfFolder.ts —
 * a second runtime for `npm run bench:engine -- --model …` and its exactness tests. No KV cache: one forward of the
 * whole padded batch.
 *
 * Inputs: `tokens` (B, T) int64, `mask` (B, T) float (1 real token, 0 padding), `targets` (B, T, 1) int64 (row t
 * gathers token t+1: export.ts `onnxTargets`). Outputs: `target_logp` (B, T, 1) = log-softmax(logits) at the
 * targets and `entropy` (B, T, 1) of the same distribution. Rows whose prediction is not a real pair (padding) hold
 * numbers nobody should read, as in export.ts.
 *
 * The graph follows the CPU reference (llama/model.ts): positions = the count of real tokens before each one
 * (positionsOf, as an in-graph MatMul of the mask with a strictly upper-triangular ones matrix), rotary tables from
 * `ropeInvFreq` (so `linear` and `llama3` scaling match), RMSNorm with the statistic in f32, GQA by viewing the H
 * query heads as (KV, H/KV) groups against unrepeated keys (MatMul broadcasting), the causal + key-padding bias
 * added before the softmax, SwiGLU, Qwen2's q/k/v biases as Gemm's C input, Qwen3's per-head q_norm / k_norm,
 * the head tied (one initializer shared with the embedding Gather) or untied. Linear layers are Gemm with
 * transB = 1 on the HF (out, in) weights, so no weight is transposed or copied twice. Opset 17, IR 8.
 *
 * A protobuf message cannot exceed 2 GiB and this writes every weight inline (no external data), so the flat
 * f32 parameters must stay under that: `llamaOnnxUnfit` says why a model does not.
 */
import { ropeTables } from '../cpu/rope';
import { type LlamaConfig, ropeInvFreq } from '../llama/config';
import { headName } from '../llama/model';
import type { Layout } from '../model';
import { DT, encodeModel, GraphBuilder, intAttr, intsAttr } from './proto';

/** Bytes one inline ONNX model may hold (protobuf's 2 GiB message limit), less room for the graph itself. */
export const ONNX_INLINE_LIMIT = 2 ** 31 - 2 ** 24;

/** Why a model cannot be exported inline (its f32 weights exceed the protobuf limit), or null. */
export function llamaOnnxUnfit(layout: Layout): string | null {
  const bytes = layout.total * 4;
  if (bytes <= ONNX_INLINE_LIMIT) return null;
  return (
    `its f32 weights (${(bytes / 2 ** 20).toFixed(0)} MiB) exceed what one ONNX protobuf can hold inline ` +
    `(${(ONNX_INLINE_LIMIT / 2 ** 20).toFixed(0)} MiB; the 2 GiB message limit) and the export writes no external data`
  );
}

export function exportLlamaOnnx(
  cfg: LlamaConfig,
  layout: Layout,
  params: Float32Array,
  B: number,
  T: number,
): Uint8Array {
  if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1)
    throw new Error(`llama onnx export: batch ${B}x${T} must be positive integers`);
  if (params.length !== layout.total)
    throw new Error(`llama onnx export: ${params.length} parameters for a layout of ${layout.total}`);
  const unfit = llamaOnnxUnfit(layout);
  if (unfit) throw new Error(`llama onnx export: ${unfit}`);
  const { heads: H, kvHeads: KV, headDim: D, vocabSize: V, rmsEps: eps } = cfg;
  const G = H / KV;
  const N = B * T;
  const half = D / 2;
  const g = new GraphBuilder();
  const weight = (name: string) => {
    const t = layout.byName.get(name);
    if (!t) throw new Error(`llama onnx export: no tensor ${name} in the layout`);
    if (!g.inits.some((i) => i.name === name))
      g.f32(name, t.shape, params.subarray(t.offset, t.offset + t.size));
    return name;
  };
  const has = (name: string) => layout.byName.has(name);
  const shape = (dims: number[]) => g.i64(g.fresh('shape'), dims);
  const reshape = (x: string, dims: number[]) => g.op('Reshape', [x, shape(dims)]);
  const transpose = (x: string, perm: number[]) => g.op('Transpose', [x], [intsAttr('perm', perm)]);
  const epsC = g.scalar(eps);
  // y = x / √(mean(x²) + eps) · w over the last axis
  const rmsnorm = (x: string, w: string) => {
    const ms = g.op('ReduceMean', [g.op('Mul', [x, x])], [intsAttr('axes', [-1]), intAttr('keepdims', 1)]);
    const r = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [ms, epsC])])]);
    return g.op('Mul', [g.op('Mul', [x, r]), weight(w)]);
  };
  // x (N, in) · Wᵀ (+ b) with W stored (out, in)
  const linear = (x: string, w: string, b?: string) =>
    g.op('Gemm', b && has(b) ? [x, weight(w), weight(b)] : [x, weight(w)], [intAttr('transB', 1)]);

  // positions: the count of real tokens before each one (mask · strictly-upper ones), as int64 row indices
  const upper = new Float32Array(T * T);
  for (let s = 0; s < T; s++) for (let t = s + 1; t < T; t++) upper[s * T + t] = 1;
  const pos = g.op(
    'Cast',
    [g.op('MatMul', ['mask', g.f32('upper_ones', [T, T], upper)])],
    [intAttr('to', DT.INT64)],
  );
  const rope = ropeTables(ropeInvFreq(cfg), T);
  const cos = reshape(g.op('Gather', [g.f32('rope_cos', [T, half], rope.cos), pos]), [B, T, 1, half]);
  const sin = reshape(g.op('Gather', [g.f32('rope_sin', [T, half], rope.sin), pos]), [B, T, 1, half]);
  const halves = g.i64('rope_halves', [half, half]);
  // rotate-half on (B, T, heads, D): [a·cos − b·sin, b·cos + a·sin]
  const applyRope = (x: string) => {
    const [a, b] = g.opN('Split', [x, halves], [g.fresh('rope_a'), g.fresh('rope_b')], [intAttr('axis', 3)]);
    const lo = g.op('Sub', [g.op('Mul', [a, cos]), g.op('Mul', [b, sin])]);
    const hi = g.op('Add', [g.op('Mul', [b, cos]), g.op('Mul', [a, sin])]);
    return g.op('Concat', [lo, hi], [intAttr('axis', 3)]);
  };
  // attention bias (B, 1, 1, T, T): causal (key j > query i) and padding keys get −1e9
  const causal = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) causal[i * T + j] = -1e9;
  const keyBias = reshape(g.op('Mul', [g.op('Sub', ['mask', g.scalar(1)]), g.scalar(1e9)]), [B, 1, 1, 1, T]);
  const bias = g.op('Add', [keyBias, g.f32('causal_bias', [T, T], causal)]);
  const scale = g.scalar(1 / Math.sqrt(D));

  let x = g.op('Gather', [weight('model.embed_tokens.weight'), reshape('tokens', [N])]);
  for (let l = 0; l < cfg.layers; l++) {
    const p = `model.layers.${l}.`;
    const h1 = rmsnorm(x, `${p}input_layernorm.weight`);
    let q = reshape(linear(h1, `${p}self_attn.q_proj.weight`, `${p}self_attn.q_proj.bias`), [B, T, H, D]);
    let k = reshape(linear(h1, `${p}self_attn.k_proj.weight`, `${p}self_attn.k_proj.bias`), [B, T, KV, D]);
    const v = reshape(linear(h1, `${p}self_attn.v_proj.weight`, `${p}self_attn.v_proj.bias`), [B, T, KV, D]);
    if (cfg.qkNorm) {
      q = rmsnorm(q, `${p}self_attn.q_norm.weight`);
      k = rmsnorm(k, `${p}self_attn.k_norm.weight`);
    }
    q = applyRope(q);
    k = applyRope(k);
    // query head h = kv·G + j reads kv head kv: q (B, KV, G, T, D) against k (B, KV, 1, D, T)
    const qg = transpose(reshape(q, [B, T, KV, G, D]), [0, 2, 3, 1, 4]);
    const kg = reshape(transpose(k, [0, 2, 3, 1]), [B, KV, 1, D, T]);
    const vg = reshape(transpose(v, [0, 2, 1, 3]), [B, KV, 1, T, D]);
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [qg, kg]), scale]), bias]);
    const probs = g.op('Softmax', [scores], [intAttr('axis', -1)]);
    const y = reshape(transpose(g.op('MatMul', [probs, vg]), [0, 3, 1, 2, 4]), [N, H * D]);
    x = g.op('Add', [x, linear(y, `${p}self_attn.o_proj.weight`, `${p}self_attn.o_proj.bias`)]);
    const h2 = rmsnorm(x, `${p}post_attention_layernorm.weight`);
    const gate = linear(h2, `${p}mlp.gate_proj.weight`);
    const up = linear(h2, `${p}mlp.up_proj.weight`);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, linear(act, `${p}mlp.down_proj.weight`)]);
  }
  const logits = reshape(linear(rmsnorm(x, 'model.norm.weight'), headName(cfg)), [B, T, V]);
  const logsm = g.op('LogSoftmax', [logits], [intAttr('axis', -1)]);
  g.opN('GatherElements', [logsm, 'targets'], ['target_logp'], [intAttr('axis', 2)]);
  const plogp = g.op('Mul', [g.op('Exp', [logsm]), logsm]);
  g.opN(
    'Neg',
    [g.op('ReduceSum', [plogp, g.i64('vocab_axis', [-1])], [intAttr('keepdims', 1)])],
    ['entropy'],
  );
  return encodeModel(g, {
    name: `${cfg.modelType}_logprob_forward`,
    inputs: [
      { name: 'tokens', elemType: DT.INT64, dims: [B, T] },
      { name: 'mask', elemType: DT.FLOAT, dims: [B, T] },
      { name: 'targets', elemType: DT.INT64, dims: [B, T, 1] },
    ],
    outputs: [
      { name: 'target_logp', elemType: DT.FLOAT, dims: [B, T, 1] },
      { name: 'entropy', elemType: DT.FLOAT, dims: [B, T, 1] },
    ],
  });
}
