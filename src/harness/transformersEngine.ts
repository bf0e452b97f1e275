/**
 * transformers.js as the rollout engine behind the proxy: over our policy's exported folder (weights synced by
 * re-exporting and reloading it), or over a model folder a user brings (inference only). Seeded sampling through
 * transformers.js's own generate() loop (engine/onnx/transformersLm.ts).
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { PolicyConfig } from '../engine/model';
import type { WeightPrecision } from '../engine/onnx/causalLm';
import type { FolderReader, HfTokenizerFiles } from '../engine/onnx/hfFolder';
import { TransformersCausalLm, type TransformersDevice } from '../engine/onnx/transformersLm';
import { SamplerChatEngine, type SamplerChatEngineOptions } from './samplerEngine';

/** Our policy in transformers.js: exported at `precision` and reloaded on every weight sync. */
export async function createTransformersPolicyEngine(
  tok: ChatTokenizer,
  opts: SamplerChatEngineOptions & {
    device: TransformersDevice;
    config: PolicyConfig;
    params: Float32Array;
    tokenizerFiles: HfTokenizerFiles;
    precision?: WeightPrecision;
  },
): Promise<SamplerChatEngine> {
  const sampler = await TransformersCausalLm.fromPolicy(opts.params, {
    device: opts.device,
    policy: { config: opts.config, tokenizer: opts.tokenizerFiles, precision: opts.precision ?? 'f32' },
  });
  return new SamplerChatEngine('transformers.js', sampler, tok, opts);
}

/**
 * A brought model folder in transformers.js (inference only: syncWeights refuses). The tokenizer is the folder's
 * own (build it from `sampler.folder.tokenizer`); generation stops at its end-of-turn id and the eos ids of its
 * generation_config.
 */
export async function createTransformersFolderEngine(
  reader: FolderReader,
  opts: SamplerChatEngineOptions & {
    device: TransformersDevice;
    dtype?: string;
    tokenizer: (files: HfTokenizerFiles) => ChatTokenizer;
  },
): Promise<{ engine: SamplerChatEngine; tokenizer: ChatTokenizer }> {
  const sampler = await TransformersCausalLm.load(reader, { device: opts.device, dtype: opts.dtype });
  const folder = sampler.folder;
  if (!folder) throw new Error('transformers.js engine: folder not loaded');
  const tokenizer = opts.tokenizer(folder.tokenizer);
  const engine = new SamplerChatEngine('transformers.js', sampler, tokenizer, {
    ...opts,
    stopIds: [...(opts.stopIds ?? []), ...folder.eosTokenIds],
  });
  return { engine, tokenizer };
}
