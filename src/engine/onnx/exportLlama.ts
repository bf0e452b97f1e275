/**
 * Exports a Llama-family model (`llama`, `qwen2`, `qwen3`: llama/config.ts) as ONNX, in two graphs built by one
 * decoder (`decoder` below), so onnxruntime and transformers.js run the same weights as a Hugging Face folder
 * read by llama/hfFolder.ts:
 *
 * - `exportLlamaOnnx`: a log-prob forward for a fixed (B, T) batch, no KV cache — the second runtime of
 *   `npm run bench:engine -- --model …` and its exactness tests. Inputs: `tokens` (B, T) int64, `mask` (B, T)
 *   float (1 real token, 0 padding), `targets` (B, T, 1) int64 (row t gathers token t+1: export.ts
 *   `onnxTargets`). Outputs: `target_logp` (B, T, 1) = log-softmax(logits) at the targets and `entropy`
 *   (B, T, 1) of the same distribution. Rows whose prediction is not a real pair (padding) hold numbers nobody
 *   should read, as in export.ts. Positions = the count of real tokens before each one (positionsOf, as an
 *   in-graph MatMul of the mask with a strictly upper-triangular ones matrix).
 * - `exportLlamaCausalLm`: the decoder with a KV cache in the layout Hugging Face's ONNX exports (optimum) use,
 *   so transformers.js's AutoModelForCausalLM loads and generates with it (causalLm.ts is the same for GPT-2):
 *     inputs   input_ids (batch_size, sequence_length) int64
 *              attention_mask (batch_size, total_sequence_length) int64, 1 = attend
 *              position_ids (batch_size, sequence_length) int64
 *              past_key_values.{l}.key / .value (batch_size, KV, past_sequence_length, D) float32
 *     outputs  logits (batch_size, sequence_length, V) float32
 *              present.{l}.key / .value (batch_size, KV, total_sequence_length, D) float32
 *   Query i sits at past_sequence_length + i and attends to key j when j ≤ that and attention_mask[b, j] = 1;
 *   its rotary angles come from position_ids (HF computes them as cumsum(mask) − 1, so left padding works).
 *
 * The decoder follows the CPU reference (llama/model.ts): rotary tables from `ropeInvFreq` (so `linear` and
 * `llama3` scaling match) gathered at the positions, RMSNorm with the statistic in f32, GQA by viewing the H
 * query heads as (KV, H/KV) groups against unrepeated keys (MatMul broadcasting; the cache keeps KV heads), the
 * causal + key-padding bias added before the softmax, SwiGLU, Qwen2's q/k/v biases as Gemm's C input, Qwen3's
 * per-head q_norm / k_norm, the head tied (one initializer shared with the embedding Gather) or untied. Linear
 * layers are Gemm with transB = 1 on the HF (out, in) weights, referenced (not copied) from the parameters.
 * Shapes are read from the inputs (Shape), so one graph serves any batch and length. Opset 17, IR 8.
 *
 * A protobuf message cannot exceed 2 GiB: past that (`externalAbove`, default proto.ts ONNX_INLINE_LIMIT) the
 * weights go to an external data file (`model.onnx_data`, as HF names it; proto.ts encodeModelFiles).
 */
import { ropeTables } from '../cpu/rope';
import { type LlamaConfig, ropeInvFreq } from '../llama/config';
import type { LlamaFolder } from '../llama/hfFolder';
import { headName } from '../llama/model';
import type { Layout } from '../model';
import { pastKeyName, pastValueName, presentKeyName, presentValueName } from './causalLm';
import type { FolderFiles } from './hfFolder';
import { DT, encodeModelFiles, GraphBuilder, intAttr, intsAttr, type OnnxFiles } from './proto';

export interface LlamaOnnxOptions {
  /** write the weights to an external data file when they exceed this many bytes (default: the 2 GiB limit) */
  externalAbove?: number;
  /** the external data file's name, beside the model (default `model.onnx_data`) */
  dataLocation?: string;
}

interface DecoderIo {
  /** (B, S) int64 token ids */
  ids: string;
  /** (B, S) int64 rotary positions */
  positions: string;
  /** rows of the rotary table (positions must stay below) */
  tableLength: number;
  /** (B, 1, 1, S, Tk) float attention bias */
  bias: string;
  /** layer l's keys / values (B, KV, S, D) → the ones to attend to (B, KV, Tk, D); default: themselves */
  cache?: (l: number, k: string, v: string) => { k: string; v: string };
}

