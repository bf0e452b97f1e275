/**
 * The Llama-family decoder (../llama/model.ts) as a PolicyEngine on the CPU: log-probs and entropies through the
 * fused output head, weighted training steps (the same AdamW and global-norm clipping as the GPT-2 policy,
 * decay on the matrices only), and sampling against a per-layer KV cache. `config` is the GPT-2-shaped summary
 * the rest of the engine's users read (vocabulary, context, layers, width, heads); `llama` is the full config.
 */
import { checkedOptimizerState, cpuOptimizerStep } from '../cpu/adamw';
import { matmulModeCpu } from '../cpu/matmul';
import { matmulModeFast } from '../cpu/matmulFast';
import type { LlamaConfig } from '../llama/config';
import {
  type LlamaForwardOptions,
  LlamaKvCache,
  llamaBackwardCpu,
  llamaForwardCpu,
  llamaLayout,
} from '../llama/model';
import {
  type Batch,
  checkBatch,
  defaultOptimizer,
  type Layout,
  type MatmulFn,
  type PolicyConfig,
  weightedLoss,
} from '../model';
import { checkSampleRequest } from '../sampling';
import { decodeLoop } from './decode';
import type {
  AccumulateResult,
  AdamWHyper,
  LogProbResult,
  OptimizerState,
  OptimizerStepResult,
  PolicyEngine,
  SampleRequest,
  SampleResult,
  TrainStepResult,
  WeightsFn,
} from './types';

export interface LlamaCpuPolicyOptions {
  /** 'fast' (default): blocked matmuls; 'reference': the reference loops */
  kernels?: 'fast' | 'reference';
  /** vocabulary chunk of the fused head (default 4096) */
  chunk?: number;
  /** the context the engine accepts (default: the config's max_position_embeddings) */
  contextLength?: number;
}

/** The GPT-2-shaped summary of a Llama config (what PolicyEngine.config carries). */
export function llamaSummary(cfg: LlamaConfig, contextLength = cfg.maxPositions): PolicyConfig {
  return {
    vocabSize: cfg.vocabSize,
    contextLength,
    layers: cfg.layers,
    width: cfg.hidden,
    heads: cfg.heads,
    seed: 0,
  };
}

function checkWeights(weights: Float32Array, n: number): void {
  if (weights.length !== n)
    throw new Error(`trainStep: weights has ${weights.length} values, expected one per token (${n})`);
  for (let i = 0; i < weights.length; i++)
    if (!Number.isFinite(weights[i])) throw new Error(`trainStep: weights[${i}] is ${weights[i]}`);
}

export class LlamaCpuPolicy implements PolicyEngine {
  readonly backend = 'cpu' as const;
  readonly architecture: LlamaConfig['modelType'];
  readonly config: PolicyConfig;
  readonly layout: Layout;
  optimizer: AdamWHyper;
  params: Float32Array;
  readonly grads: Float32Array;
  m: Float32Array;
  v: Float32Array;
  step = 0;
  private readonly mm: MatmulFn;
  private readonly chunk?: number;

  constructor(
    readonly llama: LlamaConfig,
    params: Float32Array,
    optimizer: Partial<AdamWHyper> = {},
    opts: LlamaCpuPolicyOptions = {},
  ) {
    this.architecture = llama.modelType;
    this.layout = llamaLayout(llama);
    if (params.length !== this.layout.total)
      throw new Error(
        `policy: params has ${params.length} values, the ${llama.modelType} layout needs ${this.layout.total}`,
      );
    this.config = llamaSummary(llama, opts.contextLength);
    this.optimizer = { ...defaultOptimizer, ...optimizer };
    this.params = new Float32Array(params);
    this.grads = new Float32Array(this.layout.total);
    this.m = new Float32Array(this.layout.total);
    this.v = new Float32Array(this.layout.total);
    this.mm = opts.kernels === 'reference' ? matmulModeCpu : matmulModeFast;
    this.chunk = opts.chunk;
  }

  private forward(batch: Batch, extra: Pick<LlamaForwardOptions, 'topk'> = {}) {
    checkBatch(this.config, batch);
    return llamaForwardCpu(this.llama, this.layout, this.params, batch, {
      mm: this.mm,
      chunk: this.chunk,
      ...extra,
    });
  }

