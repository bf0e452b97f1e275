/**
 * What a rollout engine other than the trainer offers: seeded sampling of token ids with their log-probs under
 * the engine's own numerics, and a weight sync after each update. onnxruntime-web (ortLm.ts) and transformers.js
 * (transformersLm.ts) implement it; the harness proxy adapts any of them (harness/samplerEngine.ts).
 */
import type { SampleRequest, SampleResult } from '../policy/types';

export type { SampleRequest, SampleResult };

/** What one weight sync cost, in milliseconds (medians are for benchmarks; this is one sync). */
export interface SyncCost {
  /** building the new model bytes (ONNX export, folder files) */
  exportMs: number;
  /** creating the new inference session / loading the model */
  loadMs: number;
  totalMs: number;
  /** size of the model the engine now runs */
  bytes: number;
}

export interface RolloutSampler {
  /** e.g. 'ort-wasm', 'ort-webgpu', 'transformers.js-cpu' */
  readonly backend: string;
  /** weight precision the engine computes with ('f32', 'f16', 'int8'; a brought model's dtype name) */
  readonly precision: string;
  readonly vocabSize: number;
  readonly contextLength: number;
  /** Autoregressive sampling with a KV cache; same seed and weights, same result. */
  sample(req: SampleRequest): Promise<SampleResult>;
  /**
   * The whole next-token distribution (log-probs over the vocabulary at `temperature`) that predicts each chosen
   * position p of `ids` (1 ≤ p < ids.length), under the engine's own numerics; an engine that cannot give it
   * leaves it out (the full-vocabulary mismatch is then not measured).
   */
  vocabLogProbs?(ids: number[], positions: number[], temperature: number): Promise<Float32Array[]>;
  /** Replaces the weights (flat parameter buffer of the policy's layout): re-export and reload. */
  syncWeights(params: Float32Array): Promise<SyncCost>;
  dispose(): Promise<void>;
}
