/**
 * The policy engine's public surface: what the harness proxy (sampling) and the trainer (log-probs, weighted
 * training steps) call. Both backends, WebGPU and the CPU reference, implement it identically.
 */
import type { AdamWHyper } from '../cpu/adamw';
import type { Batch, Layout, PolicyConfig } from '../model';

export type { AdamWHyper, Batch, PolicyConfig };

export interface LogProbResult {
  /** (B·T): logp[b, t] = log π(tokens[b,t] | tokens[b,<t]) at the batch temperature; 0 at t = 0 and where masked. */
  logProbs: Float32Array;
  /** (B·T): entropy of the distribution that predicted position t (same alignment and masking). */
  entropy: Float32Array;
}

export interface TrainStepResult extends LogProbResult {
  /** −Σ w·logp over the batch, before the update. */
  loss: number;
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
  /** Optimizer steps taken so far (this one included). */
  step: number;
}

/** The gradient weights of a backward pass, given the log-probs at the current parameters (PPO's ratio needs them). */
export type WeightsFn = (current: LogProbResult) => Float32Array;

export interface AccumulateResult extends LogProbResult {
  /** −Σ w·logp over the batch, before any update */
  loss: number;
}

export interface OptimizerStepResult {
  /** Global L2 norm of the accumulated gradient before clipping. */
  gradNorm: number;
  /** Optimizer steps taken so far (this one included when it was applied). */
  step: number;
  /** true when the norm was not finite and the update was skipped (as verl's optimizer_step does) */
  skipped: boolean;
}

/** AdamW's state: both moments (flat, like the parameters) and the step count the bias correction uses. */
export interface OptimizerState {
  m: Float32Array;
  v: Float32Array;
  step: number;
}

export interface SampleRequest {
  promptIds: number[];
  /** 0 means greedy decoding. */
  temperature: number;
  /** Nucleus sampling mass in (0, 1]. */
  topP: number;
  maxTokens: number;
  seed: number;
  /** Generation stops after emitting any of these ids (the stop id is included in tokenIds). */
  stopIds?: number[];
  /** Also record the k most likely tokens of each sampled position's distribution (0 or absent: none). */
  topK?: number;
}

export interface SampleResult {
  tokenIds: number[];
  /** log π(token) under softmax(logits / temperature) (temperature 1 when greedy), before top-p truncation. */
  logProbs: number[];
  /**
   * With `topK` > 0: per sampled token, the ids and log-probs of the k most likely tokens of the distribution it
   * was drawn from (the one `logProbs` are taken from), most likely first.
   */
  topK?: { ids: number[]; logProbs: number[] }[];
  finishReason: 'stop' | 'length';
}

export interface PolicyEngine {
  readonly backend: 'webgpu' | 'cpu';
  readonly config: PolicyConfig;
  /** AdamW hyper-parameters used by trainStep; may be changed between steps. */
  optimizer: AdamWHyper;
  /** Per-token log-probs and entropies of a right-padded batch. */
  logProbs(batch: Batch): Promise<LogProbResult>;
  /** Forward, backward of L = −Σ weights·logp (weights per token, B·T), one AdamW step. */
  trainStep(batch: Batch, weights: Float32Array): Promise<TrainStepResult>;
  /**
   * Forward and backward of L = −Σ weights·logp, ADDED to the gradient buffer (micro-batches of one
   * mini-batch accumulate; `optimizerStep` applies and zeroes it). `weights` is an array (B·T) or a function of
   * this forward pass's log-probs that returns it.
   */
  accumulateGrads(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult>;
  /** Global-norm clipping and AdamW over the accumulated gradient, then zeroes it; a non-finite norm skips the update. */
  optimizerStep(): Promise<OptimizerStepResult>;
  /** A copy of AdamW's moments and step (checkpoints). */
  getOptimizerState(): Promise<OptimizerState>;
  setOptimizerState(state: OptimizerState): Promise<void>;
  /** Autoregressive sampling with a KV cache; same seed, same result. */
  sample(req: SampleRequest): Promise<SampleResult>;
  /**
   * The whole next-token distribution (log-probs over the vocabulary at the batch temperature) that predicts
   * each chosen flat position p = b·T + t (1 ≤ t): entry `tokens[p]` of it is `logProbs(batch).logProbs[p]`.
   * The CPU engines have it (the full-vocabulary engine/trainer mismatch); the WebGPU engines do not read the
   * logits back.
   */
  vocabLogProbs?(batch: Batch, positions: number[]): Promise<Float32Array[]>;
  /** A copy of the flat parameter buffer. */
  getParams(): Promise<Float32Array>;
  /** Replaces the parameters (and resets the optimizer state). */
  setParams(params: Float32Array): Promise<void>;
  /**
   * The tensors of the trainable buffer when they are not the GPT-2 layout of `config` (a Llama-family model,
   * or its LoRA adapter): checkpoints are written and read with it.
   */
  readonly trainableLayout?: Layout;
  /** Files a checkpoint also writes in an upstream format (a LoRA adapter as PEFT's folder), by file name. */
  exportFiles?(): Promise<Record<string, Uint8Array | string>>;
  dispose(): void;
}
