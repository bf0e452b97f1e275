/**
 * Policy checkpoints in the safetensors format (https://github.com/huggingface/safetensors, "Format"):
 *   8 bytes: N, the header length, unsigned little-endian 64-bit
 *   N bytes: a UTF-8 JSON object {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}
 *            (padded with spaces to a multiple of 8 bytes)
 *   the tensor data, little-endian, offsets relative to the end of the header
 * Each named view of the flat parameter buffer is one F32 tensor; the model config is JSON in the metadata,
 * so a file is self-describing. A training checkpoint adds flat F32 tensors under `optimizer.` (AdamW's
 * moments, laid out like the parameters) and its state in the metadata; a policy-only reader ignores neither
 * silently: extra tensors must carry that prefix. Saved to files under Node and to the origin-private file
 * system in a browser.
 */
import { encodeSafetensors } from './llama/safetensors';
import { type Layout, layoutOf, type PolicyConfig, resolveConfig } from './model';

const CONFIG_KEY = 'harness_lab.policy_config';
/** set when the tensors follow a caller's layout (a Hugging Face model's or a LoRA adapter's), not the config's */
const LAYOUT_KEY = 'harness_lab.params_layout';

export interface Checkpoint {
  config: PolicyConfig;
  params: Float32Array;
  metadata: Record<string, string>;
  /** flat tensors named `optimizer.*` (a training checkpoint's AdamW moments); empty for a policy checkpoint */
  extra: Record<string, Float32Array>;
}

const EXTRA_PREFIX = 'optimizer.';

export function encodeCheckpoint(
  config: PolicyConfig,
  params: Float32Array,
  metadata: Record<string, string> = {},
  extra: Record<string, Float32Array> = {},
  /** the tensors of `params` when they are not the config's GPT-2 layout (a Llama-family model or adapter) */
  paramsLayout?: Layout,
): Uint8Array {
  const layout = paramsLayout ?? layoutOf(config);
  if (params.length !== layout.total)
    throw new Error(`checkpoint: params has ${params.length} values, the layout needs ${layout.total}`);
  const extras = Object.entries(extra);
  for (const [name] of extras)
    if (!name.startsWith(EXTRA_PREFIX))
      throw new Error(`checkpoint: extra tensor '${name}' must be named ${EXTRA_PREFIX}*`);
  return encodeSafetensors(
    [
      ...layout.tensors.map((t) => ({
        name: t.name,
        shape: t.shape,
        data: params.subarray(t.offset, t.offset + t.size),
      })),
      ...extras.map(([name, values]) => ({ name, shape: [values.length], data: values })),
    ],
    {
      ...metadata,
      [CONFIG_KEY]: JSON.stringify(config),
      ...(paramsLayout ? { [LAYOUT_KEY]: 'external' } : {}),
    },
  );
}

