/**
 * Node side of Llama-family folders: a path → the checked folder (engine/llama/hfFolder.ts), our CPU engine on
 * its weights, and its chat tokenizer. Errors name the file and the field.
 */
import { existsSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { ChatTokenizer } from '../core/tokenize/tokenizer';
import { type LlamaFolder, readLlamaFolder } from '../engine/llama/hfFolder';
import { nodeFolderReader } from '../engine/onnx/folder';
import { LlamaCpuPolicy } from '../engine/policy/llamaCpuPolicy';

export interface LoadedLlama {
  dir: string;
  folder: LlamaFolder;
  engine: LlamaCpuPolicy;
  tokenizer: ChatTokenizer;
}

export async function loadLlamaModel(
  path: string,
  opts: { contextLength?: number } = {},
): Promise<LoadedLlama> {
  const dir = resolve(path);
  if (!existsSync(dir)) throw new Error(`model folder ${path} does not exist`);
  if (!statSync(dir).isDirectory()) throw new Error(`model folder ${path} is not a folder`);
  let folder: LlamaFolder;
  try {
    folder = await readLlamaFolder(await nodeFolderReader(dir));
  } catch (e) {
    throw new Error(`${path}/${(e as Error).message}`);
  }
  const contextLength = Math.min(
    opts.contextLength ?? folder.config.maxPositions,
    folder.config.maxPositions,
  );
  const engine = new LlamaCpuPolicy(folder.config, folder.params, {}, { contextLength });
  const tokenizer = new ChatTokenizer(
    basename(dir),
    folder.tokenizer.tokenizerJson,
    folder.tokenizer.tokenizerConfig,
  );
  return { dir, folder, engine, tokenizer };
}
