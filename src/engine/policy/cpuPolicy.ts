/**
 * The CPU policy engine: the model of ../model.ts run on the CPU references. It is the fallback where no
 * WebGPU exists and the yardstick the WebGPU engine is tested against.
 */
import { mulberry32 } from '../../core/random';
import { adamwStepCpu } from '../cpu/adamw';
import { attentionForwardCpu } from '../cpu/attention';
import { embeddingForwardCpu } from '../cpu/embedding';
import { geluForwardCpu } from '../cpu/gelu';
import { layernormForwardCpu } from '../cpu/layernorm';
import { matmulModeCpu } from '../cpu/matmul';
import {
  type Batch,
  backwardCpu,
  checkBatch,
  defaultOptimizer,
  forwardCpu,
  initParams,
  type Layout,
  layoutOf,
  type PolicyConfig,
  resolveConfig,
  views,
  weightedLoss,
} from '../model';
import { checkSampleRequest, pickToken } from '../sampling';
import type {
  AdamWHyper,
  LogProbResult,
  PolicyEngine,
  SampleRequest,
  SampleResult,
  TrainStepResult,
} from './types';

export class CpuPolicy implements PolicyEngine {
  readonly backend = 'cpu' as const;
  readonly config: PolicyConfig;
  readonly layout: Layout;
  optimizer: AdamWHyper;
  params: Float32Array;
  readonly grads: Float32Array;
  m: Float32Array;
  v: Float32Array;
  step = 0;

  constructor(
    config: Partial<PolicyConfig> = {},
    optimizer: Partial<AdamWHyper> = {},
    params?: Float32Array,
  ) {
    this.config = resolveConfig(config);
    this.layout = layoutOf(this.config);
    this.optimizer = { ...defaultOptimizer, ...optimizer };
    if (params && params.length !== this.layout.total)
      throw new Error(`policy: params has ${params.length} values, the layout needs ${this.layout.total}`);
    this.params = params ? new Float32Array(params) : initParams(this.config, this.layout);
    this.grads = new Float32Array(this.layout.total);
    this.m = new Float32Array(this.layout.total);
    this.v = new Float32Array(this.layout.total);
  }

  async logProbs(batch: Batch): Promise<LogProbResult> {
    checkBatch(this.config, batch);
    const acts = forwardCpu(this.config, this.layout, this.params, batch);
    return { logProbs: acts.logp, entropy: acts.entropy };
  }

  /** Gradient of −Σ w·logp into this.grads, without an update (used by tests and gradient checks). */
  computeGrads(
    batch: Batch,
    weights: Float32Array,
  ): { loss: number; logProbs: Float32Array; entropy: Float32Array } {
    checkBatch(this.config, batch);
    if (weights.length !== batch.tokens.length)
      throw new Error(
        `trainStep: weights has ${weights.length} values, expected one per token (${batch.tokens.length})`,
      );
    const acts = forwardCpu(this.config, this.layout, this.params, batch);
    backwardCpu(this.config, this.layout, this.params, batch, acts, weights, this.grads);
    return { loss: weightedLoss(acts.logp, weights), logProbs: acts.logp, entropy: acts.entropy };
  }

  async trainStep(batch: Batch, weights: Float32Array): Promise<TrainStepResult> {
    const r = this.computeGrads(batch, weights);
    this.step++;
    const gradNorm = adamwStepCpu(
      this.params,
      this.grads,
      this.m,
      this.v,
      this.step,
      this.layout.decayEnd,
      this.optimizer,
    );
    return { ...r, gradNorm, step: this.step };
  }

  async sample(req: SampleRequest): Promise<SampleResult> {
    const { vocabSize: V, contextLength: T, width: C, heads: H, layers: L } = this.config;
    checkSampleRequest(req, V, T);
    // A snapshot: a trainStep started while this sample awaits must not change the weights under it.
    const p = views(this.layout, new Float32Array(this.params));
    const cache = Array.from({ length: L }, () => new Float32Array(T * 3 * C));
    const res = new Float32Array(C);
    const ln = new Float32Array(C);
    const stats = new Float32Array(2);
    const qkv = new Float32Array(3 * C);
    const att = new Float32Array(H * T);
    const atty = new Float32Array(C);
    const fch = new Float32Array(4 * C);
    const fcg = new Float32Array(4 * C);
    const logits = new Float32Array(V);
    const tok = new Uint32Array(1);
    // One token through the network at position pos, extending the KV cache; leaves next-token logits.
    const step = (id: number, pos: number) => {
      tok[0] = id;
      embeddingForwardCpu(tok, p.wte, p.wpe, res, 1, C, pos);
      for (let l = 0; l < L; l++) {
        const h = `h${l}.`;
        layernormForwardCpu(res, p[`${h}ln1.w`], p[`${h}ln1.b`], ln, stats, 1, C);
        matmulModeCpu('nn', ln, p[`${h}attn.qkv.w`], qkv, 1, 3 * C, C, { bias: p[`${h}attn.qkv.b`] });
        cache[l].set(qkv, pos * 3 * C);
        attentionForwardCpu(cache[l], att, atty, 1, T, C, H, pos, 1);
        matmulModeCpu('nn', atty, p[`${h}attn.proj.w`], res, 1, C, C, {
          bias: p[`${h}attn.proj.b`],
          accumulate: true,
        });
        layernormForwardCpu(res, p[`${h}ln2.w`], p[`${h}ln2.b`], ln, stats, 1, C);
        matmulModeCpu('nn', ln, p[`${h}mlp.fc.w`], fch, 1, 4 * C, C, { bias: p[`${h}mlp.fc.b`] });
        geluForwardCpu(fch, fcg);
        matmulModeCpu('nn', fcg, p[`${h}mlp.proj.w`], res, 1, C, 4 * C, {
          bias: p[`${h}mlp.proj.b`],
          accumulate: true,
        });
      }
      layernormForwardCpu(res, p['lnf.w'], p['lnf.b'], ln, stats, 1, C);
      matmulModeCpu('nt', ln, p.wte, logits, 1, V, C);
    };
    return decodeLoop(req, T, step, async () => logits);
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
    this.step = 0;
  }

  dispose(): void {}
}

/**
 * The decode loop both engines share: fill the KV cache with the prompt (`prefill`, which returns the
 * next-token logits, or else `step` one token at a time), then pick and feed tokens until a stop id,
 * maxTokens, or the end of the context.
 */
export async function decodeLoop(
  req: SampleRequest,
  contextLength: number,
  step: (id: number, pos: number) => void | Promise<void>,
  readLogits: () => Promise<Float32Array>,
  prefill?: (promptIds: number[]) => Promise<Float32Array>,
): Promise<SampleResult> {
  const rand = mulberry32(req.seed);
  const stop = new Set(req.stopIds ?? []);
  let pos = 0;
  let logits: Float32Array;
  if (prefill) {
    logits = await prefill(req.promptIds);
    pos = req.promptIds.length;
  } else {
    for (const id of req.promptIds) await step(id, pos++);
    logits = await readLogits();
  }
  const tokenIds: number[] = [];
  const logProbs: number[] = [];
  while (true) {
    if (tokenIds.length > 0) logits = await readLogits();
    const { id, logProb } = pickToken(logits, req.temperature, req.topP, rand);
    tokenIds.push(id);
    logProbs.push(logProb);
    if (stop.has(id)) return { tokenIds, logProbs, finishReason: 'stop' };
    if (tokenIds.length >= req.maxTokens || pos >= contextLength)
      return { tokenIds, logProbs, finishReason: 'length' };
    await step(id, pos++);
  }
}
