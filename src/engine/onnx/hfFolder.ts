/**
 * A Hugging Face model folder in the layout transformers.js loads (`config.json`, `generation_config.json`,
 * `onnx/model.onnx`, `tokenizer.json`, `tokenizer_config.json`): written for our policy by `exportHfFolder`, and
 * read and checked for any ONNX chat model (ours, or one a user brings) by `readModelFolder`, which names the
 * missing or malformed file when the folder cannot be loaded. Pure: folders are maps of relative paths, so the
 * page (a picked or dropped directory) and Node (folder.ts) share it.
 */
import type { PolicyConfig } from '../model';
import { exportCausalLm, type WeightPrecision } from './causalLm';

/** Relative path (forward slashes, no leading slash) → file contents. */
export type FolderFiles = Map<string, Uint8Array>;

type Json = Record<string, unknown>;

export interface HfTokenizerFiles {
  /** tokenizer.json */
  tokenizerJson: Json;
  /** tokenizer_config.json (with the chat template) */
  tokenizerConfig: Json;
}

/** The file names of the ONNX variants transformers.js knows, by its dtype names (onnx/model{suffix}.onnx). */
export const ONNX_DTYPE_SUFFIX: Record<string, string> = {
  fp32: '',
  fp16: '_fp16',
  int8: '_int8',
  uint8: '_uint8',
  q8: '_quantized',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};

function tokenString(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return null;
}

/** The id of a special token named in tokenizer_config (`eos_token`, …), looked up in tokenizer.json. */
export function specialTokenId(tok: HfTokenizerFiles, key: string): number | null {
  const s = tokenString(tok.tokenizerConfig[key]);
  if (s === null) return null;
  const added = (tok.tokenizerJson.added_tokens as { id: number; content: string }[] | undefined) ?? [];
  const hit = added.find((t) => t.content === s);
  if (hit) return hit.id;
  const vocab = (tok.tokenizerJson.model as { vocab?: Record<string, number> } | undefined)?.vocab;
  return vocab && typeof vocab[s] === 'number' ? vocab[s] : null;
}

/** config.json for the policy: GPT-2's field names (transformers maps n_head, n_layer, n_embd from them). */
export function hfConfig(cfg: PolicyConfig, tok: HfTokenizerFiles, precision: WeightPrecision): Json {
  return {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: cfg.vocabSize,
    n_positions: cfg.contextLength,
    n_ctx: cfg.contextLength,
    n_embd: cfg.width,
    n_layer: cfg.layers,
    n_head: cfg.heads,
    n_inner: 4 * cfg.width,
    activation_function: 'gelu_new',
    layer_norm_epsilon: 1e-5,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    scale_attn_weights: true,
    tie_word_embeddings: true,
    use_cache: true,
    bos_token_id: specialTokenId(tok, 'bos_token'),
    eos_token_id: specialTokenId(tok, 'eos_token'),
    pad_token_id: specialTokenId(tok, 'pad_token'),
    torch_dtype: 'float32',
    'transformers.js_config': { dtype: 'fp32', use_external_data_format: false },
    harness_lab: { weight_precision: precision, seed: cfg.seed },
  };
}

export function hfGenerationConfig(cfg: PolicyConfig, tok: HfTokenizerFiles): Json {
  return {
    bos_token_id: specialTokenId(tok, 'bos_token'),
    eos_token_id: specialTokenId(tok, 'eos_token'),
    pad_token_id: specialTokenId(tok, 'pad_token'),
    max_length: cfg.contextLength,
  };
}

const utf8 = new TextEncoder();
const jsonFile = (v: unknown) => utf8.encode(`${JSON.stringify(v, null, 2)}\n`);

/** Every file of the policy's model folder, at the chosen weight precision. */
export function exportHfFolder(
  cfg: PolicyConfig,
  params: Float32Array,
  tok: HfTokenizerFiles,
  opts: { precision?: WeightPrecision } = {},
): FolderFiles {
  const precision = opts.precision ?? 'f32';
  const files: FolderFiles = new Map();
  files.set('config.json', jsonFile(hfConfig(cfg, tok, precision)));
  files.set('generation_config.json', jsonFile(hfGenerationConfig(cfg, tok)));
  files.set('tokenizer.json', jsonFile(tok.tokenizerJson));
  files.set('tokenizer_config.json', jsonFile(tok.tokenizerConfig));
  files.set('onnx/model.onnx', exportCausalLm(cfg, params, { precision }));
  return files;
}

/** A folder that cannot be loaded: `file` is the relative path of the missing or malformed file. */
export class ModelFolderError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'ModelFolderError';
  }
}

/** Reads files of a folder lazily (the ONNX weights may be large). */
export interface FolderReader {
  /** the folder on disk, when it is one (Node) */
  dir?: string;
  /** every file's relative path */
  paths(): string[];
  bytes(path: string): Promise<Uint8Array>;
  /** a file's size in bytes without reading it */
  size(path: string): Promise<number>;
  /** the file as a Blob (a picked file), so a large model is streamed rather than copied */
  blob?(path: string): Promise<Blob>;
}

export function mapReader(files: FolderFiles): FolderReader {
  return {
    paths: () => [...files.keys()],
    bytes: async (p) => {
      const b = files.get(p);
      if (!b) throw new ModelFolderError(p, 'is missing');
      return b;
    },
    size: async (p) => files.get(p)?.length ?? 0,
  };
}

