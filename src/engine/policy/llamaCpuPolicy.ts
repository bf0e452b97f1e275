/**
 * The Llama-family decoder (../llama/model.ts) as a PolicyEngine on the CPU: log-probs and entropies through the
 * fused output head, weighted training steps (the same AdamW and global-norm clipping as the GPT-2 policy,
 * decay on the matrices only), and sampling against a per-layer KV cache. `config` is the GPT-2-shaped summary
 * the rest of the engine's users read (vocabulary, context, layers, width, heads); `llama` is the full config.
 *
 * Two ways to train: full fine-tuning (every parameter trainable, the default) or LoRA (`lora` option,
 * ../llama/lora.ts): the base weights stay frozen and are never differentiated, and the gradient, AdamW's
 * moments and the optimizer step cover the adapter's flat buffer only. The trainable buffer is what
 * getParams / setParams / the optimizer state speak of (`trainableLayout` names its tensors). With LoRA the
 * reference policy for a KL term is the base itself (`referenceLogProbs`: the adapter switched off), so no
 * second copy of the weights is held.
 */

import { type GqaKernels, gqaReference } from '../cpu/gqa';
import { gqaFast } from '../cpu/gqaFast';
import { matmulModeCpu } from '../cpu/matmul';
import { matmulModeFast } from '../cpu/matmulFast';
import type { LlamaConfig } from '../llama/config';
import { LoraAdapter, type LoraConfig, loraInit, loraLayout, mergeLora } from '../llama/lora';
import {
  type LlamaForwardOptions,
  LlamaKvCache,
  llamaBackwardCpu,
  llamaForwardCpu,
  llamaLayout,
} from '../llama/model';
import { encodeAdapter } from '../llama/peftAdapter';
import {
  type Batch,
  checkBatch,
  type Layout,
  type MatmulFn,
  type PolicyConfig,
  weightedLoss,
} from '../model';
import { checkSampleRequest } from '../sampling';
import { CpuTrainer, checkWeights } from './cpuTrainer';
import { decodeLoop } from './decode';
import type {
  AccumulateResult,
  AdamWHyper,
  LogProbResult,
  PolicyEngine,
  SampleRequest,
  SampleResult,
  WeightsFn,
} from './types';

export interface LlamaCpuPolicyOptions {
  /** 'fast' (default): the WebAssembly SIMD matmuls and attention; 'reference': the reference loops */
  kernels?: 'fast' | 'reference';
  /** vocabulary chunk of the fused head (default 4096) */
  chunk?: number;
  /** the context the engine accepts (default: the config's max_position_embeddings) */
  contextLength?: number;
  /** the base model's name or path, written into an exported adapter_config.json */
  baseModel?: string;
  /** train a LoRA adapter on the frozen base: its config, and its values (default: PEFT's init from `seed`) */
  lora?: { config: LoraConfig; params?: Float32Array; seed?: number };
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

/**
 * A LoRA run's frozen base as a read-only PolicyEngine (log-probs only, from the engine's own weights with the
 * adapter off): what a trainer takes as the reference policy, with no second copy of the weights.
 */
export function frozenBasePolicy(
  engine: Pick<PolicyEngine, 'backend' | 'config' | 'optimizer'>,
  logProbs: (batch: Batch) => Promise<LogProbResult>,
): PolicyEngine {
  const no = (what: string) => async (): Promise<never> => {
    throw new Error(`the reference policy (the frozen base) does not ${what}`);
  };
  return {
    backend: engine.backend,
    config: engine.config,
    optimizer: engine.optimizer,
    logProbs,
    trainStep: no('train'),
    accumulateGrads: no('train'),
    optimizerStep: no('train'),
    getOptimizerState: no('have an optimizer'),
    setOptimizerState: no('have an optimizer'),
    sample: no('sample'),
    getParams: no('export weights'),
    setParams: no('take weights'),
    dispose: () => {},
  };
}

export class LlamaCpuPolicy extends CpuTrainer implements PolicyEngine {
  readonly backend = 'cpu' as const;
  readonly architecture: LlamaConfig['modelType'];
  readonly config: PolicyConfig;
  readonly layout: Layout;
  /** the LoRA adapter when training one (its buffer is the trainable one) */
  readonly adapter?: LoraAdapter;
  /** the tensors of the trainable buffer: the adapter's with LoRA, else the model's */
  readonly trainableLayout: Layout;
  /** the model's weights (frozen with LoRA) */
  params: Float32Array;
  private readonly mm: MatmulFn;
  private readonly attention: GqaKernels;
  private readonly chunk?: number;
  private readonly baseModel?: string;

  constructor(
    readonly llama: LlamaConfig,
    params: Float32Array,
    optimizer: Partial<AdamWHyper> = {},
    opts: LlamaCpuPolicyOptions = {},
  ) {
    const layout = llamaLayout(llama);
    if (params.length !== layout.total)
      throw new Error(
        `policy: params has ${params.length} values, the ${llama.modelType} layout needs ${layout.total}`,
      );
    let adapter: LoraAdapter | undefined;
    if (opts.lora) {
      const loraTensors = loraLayout(llama, opts.lora.config);
      const init = opts.lora.params
        ? new Float32Array(opts.lora.params)
        : loraInit(loraTensors, opts.lora.seed ?? 0);
      adapter = new LoraAdapter(llama, opts.lora.config, init);
    }
    super((adapter ? adapter.layout : layout).total, optimizer);
    this.architecture = llama.modelType;
    this.layout = layout;
    this.config = llamaSummary(llama, opts.contextLength);
    this.params = new Float32Array(params);
    this.adapter = adapter;
    this.trainableLayout = adapter ? adapter.layout : layout;
    this.mm = opts.kernels === 'reference' ? matmulModeCpu : matmulModeFast;
    this.attention = opts.kernels === 'reference' ? gqaReference : gqaFast;
    this.chunk = opts.chunk;
    this.baseModel = opts.baseModel;
  }

