/**
 * onnxruntime-web as the rollout engine behind the proxy: our policy exported as a KV-cache causal LM
 * (engine/onnx/causalLm.ts) on the wasm EP (Node and page) or the webgpu EP (page), at a chosen weight
 * precision — the engine is not the trainer, so its log-probs differ from the trainer's by its numerics.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { PolicyConfig } from '../engine/model';
import type { WeightPrecision } from '../engine/onnx/causalLm';
import { OrtCausalLm, type OrtEp, type OrtModule } from '../engine/onnx/ortLm';
import { SamplerChatEngine, type SamplerChatEngineOptions } from './samplerEngine';

export interface OrtChatEngineOptions extends SamplerChatEngineOptions {
  /** `onnxruntime-web` (wasm EP) or `onnxruntime-web/webgpu` (webgpu EP), env.wasm.wasmPaths already set */
  ort: OrtModule;
  ep: OrtEp;
  config: PolicyConfig;
  /** initial weights (the trainer's flat parameter buffer) */
  params: Float32Array;
  precision?: WeightPrecision;
}

export async function createOrtChatEngine(
  tok: ChatTokenizer,
  opts: OrtChatEngineOptions,
): Promise<SamplerChatEngine> {
  const sampler = await OrtCausalLm.create(
    { ort: opts.ort, ep: opts.ep, config: opts.config, precision: opts.precision },
    opts.params,
  );
  return new SamplerChatEngine('onnxruntime-web', sampler, tok, opts);
}
