/**
 * The subset of onnx/onnx.proto the exporters write, declared with onnx.proto's field numbers and encoded by
 * protobufjs, plus a small graph builder. No Node APIs: the page imports this too.
 *
 * Element types (TensorProto.DataType): FLOAT 1, INT8 3, INT64 7, BOOL 9, FLOAT16 10.
 * Attribute types (AttributeProto.AttributeType): FLOAT 1, INT 2, INTS 7.
 *
 * External data (onnx.proto's `data_location = EXTERNAL` with `location` / `offset` / `length` entries): a
 * protobuf message cannot exceed 2 GiB, so a larger model keeps its big initializers in one file beside the
 * model (`model.onnx_data`, as Hugging Face exports name it) and `encodeModelFiles` returns both.
 */

import protobuf from 'protobufjs';
import { f32ToF16Bits } from '../cpu/half';

export const onnxSchema = {
  nested: {
    onnx: {
      nested: {
        ModelProto: {
          fields: {
            ir_version: { type: 'int64', id: 1 },
            producer_name: { type: 'string', id: 2 },
            producer_version: { type: 'string', id: 3 },
            graph: { type: 'GraphProto', id: 7 },
            opset_import: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
            metadata_props: { rule: 'repeated', type: 'StringStringEntryProto', id: 14 },
          },
        },
        StringStringEntryProto: {
          fields: { key: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } },
        },
        OperatorSetIdProto: {
          fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } },
        },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            op_type: { type: 'string', id: 4 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
          },
        },
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            ints: { rule: 'repeated', type: 'int64', id: 8 },
            type: { type: 'int32', id: 20 },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1 },
            data_type: { type: 'int32', id: 2 },
            name: { type: 'string', id: 8 },
            raw_data: { type: 'bytes', id: 9 },
            external_data: { rule: 'repeated', type: 'StringStringEntryProto', id: 13 },
            // DataLocation: DEFAULT 0, EXTERNAL 1
            data_location: { type: 'int32', id: 14 },
          },
        },
        ValueInfoProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } } },
        TypeProto: { fields: { tensor_type: { type: 'TypeProtoTensor', id: 1 } } },
        TypeProtoTensor: {
          fields: { elem_type: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } },
        },
        TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } } },
        Dimension: {
          oneofs: { value: { oneof: ['dim_value', 'dim_param'] } },
          fields: { dim_value: { type: 'int64', id: 1 }, dim_param: { type: 'string', id: 2 } },
        },
      },
    },
  },
};

export const DT = { FLOAT: 1, INT8: 3, INT64: 7, BOOL: 9, FLOAT16: 10 } as const;
export const ATTR = { FLOAT: 1, INT: 2, INTS: 7 } as const;

export type Attr = { name: string; f?: number; i?: number; ints?: number[]; type: number };
export const intAttr = (name: string, i: number): Attr => ({ name, i, type: ATTR.INT });
export const floatAttr = (name: string, f: number): Attr => ({ name, f, type: ATTR.FLOAT });
export const intsAttr = (name: string, ints: number[]): Attr => ({ name, ints, type: ATTR.INTS });

/** A dimension: a fixed size or a symbolic name (`dim_param`, e.g. 'batch_size'). */
export type Dim = number | string;

interface Node {
  input: string[];
  output: string[];
  op_type: string;
  name: string;
  attribute: Attr[];
}

interface Initializer {
  name: string;
  dims: number[];
  data_type: number;
  raw_data: Uint8Array;
}

/** Collects nodes and initializers; names are unique per builder. */
export class GraphBuilder {
  readonly nodes: Node[] = [];
  readonly inits: Initializer[] = [];
  private uid = 0;

  fresh(prefix: string): string {
    return `${prefix}_${this.uid++}`;
  }

  raw(name: string, dims: number[], dataType: number, bytes: Uint8Array): string {
    this.inits.push({ name, dims, data_type: dataType, raw_data: bytes });
    return name;
  }

  f32(name: string, dims: number[], data: Float32Array): string {
    return this.raw(name, dims, DT.FLOAT, new Uint8Array(new Float32Array(data).buffer));
  }