  private forward(batch: Batch, extra: Pick<LlamaForwardOptions, 'topk'> = {}, base = false) {
    checkBatch(this.config, batch);
    return llamaForwardCpu(this.llama, this.layout, this.params, batch, {
      mm: this.mm,
      attention: this.attention,
      chunk: this.chunk,
      lora: base ? undefined : this.adapter,
      ...extra,
    });
  }

  /** The trainable buffer itself (not a copy): the adapter's with LoRA, else the model's parameters. */
  get trainable(): Float32Array {
    return this.adapter ? this.adapter.params : this.params;
  }

  /**
   * Log-probs of the frozen base with the adapter disabled (PEFT's `disable_adapter()`): the reference policy
   * of a LoRA run, from the same weights in memory. Without LoRA the base is being trained, so there is none.
   */
  async referenceLogProbs(batch: Batch): Promise<LogProbResult> {
    if (!this.adapter)
      throw new Error(
        'referenceLogProbs: full fine-tuning changes the base; the reference needs its own copy',
      );
    const a = this.forward(batch, {}, true);
    return { logProbs: a.logp, entropy: a.entropy };
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

  async vocabLogProbs(batch: Batch, positions: number[]): Promise<Float32Array[]> {
    const T = batch.seqLen;
    for (const p of positions)
      if (!Number.isInteger(p) || p < 0 || p >= batch.tokens.length || p % T === 0)
        throw new Error(
          `vocabLogProbs: position ${p} must be a flat index b·${T} + t with 1 ≤ t < ${T} (the token it predicts)`,
        );
    const V = this.llama.vocabSize;
    // the top-V of the row that predicts p is the whole distribution, in another order
    const a = this.forward(batch, { topk: { positions: positions.map((p) => p - 1), k: V } });
    return (a.topk ?? []).map((t) => {
      const out = new Float32Array(V);
      t.ids.forEach((id, i) => {
        out[id] = t.logprobs[i];
      });
      return out;
    });
  }

  /**
   * The frozen base as a read-only PolicyEngine (its log-probs are `referenceLogProbs`): what a trainer takes
   * as the reference policy of a LoRA run, with no second copy of the weights.
   */
  referencePolicy(): PolicyEngine {
    if (!this.adapter) throw new Error('referencePolicy: only a LoRA run has the frozen base in memory');
    return frozenBasePolicy(this, (batch) => this.referenceLogProbs(batch));
  }

  /** With LoRA: the adapter as PEFT's folder (adapter_config.json, adapter_model.safetensors). */
  async exportFiles(): Promise<Record<string, Uint8Array | string>> {
    return this.adapter ? encodeAdapter(this.adapter, this.baseModel ?? null) : {};
  }

  /** The model's weights with the adapter merged in (W + s·B·A, PEFT's merge_and_unload), in the base layout. */
  async mergedParams(): Promise<Float32Array> {
    return this.adapter
      ? mergeLora(this.llama, this.layout, this.params, this.adapter)
      : new Float32Array(this.params);
  }

  protected trainableBuffer(): { params: Float32Array; decayEnd: number } {
    return { params: this.trainable, decayEnd: this.trainableLayout.decayEnd };
  }

  protected backward(batch: Batch, weights: Float32Array | WeightsFn, accumulate: boolean): AccumulateResult {
    if (typeof weights !== 'function') checkWeights(weights, batch.tokens.length);
    const acts = this.forward(batch);
    const w =
      typeof weights === 'function' ? weights({ logProbs: acts.logp, entropy: acts.entropy }) : weights;
    if (typeof weights === 'function') checkWeights(w, batch.tokens.length);
    const grads = this.adapter ? null : this.grads;
    llamaBackwardCpu(this.llama, this.layout, this.params, batch, acts, w, grads, {
      mm: this.mm,
      attention: this.attention,
      chunk: this.chunk,
      accumulate,
      lora: this.adapter,
      loraGrads: this.adapter ? this.grads : undefined,
    });
    return { loss: weightedLoss(acts.logp, w), logProbs: acts.logp, entropy: acts.entropy };
  }

  async sample(req: SampleRequest): Promise<SampleResult> {
    const T = this.config.contextLength;
    checkSampleRequest(req, this.llama.vocabSize, T);
    // a snapshot, so a training step while this awaits does not change the weights under it
    const flat = this.adapter ? this.params : new Float32Array(this.params);
    const adapter = this.adapter
      ? new LoraAdapter(this.llama, this.adapter.config, new Float32Array(this.adapter.params))
      : undefined;
    const capacity = Math.min(T, req.promptIds.length + req.maxTokens);
    const cache = new LlamaKvCache(this.llama, this.layout, flat, capacity, this.mm, adapter, this.attention);
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

  /** A copy of the trainable buffer (the adapter's with LoRA). */
  async getParams(): Promise<Float32Array> {
    return new Float32Array(this.trainable);
  }

  /** Replaces the trainable buffer (the adapter's with LoRA) and resets the optimizer state. */
  async setParams(params: Float32Array): Promise<void> {
    const n = this.trainableLayout.total;
    if (params.length !== n) throw new Error(`setParams: got ${params.length} values, the layout needs ${n}`);
    if (this.adapter) this.adapter.params = new Float32Array(params);
    else this.params = new Float32Array(params);
    this.resetOptimizer();
  }

  dispose(): void {}
}