function checkParams(cfg: LlamaConfig, layout: Layout, params: Float32Array): void {
  if (params.length !== layout.total)
    throw new Error(`llama onnx export: ${params.length} parameters for a layout of ${layout.total}`);
  if (cfg.headDim % 2 !== 0) throw new Error(`llama onnx export: head_dim ${cfg.headDim} must be even`);
}

/** The decoder on (B, S) ids: logits (B·S, V). Weights are initializers named as in the HF folder. */
function decoder(
  g: GraphBuilder,
  cfg: LlamaConfig,
  layout: Layout,
  params: Float32Array,
  io: DecoderIo,
): string {
  const { heads: H, kvHeads: KV, headDim: D, rmsEps: eps } = cfg;
  const G = H / KV;
  const half = D / 2;
  const weight = (name: string) => {
    const t = layout.byName.get(name);
    if (!t) throw new Error(`llama onnx export: no tensor ${name} in the layout`);
    if (!g.inits.some((i) => i.name === name))
      g.f32View(name, t.shape, params.subarray(t.offset, t.offset + t.size));
    return name;
  };
  const has = (name: string) => layout.byName.has(name);
  const bs = g.op('Shape', [io.ids]);
  // (B, S, …tail) from the ids' own shape
  const dims = (tail: number[]) => g.op('Concat', [bs, g.i64(g.fresh('tail'), tail)], [intAttr('axis', 0)]);
  const reshape = (x: string, shape: string) => g.op('Reshape', [x, shape]);
  const flat = (x: string, width: number) => reshape(x, g.i64(g.fresh('shape'), [-1, width]));
  const transpose = (x: string, perm: number[]) => g.op('Transpose', [x], [intsAttr('perm', perm)]);
  const unsqueeze = (x: string, axes: number[]) => g.op('Unsqueeze', [x, g.i64(g.fresh('axes'), axes)]);
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

  const rope = ropeTables(ropeInvFreq(cfg), io.tableLength);
  const cos = unsqueeze(
    g.op('Gather', [g.f32('rope_cos', [io.tableLength, half], rope.cos), io.positions]),
    [2],
  );
  const sin = unsqueeze(
    g.op('Gather', [g.f32('rope_sin', [io.tableLength, half], rope.sin), io.positions]),
    [2],
  );
  const halves = g.i64('rope_halves', [half, half]);
  // rotate-half on (B, S, heads, D): [a·cos − b·sin, b·cos + a·sin]
  const applyRope = (x: string) => {
    const [a, b] = g.opN('Split', [x, halves], [g.fresh('rope_a'), g.fresh('rope_b')], [intAttr('axis', 3)]);
    const lo = g.op('Sub', [g.op('Mul', [a, cos]), g.op('Mul', [b, sin])]);
    const hi = g.op('Add', [g.op('Mul', [b, cos]), g.op('Mul', [a, sin])]);
    return g.op('Concat', [lo, hi], [intAttr('axis', 3)]);
  };
  const scale = g.scalar(1 / Math.sqrt(D));
  const qShape = dims([H, D]);
  const kvShape = dims([KV, D]);
  const groupShape = dims([KV, G, D]);

  let x = g.op('Gather', [weight('model.embed_tokens.weight'), flat(io.ids, 1)]);
  x = flat(x, cfg.hidden);
  for (let l = 0; l < cfg.layers; l++) {
    const p = `model.layers.${l}.`;
    const h1 = rmsnorm(x, `${p}input_layernorm.weight`);
    let q = reshape(linear(h1, `${p}self_attn.q_proj.weight`, `${p}self_attn.q_proj.bias`), qShape);
    let k = reshape(linear(h1, `${p}self_attn.k_proj.weight`, `${p}self_attn.k_proj.bias`), kvShape);
    const v = reshape(linear(h1, `${p}self_attn.v_proj.weight`, `${p}self_attn.v_proj.bias`), kvShape);
    if (cfg.qkNorm) {
      q = rmsnorm(q, `${p}self_attn.q_norm.weight`);
      k = rmsnorm(k, `${p}self_attn.k_norm.weight`);
    }
    q = applyRope(q);
    k = applyRope(k);
    // (B, KV, S, D), the cache's layout; then the keys and values attended to (B, KV, Tk, D)
    const kv = (io.cache ?? ((_l, kk, vv) => ({ k: kk, v: vv })))(
      l,
      transpose(k, [0, 2, 1, 3]),
      transpose(v, [0, 2, 1, 3]),
    );
    // query head h = kv·G + j reads kv head kv: q (B, KV, G, S, D) against k (B, KV, 1, D, Tk)
    const qg = transpose(reshape(q, groupShape), [0, 2, 3, 1, 4]);
    const kg = unsqueeze(transpose(kv.k, [0, 1, 3, 2]), [2]);
    const vg = unsqueeze(kv.v, [2]);
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [qg, kg]), scale]), io.bias]);
    const probs = g.op('Softmax', [scores], [intAttr('axis', -1)]);
    const y = flat(transpose(g.op('MatMul', [probs, vg]), [0, 3, 1, 2, 4]), H * D);
    x = g.op('Add', [x, linear(y, `${p}self_attn.o_proj.weight`, `${p}self_attn.o_proj.bias`)]);
    const h2 = rmsnorm(x, `${p}post_attention_layernorm.weight`);
    const gate = linear(h2, `${p}mlp.gate_proj.weight`);
    const up = linear(h2, `${p}mlp.up_proj.weight`);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, linear(act, `${p}mlp.down_proj.weight`)]);
  }
  return reshape(linear(rmsnorm(x, 'model.norm.weight'), headName(cfg)), dims([cfg.vocabSize]));
}

