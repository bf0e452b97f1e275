/**
 * Reading Hugging Face weight files: safetensors (https://github.com/huggingface/safetensors, "Format": an
 * 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the data) with
 * F32, F16 and BF16 tensors, widened to f32; and the sharded layout, `model.safetensors.index.json`, whose
 * `weight_map` names the shard holding each tensor. Pure: bytes in, tensors out; every error names the file
 * and the tensor or field.
 */

import { f16ToF32 } from '../cpu/half';

export type StorageDtype = 'F32' | 'F16' | 'BF16';

export interface SafeTensor {
  dtype: StorageDtype;
  shape: number[];
  /** the values widened to f32 (exactly: f16 and bf16 are subsets of f32) */
  data: Float32Array;
}

const BYTES: Record<StorageDtype, number> = { F32: 4, F16: 2, BF16: 2 };

export class WeightFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'WeightFileError';
  }
}

const f16Table = (() => {
  const t = new Float32Array(65536);
  for (let i = 0; i < 65536; i++) t[i] = f16ToF32(i);
  return t;
})();

interface HeaderEntry {
  dtype?: unknown;
  shape?: unknown;
  data_offsets?: unknown;
}

/** The header of a safetensors file: tensor names → entries, and where the data starts. */
export function safetensorsHeader(
  bytes: Uint8Array,
  file: string,
): { entries: Map<string, HeaderEntry>; dataStart: number } {
  if (bytes.length < 8)
    throw new WeightFileError(file, `${bytes.length} bytes is too short for a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (n > bytes.length - 8)
    throw new WeightFileError(
      file,
      `header length ${n} runs past the end of the file (${bytes.length} bytes)`,
    );
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw new WeightFileError(file, `header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header))
    throw new WeightFileError(file, 'header is not a JSON object');
  const entries = new Map<string, HeaderEntry>();
  for (const [k, v] of Object.entries(header as Record<string, unknown>))
    if (k !== '__metadata__') entries.set(k, v as HeaderEntry);
  return { entries, dataStart: 8 + n };
}

/** Decodes every tensor of a safetensors file (or only those `want` accepts). */
export function readSafetensors(
  bytes: Uint8Array,
  file: string,
  want: (name: string) => boolean = () => true,
): Map<string, SafeTensor> {
  const { entries, dataStart } = safetensorsHeader(bytes, file);
  const dataLength = bytes.length - dataStart;
  const out = new Map<string, SafeTensor>();
  for (const [name, e] of entries) {
    if (!want(name)) continue;
    const dtype = e.dtype;
    if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16')
      throw new WeightFileError(
        file,
        `tensor '${name}' has dtype ${String(dtype)} (supported: F32, F16, BF16)`,
      );
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0))
      throw new WeightFileError(file, `tensor '${name}' has a malformed shape ${JSON.stringify(e.shape)}`);
    const shape = e.shape as number[];
    const count = shape.reduce((a, b) => a * b, 1);
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((x) => Number.isInteger(x) && x >= 0))
      throw new WeightFileError(file, `tensor '${name}' has malformed data_offsets ${JSON.stringify(off)}`);
    const [begin, end] = off as number[];
    if (end - begin !== count * BYTES[dtype] || end > dataLength)
      throw new WeightFileError(
        file,
        `tensor '${name}' data_offsets [${begin}, ${end}] do not hold ${count} ${dtype} values within ${dataLength} data bytes`,
      );
    const start = bytes.byteOffset + dataStart + begin;
    // typed views need aligned offsets; copy the slice when the file's layout does not give one
    const aligned = start % BYTES[dtype] === 0;
    const buf = aligned ? bytes.buffer : bytes.slice(dataStart + begin, dataStart + end).buffer;
    const at = aligned ? start : 0;
    let data: Float32Array;
    if (dtype === 'F32') data = new Float32Array(buf.slice(at, at + count * 4));
    else {
      const h = new Uint16Array(buf, at, count);
      data = new Float32Array(count);
      if (dtype === 'F16') for (let i = 0; i < count; i++) data[i] = f16Table[h[i]];
      else {
        const u = new Uint32Array(data.buffer);
        for (let i = 0; i < count; i++) u[i] = h[i] << 16;
      }
    }
    out.set(name, { dtype, shape, data });
  }
  return out;
}

export const SHARD_INDEX = 'model.safetensors.index.json';

/** The shard files of `model.safetensors.index.json` and the tensor → shard map, checked. */
export function parseShardIndex(
  index: unknown,
  present: Set<string>,
): { weightMap: Map<string, string>; shards: string[] } {
  if (!index || typeof index !== 'object' || Array.isArray(index))
    throw new WeightFileError(SHARD_INDEX, 'must hold a JSON object');
  const wm = (index as { weight_map?: unknown }).weight_map;
  if (!wm || typeof wm !== 'object' || Array.isArray(wm))
    throw new WeightFileError(SHARD_INDEX, "has no 'weight_map' object");
  const weightMap = new Map<string, string>();
  for (const [name, shard] of Object.entries(wm as Record<string, unknown>)) {
    if (typeof shard !== 'string' || shard.includes('..') || shard.startsWith('/'))
      throw new WeightFileError(
        SHARD_INDEX,
        `weight_map['${name}'] must be a file name in the folder, got ${JSON.stringify(shard)}`,
      );
    if (!present.has(shard))
      throw new WeightFileError(
        SHARD_INDEX,
        `weight_map['${name}'] names ${shard}, which is not in the folder`,
      );
    weightMap.set(name, shard);
  }
  return { weightMap, shards: [...new Set(weightMap.values())].sort() };
}

/** One tensor to write: F32 values in row-major order. */
export interface F32Tensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

/**
 * Encodes F32 tensors as a safetensors file, in the given order: the header JSON padded with spaces to a
 * multiple of 8 bytes, then the data little-endian; string metadata under `__metadata__` when any.
 */
export function encodeSafetensors(tensors: F32Tensor[], metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length)
      throw new Error(
        `safetensors: tensor '${t.name}' has ${t.data.length} values, shape ${JSON.stringify(t.shape)} needs ${count}`,
      );
    if (t.name in header) throw new Error(`safetensors: tensor '${t.name}' is given twice`);
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + count * 4] };
    offset += count * 4;
  }
  let json = JSON.stringify(header);
  const enc = new TextEncoder();
  while (enc.encode(json).length % 8 !== 0) json += ' ';
  const headerBytes = enc.encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  const data = new DataView(out.buffer, 8 + headerBytes.length);
  let at = 0;
  for (const t of tensors) {
    for (let i = 0; i < t.data.length; i++) data.setFloat32(at + 4 * i, t.data[i], true);
    at += t.data.length * 4;
  }
  return out;
}
