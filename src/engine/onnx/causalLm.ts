/**
 * The policy as a standard ONNX causal LM with a KV cache, in the layout Hugging Face's GPT-2 exports use (the
 * policy IS GPT-2 in shape: learned positions, pre-LayerNorm blocks, tanh GELU, tied head, Conv1D-style (in, out)
 * weights), so transformers.js and onnxruntime load it as an ordinary text-generation model:
 *
 *   inputs   input_ids (batch_size, sequence_length) int64
 *            attention_mask (batch_size, total_sequence_length) int64, 1 = attend
 *            position_ids (batch_size, sequence_length) int64
 *            past_key_values.{l}.key / .value (batch_size, H, past_sequence_length, C/H) float32
 *   outputs  logits (batch_size, sequence_length, V) float32
 *            present.{l}.key / .value (batch_size, H, total_sequence_length, C/H) float32
 *
 * total_sequence_length = past_sequence_length + sequence_length. Query i sits at absolute position
 * past_sequence_length + i and attends to key j when j ≤ that position and attention_mask[b, j] = 1 (left
 * padding works; the positions come from position_ids, as HF computes them: cumsum(mask) − 1).
 *
 * Weight precision (`WeightPrecision`) is what the rollout engine computes with, a knob for a controlled
 * engine/trainer mismatch; activations, KV cache and logits stay float32 on every precision:
 *   f32   weights as trained
 *   f16   every matrix stored as float16 and Cast to float32 in the graph (weight-only f16)
 *   int8  every matrix stored as int8 with one float32 scale per output channel (symmetric, zero point 0,
 *         scale = max|w| / 127, q = round(w / scale)) and DequantizeLinear'd in the graph (weight-only int8)
 * Matrices are wte, wpe and the four linear weights of each block; biases and LayerNorm parameters stay float32.
 * `roundWeights` gives the float32 parameters the engine effectively uses, so the CPU reference can run them.
 */
import { f16ToF32, f32ToF16Bits } from '../cpu/half';
import { type Layout, layoutOf, type PolicyConfig, views } from '../model';
import { DT, encodeModel, floatAttr, GraphBuilder, intAttr, intsAttr, type ValueInfo } from './proto';

export const WEIGHT_PRECISIONS = ['f32', 'f16', 'int8'] as const;
export type WeightPrecision = (typeof WEIGHT_PRECISIONS)[number];

export function isWeightPrecision(s: string): s is WeightPrecision {
  return (WEIGHT_PRECISIONS as readonly string[]).includes(s);
}

/** Per-output-channel axis of each matrix: linear weights are (in, out) → columns; wte/wpe rows (wte is also the head). */
function channelAxis(name: string): 0 | 1 {
  return name === 'wte' || name === 'wpe' ? 0 : 1;
}

function isMatrix(layout: Layout, name: string): boolean {
  return layout.byName.get(name)?.shape.length === 2;
}

/** Symmetric per-channel int8 quantization of a (rows, cols) matrix along `axis`. */
export function quantizeInt8(
  w: Float32Array,
  rows: number,
  cols: number,
  axis: 0 | 1,
): { q: Int8Array; scale: Float32Array } {
  const n = axis === 0 ? rows : cols;
  const scale = new Float32Array(n);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      const ch = axis === 0 ? r : c;
      const a = Math.abs(w[r * cols + c]);
      if (a > scale[ch]) scale[ch] = a;
    }
  for (let i = 0; i < n; i++) scale[i] = scale[i] > 0 ? scale[i] / 127 : 1;
  const q = new Int8Array(rows * cols);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      const s = scale[axis === 0 ? r : c];
      q[r * cols + c] = Math.max(-127, Math.min(127, Math.round(w[r * cols + c] / s)));
    }
  return { q, scale };
}

/** The float32 parameters an engine of this precision computes with (f32: a copy). */
export function roundWeights(
  cfg: PolicyConfig,
  params: Float32Array,
  precision: WeightPrecision,
): Float32Array {
  const layout = layoutOf(cfg);
  const out = new Float32Array(params);
  if (precision === 'f32') return out;
  for (const t of layout.tensors) {
    if (t.shape.length !== 2) continue;
    const v = out.subarray(t.offset, t.offset + t.size);
    if (precision === 'f16') for (let i = 0; i < v.length; i++) v[i] = f16ToF32(f32ToF16Bits(v[i]));
    else {
      const [rows, cols] = t.shape;
      const axis = channelAxis(t.name);
      const { q, scale } = quantizeInt8(v, rows, cols, axis);
      for (let r = 0; r < rows; r++)
        for (let c = 0; c < cols; c++)
          v[r * cols + c] = Math.fround(q[r * cols + c] * scale[axis === 0 ? r : c]);
    }
  }
  return out;
}

