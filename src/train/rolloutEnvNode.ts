/**
 * The rollout engines' environment in Node (rolloutEngines.ts): onnxruntime-web's default entry, whose wasm EP
 * runs in Node from node_modules, and the policy tokenizer's files from public/tokenizer/. transformers.js needs
 * nothing here: in Node it runs on onnxruntime-node and reads folders from disk. Node only (node:fs).
 */
import { readFile } from 'node:fs/promises';
import type { HfTokenizerFiles } from '../engine/onnx/hfFolder';
import type { OrtModule } from '../engine/onnx/ortLm';
import type { RolloutEngineEnv } from './rolloutEngines';

const TOKENIZER = new URL('../../public/tokenizer/', import.meta.url);

export interface NodeRolloutEnvOptions {
  /** onnxruntime-web wasm threads (fixed at its first session; default 1: harness workers share the cores) */
  ortThreads?: number;
}

export function nodeRolloutEnv(opts: NodeRolloutEnvOptions = {}): RolloutEngineEnv {
  return {
    platform: 'node',
    async ort() {
      const ort = await import('onnxruntime-web');
      ort.env.wasm.numThreads = opts.ortThreads ?? 1;
      ort.env.logLevel = 'error';
      return ort as unknown as OrtModule;
    },
    async tokenizerFiles(): Promise<HfTokenizerFiles> {
      const read = async (f: string) =>
        JSON.parse(await readFile(new URL(f, TOKENIZER), 'utf8')) as Record<string, unknown>;
      return {
        tokenizerJson: await read('tokenizer.json'),
        tokenizerConfig: await read('tokenizer_config.json'),
      };
    },
  };
}
