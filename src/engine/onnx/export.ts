/**
 * Exports the policy's forward pass (fixed batch shape) as an ONNX model, so onnxruntime-web can run the same
 * weights as a cross-check and speed yardstick for `npm run bench:engine` and the export tests. The graph computes, for inputs
 * `tokens` (B, T) and `targets` (B, T, 1) int64, the output `target_logp` (B, T, 1) = log-softmax(logits)
 * gathered at the targets (row t predicts token t+1, as in logprob.wgsl).
 *
 * The protobuf messages are declared in proto.ts with the field numbers of onnx/onnx.proto (IR version 8, opset
 * 17: LayerNormalization is a standard op from 17 on); protobufjs encodes them. causalLm.ts exports the same
 * weights as a KV-cache causal LM for generation.
 */
import protobuf from 'protobufjs';
import { type Layout, type PolicyConfig, views } from '../model';
import { onnxSchema } from './proto';

const FLOAT = 1;
const INT64 = 7;
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_INTS = 7;

type Attr = { name: string; f?: number; i?: number; ints?: number[]; type: number };

export function exportOnnx(
  cfg: PolicyConfig,
  layout: Layout,
  params: Float32Array,
  B: number,
  T: number,
): Uint8Array {
  const { width: C, heads: H, vocabSize: V, layers: L } = cfg;
  const hs = C / H;
  const p = views(layout, params);
  const nodes: { input: string[]; output: string[]; op_type: string; name: string; attribute: Attr[] }[] = [];
  const inits: { name: string; dims: number[]; data_type: number; raw_data: Uint8Array }[] = [];
  let uid = 0;
  const f32 = (name: string, dims: number[], data: Float32Array) => {
    inits.push({ name, dims, data_type: FLOAT, raw_data: new Uint8Array(new Float32Array(data).buffer) });
    return name;
  };
  const i64 = (name: string, values: number[]) => {
    inits.push({
      name,
      dims: [values.length],
      data_type: INT64,
      raw_data: new Uint8Array(BigInt64Array.from(values, BigInt).buffer),
    });
    return name;
  };
  const scalar = (v: number) => f32(`const${uid++}`, [], Float32Array.of(v));
  const op = (type: string, inputs: string[], attrs: Attr[] = []) => {
    const out = `${type.toLowerCase()}${uid++}`;
    nodes.push({ input: inputs, output: [out], op_type: type, name: out, attribute: attrs });
    return out;
  };
  const ln = (x: string, prefix: string) =>
    op(
      'LayerNormalization',
      [x, f32(`${prefix}.w`, [C], p[`${prefix}.w`]), f32(`${prefix}.b`, [C], p[`${prefix}.b`])],
      [
        { name: 'axis', i: -1, type: ATTR_INT },
        { name: 'epsilon', f: 1e-5, type: ATTR_FLOAT },
      ],
    );
  const linear = (x: string, prefix: string, din: number, dout: number) =>
    op('Add', [
      op('MatMul', [x, f32(`${prefix}.w`, [din, dout], p[`${prefix}.w`])]),
      f32(`${prefix}.b`, [dout], p[`${prefix}.b`]),
    ]);

  const pos = i64(
    'positions',
    Array.from({ length: T }, (_, t) => t),
  );
  let x = op('Add', [
    op('Gather', [f32('wte', [V, C], p.wte), 'tokens']),
    op('Gather', [f32('wpe', [cfg.contextLength, C], p.wpe), pos]),
  ]);
  const mask = new Float32Array(T * T);
  for (let t = 0; t < T; t++) for (let s = t + 1; s < T; s++) mask[t * T + s] = -1e30;
  const causal = f32('causal_mask', [T, T], mask);
  const headShape = i64('head_shape', [B, T, H, hs]);
  const flatShape = i64('flat_shape', [B, T, C]);
  const splits = i64('qkv_split', [C, C, C]);
  const scale = scalar(1 / Math.sqrt(hs));
  for (let l = 0; l < L; l++) {
    const h = `h${l}.`;
    const qkv = linear(ln(x, `${h}ln1`), `${h}attn.qkv`, C, 3 * C);
    const [q, k, v] = [`q${l}`, `k${l}`, `v${l}`];
    nodes.push({
      input: [qkv, splits],
      output: [q, k, v],
      op_type: 'Split',
      name: `split${l}`,
      attribute: [{ name: 'axis', i: 2, type: ATTR_INT }],
    });
    const heads = (t: string, perm: number[]) =>
      op('Transpose', [op('Reshape', [t, headShape])], [{ name: 'perm', ints: perm, type: ATTR_INTS }]);
    const scores = op('Add', [
      op('Mul', [op('MatMul', [heads(q, [0, 2, 1, 3]), heads(k, [0, 2, 3, 1])]), scale]),
      causal,
    ]);
    const probs = op('Softmax', [scores], [{ name: 'axis', i: -1, type: ATTR_INT }]);
    const y = op('Reshape', [
      op(
        'Transpose',
        [op('MatMul', [probs, heads(v, [0, 2, 1, 3])])],
        [{ name: 'perm', ints: [0, 2, 1, 3], type: ATTR_INTS }],
      ),
      flatShape,
    ]);
    x = op('Add', [x, linear(y, `${h}attn.proj`, C, C)]);
    const fc = linear(ln(x, `${h}ln2`), `${h}mlp.fc`, C, 4 * C);
    // GELU, tanh form: ½·u·(1 + tanh(√(2/π)·(u + 0.044715·u³)))
    const cube = op('Mul', [op('Mul', [fc, fc]), fc]);
    const inner = op('Mul', [
      op('Add', [fc, op('Mul', [cube, scalar(0.044715)])]),
      scalar(Math.sqrt(2 / Math.PI)),
    ]);
    const gelu = op('Mul', [op('Mul', [fc, op('Add', [op('Tanh', [inner]), scalar(1)])]), scalar(0.5)]);
    x = op('Add', [x, linear(gelu, `${h}mlp.proj`, 4 * C, C)]);
  }
  const wteT = new Float32Array(C * V);
  for (let v = 0; v < V; v++) for (let c = 0; c < C; c++) wteT[c * V + v] = p.wte[v * C + c];
  const logits = op('MatMul', [ln(x, 'lnf'), f32('wte_t', [C, V], wteT)]);
  const logsm = op('LogSoftmax', [logits], [{ name: 'axis', i: -1, type: ATTR_INT }]);
  nodes.push({
    input: [logsm, 'targets'],
    output: ['target_logp'],
    op_type: 'GatherElements',
    name: 'gather_targets',
    attribute: [{ name: 'axis', i: 2, type: ATTR_INT }],
  });
  const info = (name: string, elem: number, dims: number[]) => ({
    name,
    type: { tensor_type: { elem_type: elem, shape: { dim: dims.map((d) => ({ dim_value: d })) } } },
  });
  const root = protobuf.Root.fromJSON(onnxSchema);
  const Model = root.lookupType('onnx.ModelProto');
  const model = {
    ir_version: 8,
    producer_name: 'harness-lab',
    opset_import: [{ domain: '', version: 17 }],
    graph: {
      name: 'policy_forward',
      node: nodes,
      initializer: inits,
      input: [info('tokens', INT64, [B, T]), info('targets', INT64, [B, T, 1])],
      output: [info('target_logp', FLOAT, [B, T, 1])],
    },
  };
  const err = Model.verify(model);
  if (err) throw new Error(`onnx export: ${err}`);
  return Model.encode(Model.fromObject(model)).finish();
}