  async logProbs(batch: Batch): Promise<LogProbResult> {
    const a = this.forward(batch);
    return { logProbs: a.logp, entropy: a.entropy };
  }

  /**
   * The full next-token distribution's top-k at chosen flat (b·T + t) positions, i.e. of the distribution that
   * predicts position t + 1, with the log-probs and entropies of the batch.
   */
  async topK(
    batch: Batch,
    positions: number[],
    k: number,
  ): Promise<LogProbResult & { topk: { position: number; ids: number[]; logprobs: number[] }[] }> {
    if (!Number.isInteger(k) || k < 1 || k > this.llama.vocabSize)
      throw new Error(`topK: k must be an integer in [1, ${this.llama.vocabSize}], got ${k}`);
    const a = this.forward(batch, { topk: { positions, k } });
    return { logProbs: a.logp, entropy: a.entropy, topk: a.topk ?? [] };
  }

  /** Gradient of −Σ w·logp into this.grads (overwritten), without an update (tests and gradient checks). */
  computeGrads(batch: Batch, weights: Float32Array): AccumulateResult {
    return this.backward(batch, weights, false);
  }

  private backward(batch: Batch, weights: Float32Array | WeightsFn, accumulate: boolean): AccumulateResult {
    if (typeof weights !== 'function') checkWeights(weights, batch.tokens.length);
    const acts = this.forward(batch);
    const w =
      typeof weights === 'function' ? weights({ logProbs: acts.logp, entropy: acts.entropy }) : weights;
    if (typeof weights === 'function') checkWeights(w, batch.tokens.length);
    llamaBackwardCpu(this.llama, this.layout, this.params, batch, acts, w, this.grads, {
      mm: this.mm,
      chunk: this.chunk,
      accumulate,
    });
    return { loss: weightedLoss(acts.logp, w), logProbs: acts.logp, entropy: acts.entropy };
  }

  async accumulateGrads(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult> {
    return this.backward(batch, weights, true);
  }

  async optimizerStep(): Promise<OptimizerStepResult> {
    return cpuOptimizerStep(this, this.layout.decayEnd, this.optimizer);
  }

  async trainStep(batch: Batch, weights: Float32Array): Promise<TrainStepResult> {
    this.grads.fill(0);
    const r = this.backward(batch, weights, true);
    const s = await this.optimizerStep();
    return { ...r, gradNorm: s.gradNorm, step: s.step };
  }

  async getOptimizerState(): Promise<OptimizerState> {
    return { m: new Float32Array(this.m), v: new Float32Array(this.v), step: this.step };
  }

  async setOptimizerState(state: OptimizerState): Promise<void> {
    const s = checkedOptimizerState(state, this.layout.total);
    this.m = s.m;
    this.v = s.v;
    this.step = s.step;
  }

  async sample(req: SampleRequest): Promise<SampleResult> {
    const T = this.config.contextLength;
    checkSampleRequest(req, this.llama.vocabSize, T);
    // a snapshot, so a training step while this awaits does not change the weights under it
    const flat = new Float32Array(this.params);
    const capacity = Math.min(T, req.promptIds.length + req.maxTokens);
    const cache = new LlamaKvCache(this.llama, this.layout, flat, capacity, this.mm);
    let logits: Float32Array = new Float32Array(0);
    return decodeLoop(
      req,
      capacity,
      (id) => {
        logits = cache.feed([id]);
      },
      async () => logits,
      async (ids) => cache.feed(ids),
    );
  }

  async getParams(): Promise<Float32Array> {
    return new Float32Array(this.params);
  }

  async setParams(params: Float32Array): Promise<void> {
    if (params.length !== this.layout.total)
      throw new Error(`setParams: got ${params.length} values, the layout needs ${this.layout.total}`);
    this.params = new Float32Array(params);
    this.m = new Float32Array(this.layout.total);
    this.v = new Float32Array(this.layout.total);
    this.grads.fill(0);
    this.step = 0;
  }

  dispose(): void {}
}
