/**
 * A Hugging Face folder of a Llama-family causal LM as our engine loads it: `config.json` (parseLlamaConfig),
 * the weights in `model.safetensors` or shards named by `model.safetensors.index.json` (F32, F16 or BF16,
 * widened to f32 into the engine's flat parameter buffer), `tokenizer.json`, `tokenizer_config.json` with its
 * `chat_template` (or `chat_template.jinja`), and `generation_config.json` when present. Pure: folders are
 * FolderReaders over relative paths (onnx/hfFolder.ts), so the page (a picked or dropped directory, OPFS) and
 * Node (onnx/folder.ts's nodeFolderReader) share it. Every error names the file and the field or tensor.
 */
import type { Layout } from '../model';
import {
  type FolderReader,
  type HfTokenizerFiles,
  idList,
  ModelFolderError,
  readChatFiles,
  readFolderJson,
} from '../onnx/hfFolder';
import { type LlamaConfig, LlamaConfigError, parseLlamaConfig } from './config';
import { llamaLayout } from './model';
import {
  parseShardIndex,
  readSafetensors,
  SHARD_INDEX,
  type StorageDtype,
  WeightFileError,
} from './safetensors';

type Json = Record<string, unknown>;

export interface LlamaFolder {
  config: LlamaConfig;
  /** config.json as read */
  rawConfig: Json;
  layout: Layout;
  /** every parameter, f32, laid out by `layout` */
  params: Float32Array;
  /** the storage dtypes found in the weight files */
  storage: StorageDtype[];
  /** the weight files read, in order */
  weightFiles: string[];
  tokenizer: HfTokenizerFiles;
  generationConfig: Json | null;
  /** ids generation stops at (generation_config's eos_token_id, else config.json's) */
  eosTokenIds: number[];
}

/** Tensors a checkpoint may carry that the decoder recomputes (older Llama exports store the rotary table). */
const IGNORED = /\.rotary_emb\.inv_freq$/;

/** Loads and checks a Llama / Qwen2 / Qwen3 folder; throws ModelFolderError naming the file and field. */
export async function readLlamaFolder(r: FolderReader): Promise<LlamaFolder> {
  const present = new Set(r.paths());
  const rawConfig = await readFolderJson(r, 'config.json', present);
  let config: LlamaConfig;
  try {
    config = parseLlamaConfig(rawConfig);
  } catch (e) {
    if (e instanceof LlamaConfigError) throw new ModelFolderError('config.json', `${e.field}: ${e.detail}`);
    throw e;
  }
  const { tokenizer, generationConfig } = await readChatFiles(r, present);
  let weightFiles: string[];
  let weightMap: Map<string, string> | null = null;
  if (present.has('model.safetensors')) weightFiles = ['model.safetensors'];
  else if (present.has(SHARD_INDEX)) {
    const index = await readFolderJson(r, SHARD_INDEX, present);
    try {
      const parsed = parseShardIndex(index, present);
      weightMap = parsed.weightMap;
      weightFiles = parsed.shards;
    } catch (e) {
      if (e instanceof WeightFileError)
        throw new ModelFolderError(e.file, e.message.slice(e.file.length + 2));
      throw e;
    }
  } else
    throw new ModelFolderError(
      'model.safetensors',
      `is missing (and there is no ${SHARD_INDEX}): the weights must be in safetensors`,
    );
  const layout = llamaLayout(config);
  const params = new Float32Array(layout.total);
  const seen = new Set<string>();
  const storage = new Set<StorageDtype>();
  for (const file of weightFiles) {
    let tensors: ReturnType<typeof readSafetensors>;
    try {
      tensors = readSafetensors(await r.bytes(file), file, (name) => !IGNORED.test(name));
    } catch (e) {
      if (e instanceof WeightFileError) throw new ModelFolderError(file, e.message.slice(file.length + 2));
      throw e;
    }
    for (const [name, t] of tensors) {
      if (weightMap && weightMap.get(name) !== file)
        throw new ModelFolderError(file, `tensor '${name}' is not listed for this shard in ${SHARD_INDEX}`);
      const entry = layout.byName.get(name);
      if (!entry) {
        // a tied model may still store the head; it must then equal the embedding, which is what is used
        if (name === 'lm_head.weight' && config.tiedEmbeddings) continue;
        throw new ModelFolderError(
          file,
          `tensor '${name}' is not part of a ${config.modelType} model with this config.json`,
        );
      }
      if (JSON.stringify(t.shape) !== JSON.stringify(entry.shape))
        throw new ModelFolderError(
          file,
          `tensor '${name}' has shape ${JSON.stringify(t.shape)}; config.json implies ${JSON.stringify(entry.shape)}`,
        );
      params.set(t.data, entry.offset);
      seen.add(name);
      storage.add(t.dtype);
    }
  }
  const missing = layout.tensors.filter((t) => !seen.has(t.name)).map((t) => t.name);
  if (missing.length)
    throw new ModelFolderError(
      weightFiles.length === 1 ? weightFiles[0] : SHARD_INDEX,
      `tensor${missing.length > 1 ? 's' : ''} missing: ${missing.slice(0, 4).join(', ')}${missing.length > 4 ? ` and ${missing.length - 4} more` : ''}`,
    );
  return {
    config,
    rawConfig,
    layout,
    params,
    storage: [...storage].sort(),
    weightFiles,
    tokenizer,
    generationConfig,
    eosTokenIds: idList(generationConfig?.eos_token_id ?? rawConfig.eos_token_id),
  };
}

/** Whether a folder's config.json asks for this engine's architectures (vs an ONNX-only folder). */
export function isLlamaFamily(config: Json): boolean {
  return config.model_type === 'llama' || config.model_type === 'qwen2' || config.model_type === 'qwen3';
}