/** Parses and validates a checkpoint; every error names what is wrong and where. */
export function decodeCheckpoint(
  bytes: Uint8Array,
  source = 'checkpoint',
  /** the layout a checkpoint written with one must be read with */
  paramsLayout?: Layout,
): Checkpoint {
  if (bytes.length < 8)
    throw new Error(`${source}: ${bytes.length} bytes is too short for a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (n > bytes.length - 8)
    throw new Error(`${source}: header length ${n} runs past the end of the file (${bytes.length} bytes)`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw new Error(`${source}: header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header))
    throw new Error(`${source}: header is not a JSON object`);
  const meta = (header.__metadata__ ?? {}) as Record<string, string>;
  const rawConfig = meta[CONFIG_KEY];
  if (typeof rawConfig !== 'string') throw new Error(`${source}: metadata has no '${CONFIG_KEY}' entry`);
  let config: PolicyConfig;
  try {
    config = resolveConfig(JSON.parse(rawConfig));
  } catch (e) {
    throw new Error(`${source}: bad '${CONFIG_KEY}': ${(e as Error).message}`);
  }
  if (meta[LAYOUT_KEY] === 'external' && !paramsLayout)
    throw new Error(
      `${source}: holds a Hugging Face model's or LoRA adapter's tensors; it loads with its model folder (lab train --resume)`,
    );
  const layout = paramsLayout ?? layoutOf(config);
  const dataStart = 8 + n;
  const dataLength = bytes.length - dataStart;
  const params = new Float32Array(layout.total);
  const data = new DataView(bytes.buffer, bytes.byteOffset + dataStart, dataLength);
  for (const t of layout.tensors) {
    const entry = header[t.name] as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | undefined;
    if (!entry) throw new Error(`${source}: tensor '${t.name}' is missing`);
    if (entry.dtype !== 'F32')
      throw new Error(`${source}: tensor '${t.name}' has dtype ${entry.dtype}, expected F32`);
    if (JSON.stringify(entry.shape) !== JSON.stringify(t.shape))
      throw new Error(
        `${source}: tensor '${t.name}' has shape ${JSON.stringify(entry.shape)}, expected ${JSON.stringify(t.shape)}`,
      );
    const off = entry.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((x) => Number.isInteger(x) && x >= 0))
      throw new Error(`${source}: tensor '${t.name}' has malformed data_offsets ${JSON.stringify(off)}`);
    const [begin, end] = off as number[];
    if (end - begin !== t.size * 4 || end > dataLength)
      throw new Error(
        `${source}: tensor '${t.name}' data_offsets [${begin}, ${end}] do not hold ${t.size} f32 values within ${dataLength} data bytes`,
      );
    for (let i = 0; i < t.size; i++) params[t.offset + i] = data.getFloat32(begin + 4 * i, true);
  }
  const known = new Set(['__metadata__', ...layout.tensors.map((t) => t.name)]);
  const others = Object.keys(header).filter((k) => !known.has(k));
  const unexpected = others.filter((k) => !k.startsWith(EXTRA_PREFIX));
  if (unexpected.length)
    throw new Error(`${source}: unexpected tensors for this config: ${unexpected.slice(0, 5).join(', ')}`);
  const extra: Record<string, Float32Array> = {};
  for (const name of others) {
    const entry = header[name] as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const off = entry?.data_offsets;
    if (entry?.dtype !== 'F32' || !Array.isArray(entry.shape) || entry.shape.length !== 1)
      throw new Error(`${source}: tensor '${name}' must be a 1-D F32 tensor`);
    const len = entry.shape[0] as number;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((x) => Number.isInteger(x) && x >= 0))
      throw new Error(`${source}: tensor '${name}' has malformed data_offsets ${JSON.stringify(off)}`);
    const [begin, end] = off as number[];
    if (!Number.isInteger(len) || end - begin !== len * 4 || end > dataLength)
      throw new Error(
        `${source}: tensor '${name}' data_offsets [${begin}, ${end}] do not hold ${len} f32 values within ${dataLength} data bytes`,
      );
    const v = new Float32Array(len);
    for (let i = 0; i < len; i++) v[i] = data.getFloat32(begin + 4 * i, true);
    extra[name] = v;
  }
  const metadata = { ...meta };
  delete metadata[CONFIG_KEY];
  delete metadata[LAYOUT_KEY];
  return { config, params, metadata, extra };
}

/** Writes a checkpoint file (Node). */
export async function saveCheckpointFile(path: string, bytes: Uint8Array): Promise<void> {
  const fs = await import(/* @vite-ignore */ 'node:fs/promises');
  await fs.writeFile(path, bytes);
}

export async function loadCheckpointFile(path: string): Promise<Checkpoint> {
  const fs = await import(/* @vite-ignore */ 'node:fs/promises');
  return decodeCheckpoint(new Uint8Array(await fs.readFile(path)), path);
}

function checkName(name: string): void {
  if (!/^[\w.-]{1,120}$/.test(name))
    throw new Error(`checkpoint name '${name}' must be 1-120 of [A-Za-z0-9_.-]`);
}

/** Saves to the browser's origin-private file system (OPFS) as `checkpoints/<name>.safetensors`. */
export async function saveCheckpointBrowser(name: string, bytes: Uint8Array): Promise<void> {
  checkName(name);
  const root = await navigator.storage.getDirectory();
  const dir = await root.getDirectoryHandle('checkpoints', { create: true });
  const file = await dir.getFileHandle(`${name}.safetensors`, { create: true });
  const w = await file.createWritable();
  await w.write(bytes as Uint8Array<ArrayBuffer>);
  await w.close();
}

export async function loadCheckpointBrowser(name: string): Promise<Checkpoint> {
  checkName(name);
  const root = await navigator.storage.getDirectory();
  let file: File;
  try {
    const dir = await root.getDirectoryHandle('checkpoints');
    file = await (await dir.getFileHandle(`${name}.safetensors`)).getFile();
  } catch {
    throw new Error(`no checkpoint named '${name}' in browser storage`);
  }
  return decodeCheckpoint(new Uint8Array(await file.arrayBuffer()), `browser checkpoint '${name}'`);
}

export async function listCheckpointsBrowser(): Promise<string[]> {
  const root = await navigator.storage.getDirectory();
  let dir: FileSystemDirectoryHandle;
  try {
    dir = await root.getDirectoryHandle('checkpoints');
  } catch {
    return [];
  }
  const names: string[] = [];
  for await (const key of (dir as unknown as { keys(): AsyncIterable<string> }).keys())
    if (key.endsWith('.safetensors')) names.push(key.slice(0, -'.safetensors'.length));
  return names.sort();
}