  /** float32 data referenced, not copied (the caller keeps it unchanged until the model is encoded) */
  f32View(name: string, dims: number[], data: Float32Array): string {
    return this.raw(name, dims, DT.FLOAT, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }

  f16(name: string, dims: number[], data: Float32Array): string {
    const bits = new Uint16Array(data.length);
    for (let i = 0; i < data.length; i++) bits[i] = f32ToF16Bits(data[i]);
    return this.raw(name, dims, DT.FLOAT16, new Uint8Array(bits.buffer));
  }

  i64(name: string, values: number[], dims: number[] = [values.length]): string {
    return this.raw(name, dims, DT.INT64, new Uint8Array(BigInt64Array.from(values, BigInt).buffer));
  }

  /** A float scalar constant (0-d). */
  scalar(v: number): string {
    return this.f32(this.fresh('const'), [], Float32Array.of(v));
  }

  /** An int64 scalar constant (0-d). */
  scalarI64(v: number): string {
    return this.i64(this.fresh('const'), [v], []);
  }

  /** One node with a single output (named after the op unless `out` is given). */
  op(type: string, inputs: string[], attrs: Attr[] = [], out?: string): string {
    const o = out ?? this.fresh(type.toLowerCase());
    this.nodes.push({ input: inputs, output: [o], op_type: type, name: o, attribute: attrs });
    return o;
  }

  /** One node with several named outputs. */
  opN(type: string, inputs: string[], outputs: string[], attrs: Attr[] = []): string[] {
    this.nodes.push({
      input: inputs,
      output: outputs,
      op_type: type,
      name: this.fresh(type),
      attribute: attrs,
    });
    return outputs;
  }
}

export interface ValueInfo {
  name: string;
  elemType: number;
  dims: Dim[];
}

export interface EncodeOptions {
  name: string;
  inputs: ValueInfo[];
  outputs: ValueInfo[];
  opset?: number;
  metadata?: Record<string, string>;
}

/** Bytes of an inline model's protobuf, less room for the graph itself (the 2 GiB message limit). */
export const ONNX_INLINE_LIMIT = 2 ** 31 - 2 ** 24;

/** Where large initializers go when a model is written with external data. */
export interface ExternalDataOptions {
  /** the data file's name relative to the model file (HF: `model.onnx_data`) */
  location: string;
  /** initializers of at least this many bytes go to the file (onnx's convert_model_to_external_data: 1024) */
  minTensorBytes?: number;
  /** external data only when the initializers exceed this many bytes (default ONNX_INLINE_LIMIT; 0: always) */
  above?: number;
}

/** An encoded model and, when written with external data, the data file its initializers point into. */
export interface OnnxFiles {
  model: Uint8Array;
  /** the external data file (`location`) or null when every initializer is inline */
  data: Uint8Array | null;
  location: string | null;
}

/** Offsets of external tensors are multiples of this (ORT maps aligned regions directly). */
const EXTERNAL_ALIGN = 4096;

/** Encodes a graph as an ONNX ModelProto (IR 8, default-domain opset `opset`), every initializer inline. */
export function encodeModel(g: GraphBuilder, opts: EncodeOptions): Uint8Array {
  const inline = g.inits.reduce((s, i) => s + i.raw_data.length, 0);
  if (inline > ONNX_INLINE_LIMIT)
    throw new Error(
      `onnx export: ${(inline / 2 ** 20).toFixed(0)} MiB of initializers exceed what one ONNX protobuf can ` +
        `hold inline (${(ONNX_INLINE_LIMIT / 2 ** 20).toFixed(0)} MiB; write it with external data)`,
    );
  return encodeModelFiles(g, opts, null).model;
}

/**
 * Encodes a graph as an ONNX ModelProto; with `external`, initializers of at least `minTensorBytes` are written
 * to one data file instead (when the initializers exceed `above`), each tensor's entry naming its `location`,
 * `offset` and `length` in it, as onnx.proto's external data specifies.
 */
export function encodeModelFiles(
  g: GraphBuilder,
  opts: EncodeOptions,
  external: ExternalDataOptions | null,
): OnnxFiles {
  const info = (v: ValueInfo) => ({
    name: v.name,
    type: {
      tensor_type: {
        elem_type: v.elemType,
        shape: { dim: v.dims.map((d) => (typeof d === 'number' ? { dim_value: d } : { dim_param: d })) },
      },
    },
  });
  const minBytes = external?.minTensorBytes ?? 1024;
  const total = g.inits.reduce((s, i) => s + i.raw_data.length, 0);
  const useExternal = external !== null && total > (external.above ?? ONNX_INLINE_LIMIT);
  let data: Uint8Array | null = null;
  let initializer: object[] = g.inits;
  if (useExternal) {
    const offsets: number[] = [];
    let size = 0;
    for (const t of g.inits) {
      if (t.raw_data.length < minBytes) {
        offsets.push(-1);
        continue;
      }
      size = Math.ceil(size / EXTERNAL_ALIGN) * EXTERNAL_ALIGN;
      offsets.push(size);
      size += t.raw_data.length;
    }
    data = new Uint8Array(size);
    initializer = g.inits.map((t, i) => {
      const offset = offsets[i];
      if (offset < 0) return t;
      (data as Uint8Array).set(t.raw_data, offset);
      return {
        name: t.name,
        dims: t.dims,
        data_type: t.data_type,
        data_location: 1,
        external_data: [
          { key: 'location', value: external.location },
          { key: 'offset', value: String(offset) },
          { key: 'length', value: String(t.raw_data.length) },
        ],
      };
    });
    const inline = g.inits.reduce((s, t, i) => s + (offsets[i] < 0 ? t.raw_data.length : 0), 0);
    if (inline > ONNX_INLINE_LIMIT)
      throw new Error(`onnx export: ${inline} bytes of small initializers still exceed the inline limit`);
  }
  const root = protobuf.Root.fromJSON(onnxSchema);
  const Model = root.lookupType('onnx.ModelProto');
  const model = {
    ir_version: 8,
    producer_name: 'harness-lab',
    opset_import: [{ domain: '', version: opts.opset ?? 17 }],
    metadata_props: Object.entries(opts.metadata ?? {}).map(([key, value]) => ({ key, value })),
    graph: {
      name: opts.name,
      node: g.nodes,
      initializer,
      input: opts.inputs.map(info),
      output: opts.outputs.map(info),
    },
  };
  const err = Model.verify(model);
  if (err) throw new Error(`onnx export: ${err}`);
  return {
    model: Model.encode(Model.fromObject(model)).finish(),
    data,
    location: useExternal ? (external as ExternalDataOptions).location : null,
  };
}
