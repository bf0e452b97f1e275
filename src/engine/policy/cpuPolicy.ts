/**
 * The CPU policy engine: the model of ../model.ts on the CPU. It is the fallback where no WebGPU exists and
 * the yardstick the WebGPU engine is tested against. Matmuls run on the WebAssembly SIMD fast path by
 * default (cpu/matmulFast.ts), and attention as matmuls through it (cpu/attentionFast.ts); `kernels:
 * 'reference'` runs the plain reference loops instead (same results within f32 rounding). Sampling prefills the prompt in one batched pass, then decodes one token at a time against a
 * per-layer KV cache.
 */
import { attentionForwardCpu } from '../cpu/attention';
import { embeddingForwardCpu } from '../cpu/embedding';
import { geluForwardCpu } from '../cpu/gelu';
import { layernormForwardCpu } from '../cpu/layernorm';
import { matmulModeCpu } from '../cpu/matmul';
import { matmulModeFast } from '../cpu/matmulFast';
import {
  type Batch,
  backwardCpu,
  checkBatch,
  forwardCpu,
  initParams,
  type Layout,
  layoutOf,
  type MatmulFn,
  type PolicyConfig,
  prefillCpu,
  resolveConfig,
  views,
  weightedLoss,
} from '../model';
import { checkSampleRequest, vocabLogSoftmax } from '../sampling';
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

export interface CpuPolicyOptions {
  /** 'fast' (default): SIMD matmuls and attention; 'reference': the reference loops of cpu/matmul.ts, cpu/attention.ts */
  kernels?: 'fast' | 'reference';
}

export class CpuPolicy extends CpuTrainer implements PolicyEngine {
  readonly backend = 'cpu' as const;
  readonly config: PolicyConfig;
  readonly layout: Layout;
  params: Float32Array;
  private readonly mm: MatmulFn;

  constructor(
    config: Partial<PolicyConfig> = {},
    optimizer: Partial<AdamWHyper> = {},
    params?: Float32Array,
    opts: CpuPolicyOptions = {},
  ) {
    const resolved = resolveConfig(config);
    const layout = layoutOf(resolved);
    if (params && params.length !== layout.total)
      throw new Error(`policy: params has ${params.length} values, the layout needs ${layout.total}`);
    super(layout.total, optimizer);
    this.config = resolved;
    this.layout = layout;
    this.params = params ? new Float32Array(params) : initParams(this.config, this.layout);
    this.mm = opts.kernels === 'reference' ? matmulModeCpu : matmulModeFast;
  }

  async logProbs(batch: Batch): Promise<LogProbResult> {
    checkBatch(this.config, batch);
    const acts = forwardCpu(this.config, this.layout, this.params, batch, this.mm);
    return { logProbs: acts.logp, entropy: acts.entropy };
  }

  async vocabLogProbs(batch: Batch, positions: number[]): Promise<Float32Array[]> {
    checkBatch(this.config, batch);
    const { seqLen: T } = batch;
    const V = this.config.vocabSize;
    for (const p of positions)
      if (!Number.isInteger(p) || p < 0 || p >= batch.tokens.length || p % T === 0)
        throw new Error(
          `vocabLogProbs: position ${p} must be a flat index b·${T} + t with 1 ≤ t < ${T} (the token it predicts)`,
        );
    const acts = forwardCpu(this.config, this.layout, this.params, batch, this.mm);
    return positions.map((p) =>
      vocabLogSoftmax(acts.logits.subarray((p - 1) * V, p * V), batch.temperature ?? 1),
    );
  }

  protected trainableBuffer(): { params: Float32Array; decayEnd: number } {
    return { params: this.params, decayEnd: this.layout.decayEnd };
  }

  protected backward(batch: Batch, weights: Float32Array | WeightsFn, accumulate: boolean): AccumulateResult {
    checkBatch(this.config, batch);
    if (typeof weights !== 'function') checkWeights(weights, batch.tokens.length);
    const acts = forwardCpu(this.config, this.layout, this.params, batch, this.mm);
    const w =
      typeof weights === 'function' ? weights({ logProbs: acts.logp, entropy: acts.entropy }) : weights;
    if (typeof weights === 'function') checkWeights(w, batch.tokens.length);
    backwardCpu(this.config, this.layout, this.params, batch, acts, w, this.grads, this.mm, accumulate);
    return { loss: weightedLoss(acts.logp, w), logProbs: acts.logp, entropy: acts.entropy };
  }

  async sample(req: SampleRequest): Promise<SampleResult> {
    const { vocabSize: V, contextLength: T, width: C, heads: H, layers: L } = this.config;
    checkSampleRequest(req, V, T);
    // A snapshot: a trainStep started while this sample awaits must not change the weights under it.
    const flat = new Float32Array(this.params);
    const p = views(this.layout, flat);
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
    const mm = this.mm;
    // One token through the network at position pos, extending the KV cache; leaves next-token logits.
    const step = (id: number, pos: number) => {
      tok[0] = id;
      embeddingForwardCpu(tok, p.wte, p.wpe, res, 1, C, pos);
      for (let l = 0; l < L; l++) {
        const h = `h${l}.`;
        layernormForwardCpu(res, p[`${h}ln1.w`], p[`${h}ln1.b`], ln, stats, 1, C);
        mm('nn', ln, p[`${h}attn.qkv.w`], qkv, 1, 3 * C, C, { bias: p[`${h}attn.qkv.b`] });
        cache[l].set(qkv, pos * 3 * C);
        attentionForwardCpu(cache[l], att, atty, 1, T, C, H, pos, 1);
        mm('nn', atty, p[`${h}attn.proj.w`], res, 1, C, C, {
          bias: p[`${h}attn.proj.b`],
          accumulate: true,
        });
        layernormForwardCpu(res, p[`${h}ln2.w`], p[`${h}ln2.b`], ln, stats, 1, C);
        mm('nn', ln, p[`${h}mlp.fc.w`], fch, 1, 4 * C, C, { bias: p[`${h}mlp.fc.b`] });
        geluForwardCpu(fch, fcg);
        mm('nn', fcg, p[`${h}mlp.proj.w`], res, 1, C, 4 * C, {
          bias: p[`${h}mlp.proj.b`],
          accumulate: true,
        });
      }
      layernormForwardCpu(res, p['lnf.w'], p['lnf.b'], ln, stats, 1, C);
      mm('nt', ln, p.wte, logits, 1, V, C);
    };
    const prefill = async (ids: number[]) => {
      const pre = prefillCpu(this.config, this.layout, flat, ids, mm);
      for (let l = 0; l < L; l++) cache[l].set(pre.qkv[l]);
      return pre.logits;
    };
    return decodeLoop(req, T, step, async () => logits, prefill);
  }

  async getParams(): Promise<Float32Array> {
    return new Float32Array(this.params);
  }

  async setParams(params: Float32Array): Promise<void> {
    if (params.length !== this.layout.total)
      throw new Error(`setParams: got ${params.length} values, the layout needs ${this.layout.total}`);
    this.params = new Float32Array(params);
    this.resetOptimizer();
  }

  dispose(): void {}
}