const external = (o: LlamaOnnxOptions) => ({
  location: o.dataLocation ?? 'model.onnx_data',
  above: o.externalAbove,
});

/** The fixed-batch log-prob forward (see the file comment). */
export function exportLlamaOnnx(
  cfg: LlamaConfig,
  layout: Layout,
  params: Float32Array,
  B: number,
  T: number,
  opts: LlamaOnnxOptions = {},
): OnnxFiles {
  if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1)
    throw new Error(`llama onnx export: batch ${B}x${T} must be positive integers`);
  checkParams(cfg, layout, params);
  const g = new GraphBuilder();
  // positions: the count of real tokens before each one (mask · strictly-upper ones), as int64 row indices
  const upper = new Float32Array(T * T);
  for (let s = 0; s < T; s++) for (let t = s + 1; t < T; t++) upper[s * T + t] = 1;
  const positions = g.op(
    'Cast',
    [g.op('MatMul', ['mask', g.f32('upper_ones', [T, T], upper)])],
    [intAttr('to', DT.INT64)],
  );
  // attention bias (B, 1, 1, T, T): causal (key j > query i) and padding keys get −1e9
  const causal = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) causal[i * T + j] = -1e9;
  const keyBias = g.op('Reshape', [
    g.op('Mul', [g.op('Sub', ['mask', g.scalar(1)]), g.scalar(1e9)]),
    g.i64('key_bias_shape', [B, 1, 1, 1, T]),
  ]);
  const bias = g.op('Add', [keyBias, g.f32('causal_bias', [T, T], causal)]);
  const logits = decoder(g, cfg, layout, params, { ids: 'tokens', positions, tableLength: T, bias });
  const logsm = g.op('LogSoftmax', [logits], [intAttr('axis', -1)]);
  g.opN('GatherElements', [logsm, 'targets'], ['target_logp'], [intAttr('axis', 2)]);
  const plogp = g.op('Mul', [g.op('Exp', [logsm]), logsm]);
  g.opN(
    'Neg',
    [g.op('ReduceSum', [plogp, g.i64('vocab_axis', [-1])], [intAttr('keepdims', 1)])],
    ['entropy'],
  );
  return encodeModelFiles(
    g,
    {
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
    },
    external(opts),
  );
}

/**
 * The KV-cache causal LM in HF's ONNX layout (see the file comment): `onnx/model.onnx` and, past the inline
 * limit, its `model.onnx_data`. Positions reach `contextLength` (default max_position_embeddings) at most.
 */