export interface CausalLmExportOptions {
  precision?: WeightPrecision;
}

/** Names of the cache inputs/outputs of layer l, as HF exports name them. */
export const pastKeyName = (l: number) => `past_key_values.${l}.key`;
export const pastValueName = (l: number) => `past_key_values.${l}.value`;
export const presentKeyName = (l: number) => `present.${l}.key`;
export const presentValueName = (l: number) => `present.${l}.value`;

/** `onnx/model.onnx` bytes: the policy with KV cache at the chosen weight precision. */
export function exportCausalLm(
  cfg: PolicyConfig,
  params: Float32Array,
  opts: CausalLmExportOptions = {},
): Uint8Array {
  const precision = opts.precision ?? 'f32';
  const layout = layoutOf(cfg);
  if (params.length !== layout.total)
    throw new Error(`onnx export: params has ${params.length} values, the layout needs ${layout.total}`);
  for (let i = 0; i < params.length; i++)
    if (!Number.isFinite(params[i])) {
      const t = layout.tensors.find((e) => i >= e.offset && i < e.offset + e.size);
      throw new Error(`onnx export: parameter ${t?.name}[${i - (t?.offset ?? 0)}] is ${params[i]}`);
    }
  const { width: C, heads: H, vocabSize: V, layers: L } = cfg;
  const hs = C / H;
  const p = views(layout, params);
  const g = new GraphBuilder();

  /** A float32 value for parameter `name`, stored at the export's precision. */
  const weight = (name: string): string => {
    const t = layout.byName.get(name);
    if (!t) throw new Error(`onnx export: no parameter ${name}`);
    if (!isMatrix(layout, name) || precision === 'f32') return g.f32(name, t.shape, p[name]);
    if (precision === 'f16')
      return g.op('Cast', [g.f16(`${name}.f16`, t.shape, p[name])], [intAttr('to', DT.FLOAT)]);
    const [rows, cols] = t.shape;
    const axis = channelAxis(name);
    const { q, scale } = quantizeInt8(p[name], rows, cols, axis);
    const qName = g.raw(`${name}.int8`, t.shape, DT.INT8, new Uint8Array(q.buffer));
    const sName = g.f32(`${name}.scale`, [scale.length], scale);
    return g.op('DequantizeLinear', [qName, sName], [intAttr('axis', axis)]);
  };
  const ln = (x: string, prefix: string) =>
    g.op(
      'LayerNormalization',
      [x, weight(`${prefix}.w`), weight(`${prefix}.b`)],
      [intAttr('axis', -1), floatAttr('epsilon', 1e-5)],
    );
  const linear = (x: string, prefix: string) =>
    g.op('Add', [g.op('MatMul', [x, weight(`${prefix}.w`)]), weight(`${prefix}.b`)]);

  // Additive attention bias (batch, 1, S, T): 0 where key j ≤ past + i and attention_mask[b, j] = 1, else -1e30.
  const one = g.scalarI64(1);
  const seqLen = g.op('Gather', [g.op('Shape', ['input_ids']), one], [intAttr('axis', 0)]);
  const totalLen = g.op('Gather', [g.op('Shape', ['attention_mask']), one], [intAttr('axis', 0)]);
  const pastLen = g.op('Sub', [totalLen, seqLen]);
  const keyPos = g.op('Range', [g.scalarI64(0), totalLen, one]);
  const queryPos = g.op('Range', [pastLen, totalLen, one]);
  const causal = g.op('LessOrEqual', [
    g.op('Unsqueeze', [keyPos, g.i64(g.fresh('axes'), [0])]),
    g.op('Unsqueeze', [queryPos, g.i64(g.fresh('axes'), [1])]),
  ]);
  const attend = g.op(
    'Cast',
    [g.op('Unsqueeze', ['attention_mask', g.i64(g.fresh('axes'), [1, 2])])],
    [intAttr('to', DT.BOOL)],
  );
  const bias = g.op('Where', [g.op('And', [causal, attend]), g.scalar(0), g.scalar(-1e30)]);

  const wte = weight('wte');
  let x = g.op('Add', [g.op('Gather', [wte, 'input_ids']), g.op('Gather', [weight('wpe'), 'position_ids'])]);
  const headShape = g.i64('head_shape', [0, 0, H, hs]);
  const flatShape = g.i64('flat_shape', [0, 0, C]);
  const splits = g.i64('qkv_split', [C, C, C]);
  const scale = g.scalar(1 / Math.sqrt(hs));
  const toHeads = (t: string) =>
    g.op('Transpose', [g.op('Reshape', [t, headShape])], [intsAttr('perm', [0, 2, 1, 3])]);
  for (let l = 0; l < L; l++) {
    const h = `h${l}.`;
    const qkv = linear(ln(x, `${h}ln1`), `${h}attn.qkv`);
    const [q, k, v] = g.opN('Split', [qkv, splits], [`q${l}`, `k${l}`, `v${l}`], [intAttr('axis', 2)]);
    const keys = g.op('Concat', [pastKeyName(l), toHeads(k)], [intAttr('axis', 2)], presentKeyName(l));
    const values = g.op('Concat', [pastValueName(l), toHeads(v)], [intAttr('axis', 2)], presentValueName(l));
    const scores = g.op('Add', [
      g.op('Mul', [
        g.op('MatMul', [toHeads(q), g.op('Transpose', [keys], [intsAttr('perm', [0, 1, 3, 2])])]),
        scale,
      ]),
      bias,
    ]);
    const probs = g.op('Softmax', [scores], [intAttr('axis', -1)]);
    const y = g.op('Reshape', [
      g.op('Transpose', [g.op('MatMul', [probs, values])], [intsAttr('perm', [0, 2, 1, 3])]),
      flatShape,
    ]);
    x = g.op('Add', [x, linear(y, `${h}attn.proj`)]);
    const fc = linear(ln(x, `${h}ln2`), `${h}mlp.fc`);
    // GELU, tanh form: ½·u·(1 + tanh(√(2/π)·(u + 0.044715·u³)))
    const cube = g.op('Mul', [g.op('Mul', [fc, fc]), fc]);
    const inner = g.op('Mul', [
      g.op('Add', [fc, g.op('Mul', [cube, g.scalar(0.044715)])]),
      g.scalar(Math.sqrt(2 / Math.PI)),
    ]);
    const gelu = g.op('Mul', [
      g.op('Mul', [fc, g.op('Add', [g.op('Tanh', [inner]), g.scalar(1)])]),
      g.scalar(0.5),
    ]);
    x = g.op('Add', [x, linear(gelu, `${h}mlp.proj`)]);
  }
  g.op('MatMul', [ln(x, 'lnf'), g.op('Transpose', [wte], [intsAttr('perm', [1, 0])])], [], 'logits');

  const cache = (name: string, len: string): ValueInfo => ({
    name,
    elemType: DT.FLOAT,
    dims: ['batch_size', H, len, hs],
  });
  const inputs: ValueInfo[] = [
    { name: 'input_ids', elemType: DT.INT64, dims: ['batch_size', 'sequence_length'] },
    { name: 'attention_mask', elemType: DT.INT64, dims: ['batch_size', 'total_sequence_length'] },
    { name: 'position_ids', elemType: DT.INT64, dims: ['batch_size', 'sequence_length'] },
  ];
  const outputs: ValueInfo[] = [
    { name: 'logits', elemType: DT.FLOAT, dims: ['batch_size', 'sequence_length', V] },
  ];
  for (let l = 0; l < L; l++) {
    inputs.push(
      cache(pastKeyName(l), 'past_sequence_length'),
      cache(pastValueName(l), 'past_sequence_length'),
    );
    outputs.push(
      cache(presentKeyName(l), 'total_sequence_length'),
      cache(presentValueName(l), 'total_sequence_length'),
    );
  }
  return encodeModel(g, {
    name: 'harness_lab_policy',
    inputs,
    outputs,
    metadata: { 'harness_lab.weight_precision': precision },
  });
}