/** What a loadable chat-model folder holds, after checking. */
export interface ModelFolder {
  /** model_type from config.json */
  modelType: string;
  config: Json;
  generationConfig: Json | null;
  tokenizer: HfTokenizerFiles;
  /** transformers.js dtype names of the ONNX variants present (onnx/model{suffix}.onnx), best first */
  dtypes: string[];
  /** the dtype config.json asks for when present, else the first of `dtypes` */
  defaultDtype: string;
  /** external-data files beside each variant (onnx/model.onnx_data, …), by dtype */
  externalData: Record<string, string[]>;
  /** the end-of-turn ids generation stops at (generation_config / config eos_token_id) */
  eosTokenIds: number[];
  /** the policy's own export: its weight precision (config.json harness_lab), else null */
  weightPrecision: WeightPrecision | null;
}

/** A folder's JSON object file; a ModelFolderError when it is missing, not JSON or not an object. */
export async function readFolderJson(r: FolderReader, path: string, present: Set<string>): Promise<Json> {
  if (!present.has(path)) throw new ModelFolderError(path, 'is missing');
  const text = new TextDecoder().decode(await r.bytes(path));
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ModelFolderError(path, `is not valid JSON (${(e as Error).message})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ModelFolderError(path, 'must hold a JSON object');
  return v as Json;
}

/** Token ids of a config value: one id or a list of them (anything else: none). */
export function idList(v: unknown): number[] {
  if (Number.isInteger(v)) return [v as number];
  if (Array.isArray(v)) return v.filter((x) => Number.isInteger(x)) as number[];
  return [];
}

/**
 * The files a chat model's folder carries beside its weights: tokenizer.json, tokenizer_config.json with its
 * chat template (newer exports keep it in chat_template.jinja), and generation_config.json when present.
 */
export async function readChatFiles(
  r: FolderReader,
  present: Set<string>,
): Promise<{ tokenizer: HfTokenizerFiles; generationConfig: Json | null }> {
  const generationConfig = present.has('generation_config.json')
    ? await readFolderJson(r, 'generation_config.json', present)
    : null;
  const tokenizerJson = await readFolderJson(r, 'tokenizer.json', present);
  if (typeof tokenizerJson.model !== 'object' || tokenizerJson.model === null)
    throw new ModelFolderError(
      'tokenizer.json',
      "has no 'model' section (not a Hugging Face tokenizer.json)",
    );
  const tokenizerConfig = await readFolderJson(r, 'tokenizer_config.json', present);
  if (typeof tokenizerConfig.chat_template !== 'string' && present.has('chat_template.jinja'))
    tokenizerConfig.chat_template = new TextDecoder().decode(await r.bytes('chat_template.jinja'));
  if (typeof tokenizerConfig.chat_template !== 'string')
    throw new ModelFolderError(
      'tokenizer_config.json',
      "has no 'chat_template' (and there is no chat_template.jinja): a chat model needs one",
    );
  return { tokenizer: { tokenizerJson, tokenizerConfig }, generationConfig };
}

/** Drops the one top-level folder all paths share (a picked or dropped directory keeps its own name). */
export function stripCommonRoot(paths: string[]): { prefix: string; paths: string[] } {
  if (paths.length === 0 || paths.some((p) => p === 'config.json')) return { prefix: '', paths };
  const first = paths[0].split('/')[0];
  if (paths.every((p) => p.startsWith(`${first}/`)))
    return { prefix: `${first}/`, paths: paths.map((p) => p.slice(first.length + 1)) };
  return { prefix: '', paths };
}

/**
 * Checks that a folder holds an ONNX causal LM with its tokenizer and chat template in the HF layout, and reads
 * its configuration. Throws ModelFolderError naming the first missing or malformed file.
 */
export async function readModelFolder(r: FolderReader): Promise<ModelFolder> {
  const present = new Set(r.paths());
  const config = await readFolderJson(r, 'config.json', present);
  if (typeof config.model_type !== 'string' || config.model_type === '')
    throw new ModelFolderError('config.json', "has no 'model_type'");
  const { tokenizer, generationConfig } = await readChatFiles(r, present);
  const dtypes: string[] = [];
  const externalData: Record<string, string[]> = {};
  for (const [dtype, suffix] of Object.entries(ONNX_DTYPE_SUFFIX)) {
    const file = `onnx/model${suffix}.onnx`;
    if (!present.has(file)) continue;
    dtypes.push(dtype);
    externalData[dtype] = [...present].filter((p) => p.startsWith(`${file}_data`)).sort();
  }
  if (dtypes.length === 0)
    throw new ModelFolderError(
      'onnx/model.onnx',
      `is missing (no ONNX decoder found; expected one of ${Object.values(ONNX_DTYPE_SUFFIX)
        .map((s) => `onnx/model${s}.onnx`)
        .join(', ')})`,
    );
  const custom = (config['transformers.js_config'] ?? {}) as { dtype?: unknown };
  const defaultDtype =
    typeof custom.dtype === 'string' && dtypes.includes(custom.dtype) ? custom.dtype : dtypes[0];
  const eosTokenIds = idList(generationConfig?.eos_token_id ?? config.eos_token_id);
  const precision = (config.harness_lab as { weight_precision?: unknown } | undefined)?.weight_precision;
  return {
    modelType: config.model_type,
    config,
    generationConfig,
    tokenizer,
    dtypes,
    defaultDtype,
    externalData,
    eosTokenIds,
    weightPrecision: precision === 'f32' || precision === 'f16' || precision === 'int8' ? precision : null,
  };
}

/** The relative path of a dtype's ONNX file. */
export function onnxFileOf(dtype: string): string {
  const suffix = ONNX_DTYPE_SUFFIX[dtype];
  if (suffix === undefined) throw new Error(`unknown ONNX dtype '${dtype}'`);
  return `onnx/model${suffix}.onnx`;
}