export function exportLlamaCausalLm(
  cfg: LlamaConfig,
  layout: Layout,
  params: Float32Array,
  opts: LlamaOnnxOptions & { contextLength?: number } = {},
): OnnxFiles {
  checkParams(cfg, layout, params);
  const ctx = opts.contextLength ?? cfg.maxPositions;
  if (!Number.isInteger(ctx) || ctx < 1)
    throw new Error(`llama onnx export: contextLength ${ctx} must be a positive integer`);
  const { kvHeads: KV, headDim: D } = cfg;
  const g = new GraphBuilder();
  // S (this step's tokens), Tk (all keys) and P = Tk − S (the cache's length), as int64 scalars
  const zero = g.scalarI64(0);
  const one = g.scalarI64(1);
  const S = g.op('Gather', [g.op('Shape', ['input_ids']), one], [intAttr('axis', 0)]);
  const Tk = g.op('Gather', [g.op('Shape', ['attention_mask']), one], [intAttr('axis', 0)]);
  const P = g.op('Sub', [Tk, S]);
  // causal: key j is in the future of query i (absolute P + i) when j > P + i
  const keys = g.op('Unsqueeze', [g.op('Range', [zero, Tk, one]), g.i64('axes_q', [0])]);
  const queries = g.op('Unsqueeze', [g.op('Range', [P, Tk, one]), g.i64('axes_k', [1])]);
  const causal = g.op('Where', [g.op('Greater', [keys, queries]), g.scalar(-1e9), g.scalar(0)]);
  const mask = g.op('Cast', ['attention_mask'], [intAttr('to', DT.FLOAT)]);
  const keyBias = g.op('Unsqueeze', [
    g.op('Mul', [g.op('Sub', [mask, g.scalar(1)]), g.scalar(1e9)]),
    g.i64('axes_bias', [1, 2, 3]),
  ]);
  const bias = g.op('Add', [keyBias, causal]);
  const logits = decoder(g, cfg, layout, params, {
    ids: 'input_ids',
    positions: 'position_ids',
    tableLength: ctx,
    bias,
    cache: (l, k, v) => ({
      k: g.op('Concat', [pastKeyName(l), k], [intAttr('axis', 2)], presentKeyName(l)),
      v: g.op('Concat', [pastValueName(l), v], [intAttr('axis', 2)], presentValueName(l)),
    }),
  });
  g.op('Identity', [logits], [], 'logits');
  const cacheDims = (len: string) => ['batch_size', KV, len, D];
  const layers = Array.from({ length: cfg.layers }, (_, l) => l);
  return encodeModelFiles(
    g,
    {
      name: `${cfg.modelType}_causal_lm`,
      inputs: [
        { name: 'input_ids', elemType: DT.INT64, dims: ['batch_size', 'sequence_length'] },
        { name: 'attention_mask', elemType: DT.INT64, dims: ['batch_size', 'total_sequence_length'] },
        { name: 'position_ids', elemType: DT.INT64, dims: ['batch_size', 'sequence_length'] },
        ...layers.flatMap((l) => [
          { name: pastKeyName(l), elemType: DT.FLOAT, dims: cacheDims('past_sequence_length') },
          { name: pastValueName(l), elemType: DT.FLOAT, dims: cacheDims('past_sequence_length') },
        ]),
      ],
      outputs: [
        { name: 'logits', elemType: DT.FLOAT, dims: ['batch_size', 'sequence_length', cfg.vocabSize] },
        ...layers.flatMap((l) => [
          { name: presentKeyName(l), elemType: DT.FLOAT, dims: cacheDims('total_sequence_length') },
          { name: presentValueName(l), elemType: DT.FLOAT, dims: cacheDims('total_sequence_length') },
        ]),
      ],
    },
    external(opts),
  );
}

const jsonFile = (v: unknown) => new TextEncoder().encode(`${JSON.stringify(v, null, 2)}\n`);

/**
 * A Llama-family folder (safetensors weights, read by llama/hfFolder.ts) as the HF ONNX folder transformers.js
 * loads (hfFolder.ts's layout): the folder's config.json with `transformers.js_config`, its generation config
 * and tokenizer files, `onnx/model.onnx` (exportLlamaCausalLm) and, past the inline limit, `onnx/model.onnx_data`.
 */
export function exportLlamaHfFolder(
  folder: LlamaFolder,
  opts: { externalAbove?: number; contextLength?: number } = {},
): FolderFiles {
  const onnx = exportLlamaCausalLm(folder.config, folder.layout, folder.params, {
    externalAbove: opts.externalAbove,
    contextLength: opts.contextLength,
  });
  const files: FolderFiles = new Map();
  files.set(
    'config.json',
    jsonFile({
      ...folder.rawConfig,
      torch_dtype: 'float32',
      'transformers.js_config': { dtype: 'fp32', use_external_data_format: onnx.data ? 1 : false },
    }),
  );
  if (folder.generationConfig) files.set('generation_config.json', jsonFile(folder.generationConfig));
  files.set('tokenizer.json', jsonFile(folder.tokenizer.tokenizerJson));
  files.set('tokenizer_config.json', jsonFile(folder.tokenizer.tokenizerConfig));
  files.set('onnx/model.onnx', onnx.model);
  if (onnx.data && onnx.location) files.set(`onnx/${onnx.location}`, onnx.data);
  return files;
}