/** The `targets` input for a (B, T) token batch: row t gathers token t+1 (the last row repeats its own). */
export function onnxTargets(tokens: Uint32Array, B: number, T: number): BigInt64Array {
  if (tokens.length !== B * T) throw new Error(`onnx targets: ${tokens.length} tokens for a ${B}x${T} batch`);
  const targets = new BigInt64Array(B * T);
  for (let b = 0; b < B; b++)
    for (let t = 0; t < T; t++) targets[b * T + t] = BigInt(tokens[b * T + Math.min(t + 1, T - 1)]);
  return targets;
}

/**
 * Max |Δ| between the export's `target_logp` (row t = log p(token t+1)) and an engine's per-token log-probs
 * (position t+1 = log p(token t+1), position 0 has none). NaN anywhere counts as an infinite difference.
 */
export function maxLogProbDiff(
  onnx: ArrayLike<number>,
  ours: ArrayLike<number>,
  B: number,
  T: number,
): number {
  if (onnx.length !== B * T || ours.length !== B * T)
    throw new Error(`log-prob diff: ${onnx.length} and ${ours.length} values for a ${B}x${T} batch`);
  let m = 0;
  for (let b = 0; b < B; b++)
    for (let t = 0; t + 1 < T; t++) {
      const d = Math.abs(onnx[b * T + t] - ours[b * T + t + 1]);
      if (!(d <= m)) m = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
    }
  return m;
}
