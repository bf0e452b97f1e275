/**
 * The Llama-family decoder (../llama/model.ts) as a PolicyEngine on WebGPU: the same forward, backward and
 * sampling as LlamaCpuPolicy with every op in a WGSL kernel (rmsnorm, rope, gqa, swiglu, the fused output head,
 * matmul with bias for qwen2's q/k/v, AdamW). Parameters, gradients and Adam moments live in one flat buffer
 * each, laid out by llamaLayout (HF names and orientations: y = x·Wᵀ + b). Each batch shape gets a recorded
 * forward and backward Program; only ids, mask, per-row targets and weights go up, only the head's per-row
 * stats (log-prob, entropy, log-sum-exp) come back. The head runs on every row with the next id as its target
 * (none where that id or the row is padding), so no (B·T·V) logits exist in training; the decoder reads one
 * row of logits per generated token against a per-layer KV cache.
 *
 * Mixed precision (`baseDtype`, LoRA only): the frozen base can be stored as packed f16 or bf16 halves (two per
 * u32 word, src/engine/cpu/half.ts), half the memory, widened to f32 where the matmul, embedding and head kernels
 * read it; every sum, the adapter, its gradient and AdamW's moments stay f32. Norm weights and biases (a small
 * f32 buffer) hold the same rounded values, so the run equals the f32 engine on the rounded weights.
 */

import { serialQueue } from '../../core/serial';
import { type BaseDtype, packHalves, roundToDtype, unpackHalves } from '../cpu/half';
import { ropeTables } from '../cpu/rope';
import { type GpuContext, Program } from '../gpu/device';
import * as K from '../gpu/kernels';
import { adamwPartials } from '../gpu/kernels';
import { type LlamaConfig, ropeInvFreq } from '../llama/config';
import { loraInit, loraLayout, mergeLora } from '../llama/lora';
import { planWeightShards, type WeightShard } from '../llama/memoryFit';
import { headName, llamaLayout, positionsOf } from '../llama/model';
import { encodeAdapter } from '../llama/peftAdapter';
import {
  type Batch,
  checkBatch,
  defaultOptimizer,
  type Layout,
  type PolicyConfig,
  weightedLoss,
} from '../model';
import { checkSampleRequest } from '../sampling';
import { checkWeights } from './cpuTrainer';
import { decodeLoop } from './decode';
import {
  type AdamPrograms,
  adamPrograms,
  adamStep,
  type GpuAdamWTarget,
  readOptimizerState,
  writeOptimizerState,
} from './gpuOptimizer';
import { frozenBasePolicy, type LlamaCpuPolicyOptions, llamaSummary } from './llamaCpuPolicy';
import { GpuLora, type LoraSaved } from './llamaGpuLora';
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

const F4 = 4;
/** Batch shapes whose activations stay allocated; the least recently used shape beyond this is freed. */
const MAX_GRAPHS = 8;
/** the head's target id for a row that has none */
const NO_TARGET = 0xffffffff;

interface Graph {
  B: number;
  T: number;
  tokens: GPUBuffer;
  mask: GPUBuffer;
  pos: GPUBuffer;
  targets: GPUBuffer;
  rowWeights: GPUBuffer;
  stats: GPUBuffer;
  forward: Program;
  /** the backward, recorded on the first training call (it binds the gradient buffer, made then) */
  backward: () => Promise<Program>;
  /** the fused head's uniforms (temperature lives there) in the forward and backward programs */
  headUniforms: GPUBuffer[];
  temperature: number;
  /** per layer: rotated keys and values (B·T, KV·D): a prompt's KV cache after a forward pass */
  k: GPUBuffer[];
  v: GPUBuffer[];
  /** the last residual stream (B·T, C), before the final norm */
  out: GPUBuffer;
  /** the residual stream (B·T, C) entering each layer, then after the last (L + 1 buffers; `out` is the last) */
  res: GPUBuffer[];
  buffers: GPUBuffer[];
  /** the forward without the adapter (the frozen base), recorded on first use; `forward` itself without LoRA */
  baseForward: () => Promise<Program>;
  /** programs recorded after the graph (freed with it) */
  programs: Program[];
}

interface Decoder {
  capacity: number;
  /** one token through every layer: the residual `x` (C) afterwards */
  layers: Program;
  /** final norm and the full head on `x`: logits (V) */
  head: Program;
  token: GPUBuffer;
  pos: GPUBuffer;
  x: GPUBuffer;
  logits: GPUBuffer;
  gqaUniforms: GPUBuffer[];
  copies: { dstOffset?: number }[];
  cacheK: GPUBuffer[];
  cacheV: GPUBuffer[];
  buffers: GPUBuffer[];
}

/** The per-row head targets and the positions of a batch (what the GPU programs read besides ids and mask). */
function rowsOf(batch: Batch): { targets: Uint32Array; pos: Uint32Array } {
  const { batchSize: B, seqLen: T, mask, tokens } = batch;
  const real = batch.attention ?? mask;
  const targets = new Uint32Array(B * T).fill(NO_TARGET);
  for (let b = 0; b < B; b++)
    for (let t = 0; t + 1 < T; t++) {
      const n = b * T + t;
      if (real[n] !== 0 && mask[n + 1] !== 0) targets[n] = tokens[n + 1];
    }
  return { targets, pos: Uint32Array.from(positionsOf(real, B, T)) };
}

export interface LlamaGpuPolicyOptions {
  /** the context the engine accepts (default: the config's max_position_embeddings) */
  contextLength?: number;
  /** the base model's name or path, written into an exported adapter_config.json */
  baseModel?: string;
  /** train a LoRA adapter on the frozen base (as LlamaCpuPolicy's option: config, values or PEFT's init from `seed`) */
  lora?: LlamaCpuPolicyOptions['lora'];
  /**
   * how the frozen base is stored on the GPU (LoRA only): f32 (default, the exact path) or f16 / bf16 halves,
   * rounded to nearest even (a folder stored in that dtype is held exactly)
   */
  baseDtype?: BaseDtype;
}

export class LlamaGpuPolicy implements PolicyEngine {
  readonly backend = 'webgpu' as const;
  readonly architecture: LlamaConfig['modelType'];
  readonly config: PolicyConfig;
  readonly layout: Layout;
  /** the LoRA adapter when training one (its buffer is the trainable one) */
  readonly lora?: GpuLora;
  /** the tensors of the trainable buffer: the adapter's with LoRA, else the model's */
  readonly trainableLayout: Layout;
  optimizer: AdamWHyper;
  step = 0;
  /** how `params` stores the base: f32, or packed f16 / bf16 halves (LoRA only) */
  readonly baseDtype: BaseDtype;
  /**
   * the model's weights (frozen with LoRA): f32 values or, with a 16-bit baseDtype, packed halves, in buffers
   * no larger than the adapter's largest binding (planWeightShards: one buffer when the flat layout fits, the
   * only form full fine-tuning takes); `shards[i]` holds the layout's elements [start, end) of `shardPlan[i]`
   */
  readonly shards: GPUBuffer[];
  private readonly shardPlan: WeightShard[];
  /** the norm weights and biases as f32 (read by rmsnorm and the matmul's bias): the weight buffer itself at f32 in one shard */
  readonly vectors: GPUBuffer;
  /** where each norm weight and bias starts in `vectors` */
  private readonly vectorOff: Map<string, number>;
  /** the gradient of the trainable buffer, and AdamW's moments: made on the first training call */
  private state: { grads: GPUBuffer; m: GPUBuffer; v: GPUBuffer; partial: GPUBuffer } | null = null;
  private readonly partials: number;
  private readonly baseModel?: string;
  private readonly graphs = new Map<string, Promise<Graph>>();
  private adam: Promise<AdamPrograms> | null = null;
  private decoder: Promise<Decoder> | null = null;
  /** Calls run one at a time: they share the decoder, graph buffers and optimizer state. */
  private readonly exclusive = serialQueue();

  /** Why this config cannot run on this adapter (null: it can): the kernels' limits and the flat buffer's size. */
  static unfit(ctx: GpuContext, llama: LlamaConfig, baseDtype: BaseDtype = 'f32'): string | null {
    if (llama.headDim > 256) return `head_dim ${llama.headDim} exceeds the WGSL kernels' 256`;
    if (llama.headDim % 2 !== 0) return `head_dim ${llama.headDim} must be even (rotary pairs)`;
    try {
      planWeightShards(llamaLayout(llama), baseDtype, LlamaGpuPolicy.bindingLimit(ctx));
    } catch (e) {
      return (e as Error).message;
    }
    return null;
  }

  /** The largest buffer this adapter binds: min(maxStorageBufferBindingSize, maxBufferSize). */
  static bindingLimit(ctx: GpuContext): number {
    const { maxStorageBufferBindingSize: bind, maxBufferSize: max } = ctx.status.limits;
    return Math.min(bind, max);
  }

  constructor(
    readonly ctx: GpuContext,
    readonly llama: LlamaConfig,
    params: Float32Array,
    optimizer: Partial<AdamWHyper> = {},
    opts: LlamaGpuPolicyOptions = {},
  ) {
    const baseDtype = opts.baseDtype ?? 'f32';
    if (baseDtype !== 'f32' && !opts.lora)
      throw new Error(
        `policy: a ${baseDtype} base needs LoRA (a frozen base); full fine-tuning keeps the weights in f32`,
      );
    const unfit = LlamaGpuPolicy.unfit(ctx, llama, baseDtype);
    if (unfit) throw new Error(`policy: ${llama.modelType} on WebGPU: ${unfit}`);
    this.architecture = llama.modelType;
    this.layout = llamaLayout(llama);
    if (params.length !== this.layout.total)
      throw new Error(
        `policy: params has ${params.length} values, the ${llama.modelType} layout needs ${this.layout.total}`,
      );
    this.config = llamaSummary(llama, opts.contextLength);
    this.optimizer = { ...defaultOptimizer, ...optimizer };
    this.baseDtype = baseDtype;
    this.vectorOff = new Map();
    this.shardPlan = planWeightShards(this.layout, baseDtype, LlamaGpuPolicy.bindingLimit(ctx));
    this.shards = this.shardPlan.map(({ start, end }, i) => {
      const part = params.subarray(start, end);
      const label = `params.${baseDtype}${this.shardPlan.length > 1 ? `.${i}` : ''}`;
      return ctx.storage(baseDtype === 'f32' ? part : packHalves(part, baseDtype), label);
    });
    if (baseDtype === 'f32' && this.shards.length === 1) {
      this.vectors = this.shards[0];
      for (const t of this.layout.tensors) if (t.shape.length === 1) this.vectorOff.set(t.name, t.offset);
    } else {
      const rounded = baseDtype === 'f32' ? params : roundToDtype(params, baseDtype);
      const vectors = this.layout.tensors.filter((t) => t.shape.length === 1);
      const values = new Float32Array(vectors.reduce((n, t) => n + t.size, 0));
      let at = 0;
      for (const t of vectors) {
        values.set(rounded.subarray(t.offset, t.offset + t.size), at);
        this.vectorOff.set(t.name, at);
        at += t.size;
      }
      this.vectors = ctx.storage(values, 'params.vectors');
    }
    if (opts.lora) {
      const { config, params: values, seed } = opts.lora;
      this.lora = new GpuLora(ctx, llama, config, values ?? loraInit(loraLayout(llama, config), seed ?? 0));
    }
    this.baseModel = opts.baseModel;
    this.trainableLayout = this.lora ? this.lora.layout : this.layout;
    // with LoRA the gradient and AdamW's moments cover the adapter only: the base has neither
    this.partials = adamwPartials(this.trainableLayout.total);
  }

  /** The gradient and AdamW buffers (made on first use: a log-prob-only engine never holds them). */
  private train(): { grads: GPUBuffer; m: GPUBuffer; v: GPUBuffer; partial: GPUBuffer } {
    if (this.state) return this.state;
    const n = this.trainableLayout.total;
    const limit = LlamaGpuPolicy.bindingLimit(this.ctx);
    if (!this.lora && this.shards.length > 1)
      throw new Error(
        `policy: ${this.llama.modelType} on WebGPU: full fine-tuning updates the flat f32 parameter buffer ` +
          `(${((n * F4) / 2 ** 20).toFixed(0)} MiB), over this adapter's largest storage binding ` +
          `(${(limit / 2 ** 20).toFixed(0)} MiB); train a LoRA adapter on the frozen base`,
      );
    if (n * F4 > limit)
      throw new Error(
        `policy: the gradient buffer (${((n * F4) / 2 ** 20).toFixed(0)} MiB) exceeds this adapter's largest storage ` +
          `binding (${(limit / 2 ** 20).toFixed(0)} MiB); train a LoRA adapter on the frozen base`,
      );
    this.state = {
      grads: this.ctx.empty(n * F4, 'grads'),
      m: this.ctx.empty(n * F4, 'adam.m'),
      v: this.ctx.empty(n * F4, 'adam.v'),
      partial: this.ctx.empty((this.partials + 1) * F4, 'adam.partial'),
    };
    return this.state;
  }

  /**
   * Bytes of the buffers this engine holds now outside its per-shape graphs: the weight buffers, the f32 norm
   * weights and biases when separate, the adapter, and the gradient and AdamW moments once training made them.
   */
  residentBytes(): number {
    let n = this.shards.reduce((a, b) => a + b.size, 0);
    if (this.vectors !== this.shards[0]) n += this.vectors.size;
    if (this.lora) n += this.lora.params.size;
    if (this.state)
      n += this.state.grads.size + this.state.m.size + this.state.v.size + this.state.partial.size;
    return n;
  }

  /** The gradient of the trainable buffer (made on first use). */
  get grads(): GPUBuffer {
    return this.train().grads;
  }

  /** The weight buffer holding tensor `name` and the tensor's element offset in it. */
  private w(name: string): { buf: GPUBuffer; off: number } {
    const t = this.layout.byName.get(name);
    if (!t) throw new Error(`no parameter named ${name}`);
    const i = this.shardPlan.findIndex((s) => t.offset >= s.start && t.offset + t.size <= s.end);
    return { buf: this.shards[i], off: t.offset - this.shardPlan[i].start };
  }

  private off(name: string): number {
    const t = this.layout.byName.get(name);
    if (!t) throw new Error(`no parameter named ${name}`);
    return t.offset;
  }

  /** Where the norm weight or bias `name` starts in `vectors`. */
  private vec(name: string): number {
    const at = this.vectorOff.get(name);
    if (at === undefined) throw new Error(`no norm weight or bias named ${name}`);
    return at;
  }

  private has(name: string): boolean {
    return this.layout.byName.has(name);
  }

  /** The trainable buffer: the adapter's with LoRA, else the model's parameters. */
  private get trainable(): GPUBuffer {
    return this.lora ? this.lora.params : this.shards[0];
  }

  /** Where the base weights' gradients go: nowhere with LoRA (frozen), else the gradient buffer. */
  private get baseGrads(): GPUBuffer | null {
    return this.lora ? null : this.grads;
  }

  /**
   * out (M, n) (+)= x (M, k) · Wᵀ (+ b) for the HF linear `name` (`name.weight` (n, k), `name.bias` if any), plus
   * the LoRA update when the module is adapted and `t` (where its x·Aᵀ goes) is given; null: the base alone.
   */
  private async linear(
    p: Program,
    t: LoraSaved | null,
    M: number,
    n: number,
    k: number,
    x: GPUBuffer,
    name: string,
    out: GPUBuffer,
    accumulate = false,
  ): Promise<void> {
    const bias = this.has(`${name}.bias`);
    const W = this.w(`${name}.weight`);
    await K.matmul(p, {
      mode: 'nt',
      M,
      N: n,
      K: k,
      a: x,
      b: W.buf,
      bOff: W.off,
      bDtype: this.baseDtype,
      c: out,
      bias: bias ? this.vectors : undefined,
      biasOff: bias ? this.vec(`${name}.bias`) : 0,
      accumulate,
    });
    if (this.lora && t) await this.lora.forward(p, name, M, x, out, t(name));
  }

  /**
   * Backward of y = x·Wᵀ (+ b) over M rows (W (n, k)): dx (M, k) (=|+=) dy·W, dW += dyᵀ·x, db += Σ_rows dy.
   * With LoRA (`lb`: the forward's saved t and a scratch) the base is frozen: no dW, db; the adapter adds its
   * share of dx and its dA, dB.
   */
  private async linearBackward(
    p: Program,
    lb: { t: LoraSaved; dt: GPUBuffer } | null,
    M: number,
    n: number,
    k: number,
    x: GPUBuffer,
    dy: GPUBuffer,
    name: string,
    dx: GPUBuffer,
    accumulate: boolean,
  ): Promise<void> {
    const W = this.w(`${name}.weight`);
    const bDtype = this.baseDtype;
    await K.matmul(p, {
      mode: 'nn',
      M,
      N: k,
      K: n,
      a: dy,
      b: W.buf,
      bOff: W.off,
      bDtype,
      c: dx,
      accumulate,
    });
    if (this.lora) {
      if (!lb) throw new Error(`${name}: a LoRA backward needs the forward's saved activations`);
      return this.lora.backward(p, name, M, x, lb.t(name), dy, dx, lb.dt, this.grads);
    }
    await K.matmul(p, {
      mode: 'tn',
      M: n,
      N: k,
      K: M,
      a: dy,
      b: x,
      c: this.grads,
      cOff: this.off(`${name}.weight`),
      accumulate: true,
    });
    if (this.has(`${name}.bias`)) await K.colsum(p, dy, M, n, this.grads, this.off(`${name}.bias`));
  }

  private rmsnorm(p: Program, N: number, C: number, name: string, x: GPUBuffer, y: GPUBuffer, r: GPUBuffer) {
    const d = { N, C, wOff: this.vec(name), eps: this.llama.rmsEps };
    return K.rmsnormForward(p, d, x, this.vectors, y, r);
  }

  private rmsnormBackward(
    p: Program,
    N: number,
    C: number,
    name: string,
    x: GPUBuffer,
    r: GPUBuffer,
    dy: GPUBuffer,
    dx: GPUBuffer,
    accumulate: boolean,
  ) {
    return K.rmsnormBackward(
      p,
      { N, C, wOff: this.vec(name), gOff: this.off(name), eps: this.llama.rmsEps, accumulate },
      x,
      r,
      dy,
      dx,
      this.vectors,
      this.baseGrads,
    );
  }

  /** cos ‖ sin tables for positions 0..P-1 in one buffer; the sin table starts at the returned offset. */
  private ropeBuffer(P: number, label: string): { buf: GPUBuffer; sinOff: number } {
    const { cos, sin } = ropeTables(ropeInvFreq(this.llama), P);
    const cs = new Float32Array(cos.length + sin.length);
    cs.set(cos);
    cs.set(sin, cos.length);
    return { buf: this.ctx.storage(cs, label), sinOff: cos.length };
  }

  private graph(B: number, T: number): Promise<Graph> {
    const key = `${B}x${T}`;
    let g = this.graphs.get(key);
    if (g) {
      this.graphs.delete(key);
      this.graphs.set(key, g);
      return g;
    }
    g = this.buildGraph(B, T);
    this.graphs.set(key, g);
    if (this.graphs.size > MAX_GRAPHS) {
      const [oldKey, old] = this.graphs.entries().next().value as [string, Promise<Graph>];
      this.graphs.delete(oldKey);
      void old.then(destroyGraph);
    }
    return g;
  }

  private async buildGraph(B: number, T: number): Promise<Graph> {
    const { ctx } = this;
    const cfg = this.llama;
    const { hidden: C, intermediate: Fm, heads: H, kvHeads: KV, headDim: D, vocabSize: V, layers: L } = cfg;
    const N = B * T;
    const buffers: GPUBuffer[] = [];
    const buf = (elements: number, label: string) => {
      const b = ctx.empty(elements * F4, label);
      buffers.push(b);
      return b;
    };
    const tokens = buf(N, 'tokens');
    const mask = buf(N, 'mask');
    const pos = buf(N, 'pos');
    const targets = buf(N, 'targets');
    const rowWeights = buf(N, 'rowWeights');
    const rope = this.ropeBuffer(T, 'rope');
    buffers.push(rope.buf);
    const res = Array.from({ length: L + 1 }, (_, l) => buf(N * C, `res${l}`));
    const layers = Array.from({ length: L }, (_, l) => ({
      h1: buf(N * C, `l${l}.h1`),
      r1: buf(N, `l${l}.r1`),
      qRaw: cfg.qkNorm ? buf(N * H * D, `l${l}.qRaw`) : null,
      kRaw: cfg.qkNorm ? buf(N * KV * D, `l${l}.kRaw`) : null,
      rq: cfg.qkNorm ? buf(N * H, `l${l}.rq`) : null,
      rk: cfg.qkNorm ? buf(N * KV, `l${l}.rk`) : null,
      q: buf(N * H * D, `l${l}.q`),
      k: buf(N * KV * D, `l${l}.k`),
      v: buf(N * KV * D, `l${l}.v`),
      probs: buf(B * H * T * T, `l${l}.probs`),
      y: buf(N * H * D, `l${l}.y`),
      mid: buf(N * C, `l${l}.mid`),
      h2: buf(N * C, `l${l}.h2`),
      r2: buf(N, `l${l}.r2`),
      g: buf(N * Fm, `l${l}.g`),
      u: buf(N * Fm, `l${l}.u`),
      a: buf(N * Fm, `l${l}.a`),
    }));
    const hf = buf(N * C, 'hf');
    const rf = buf(N, 'rf');
    const stats = buf(3 * N, 'stats');
    const dhf = buf(N * C, 'dhf');
    const dx = buf(N * C, 'dx');
    const dh = buf(N * C, 'dh');
    const da = buf(N * Fm, 'da');
    const dg = buf(N * Fm, 'dg');
    const du = buf(N * Fm, 'du');
    const dy = buf(N * H * D, 'dy');
    const dq = buf(N * H * D, 'dq');
    const dkv = buf(2 * N * KV * D, 'dkv');
    const dv = buf(N * KV * D, 'dv');
    const dqRaw = cfg.qkNorm ? buf(N * H * D, 'dqRaw') : dq;
    const dkRaw = cfg.qkNorm ? buf(N * KV * D, 'dkRaw') : dkv;

    const o = (n: string) => this.off(n);
    const gqaDims = { B, Tq: T, Tk: T, H, KV, D, offset: 0 };
    const dtype = this.baseDtype;
    const hw = this.w(headName(cfg));
    const ew = this.w('model.embed_tokens.weight');
    const head = { N, C, V, wOff: hw.off, gOff: o(headName(cfg)), temperature: 1, dtype };
    const emb = { N, T, C, V, wteOff: ew.off, wpeOff: 0, dtype };
    // the head's one-chunk logit workspace, shared by the forward, base forward and backward (run in turn)
    const work = K.headWork(ctx, N, V);
    buffers.push(work.logits, work.state);

    // LoRA: each adapted linear's t = x·Aᵀ, kept for the backward, and one (N, r) scratch for its gradient
    const lora = this.lora;
    const saved = new Map((lora?.modules() ?? []).map((n) => [n, buf(N * (lora?.config.r ?? 0), `${n}.t`)]));
    const tOf: LoraSaved = (n) => saved.get(n) as GPUBuffer;
    const lb = lora ? { t: tOf, dt: buf(N * lora.config.r, 'lora.dt') } : null;
    // The forward with the adapter (`t` given) or without it (the frozen base: a LoRA run's reference policy).
    const record = async (fwd: Program, t: LoraSaved | null, temperature: number) => {
      await K.embeddingGather(fwd, emb, tokens, ew.buf, res[0]);
      for (let l = 0; l < L; l++) {
        const a = layers[l];
        const p = `model.layers.${l}.`;
        await this.rmsnorm(fwd, N, C, `${p}input_layernorm.weight`, res[l], a.h1, a.r1);
        await this.linear(fwd, t, N, H * D, C, a.h1, `${p}self_attn.q_proj`, a.qRaw ?? a.q);
        await this.linear(fwd, t, N, KV * D, C, a.h1, `${p}self_attn.k_proj`, a.kRaw ?? a.k);
        await this.linear(fwd, t, N, KV * D, C, a.h1, `${p}self_attn.v_proj`, a.v);
        if (a.qRaw && a.kRaw && a.rq && a.rk) {
          await this.rmsnorm(fwd, N * H, D, `${p}self_attn.q_norm.weight`, a.qRaw, a.q, a.rq);
          await this.rmsnorm(fwd, N * KV, D, `${p}self_attn.k_norm.weight`, a.kRaw, a.k, a.rk);
        }
        await K.ropeApply(fwd, { N, heads: H, D, sinOff: rope.sinOff }, pos, rope.buf, a.q);
        await K.ropeApply(fwd, { N, heads: KV, D, sinOff: rope.sinOff }, pos, rope.buf, a.k);
        await K.gqaForward(fwd, gqaDims, a.q, a.k, a.v, mask, a.probs, a.y);
        fwd.copy(res[l], 0, a.mid, 0, N * C * F4);
        await this.linear(fwd, t, N, C, H * D, a.y, `${p}self_attn.o_proj`, a.mid, true);
        await this.rmsnorm(fwd, N, C, `${p}post_attention_layernorm.weight`, a.mid, a.h2, a.r2);
        await this.linear(fwd, t, N, Fm, C, a.h2, `${p}mlp.gate_proj`, a.g);
        await this.linear(fwd, t, N, Fm, C, a.h2, `${p}mlp.up_proj`, a.u);
        await K.swigluForward(fwd, N * Fm, a.g, a.u, a.a);
        fwd.copy(a.mid, 0, res[l + 1], 0, N * C * F4);
        await this.linear(fwd, t, N, C, Fm, a.a, `${p}mlp.down_proj`, res[l + 1], true);
      }
      await this.rmsnorm(fwd, N, C, 'model.norm.weight', res[L], hf, rf);
      return K.fusedHeadForward(fwd, { ...head, temperature }, hf, hw.buf, targets, stats, work);
    };
    const fwd = new Program(ctx);
    const headUniforms = await record(fwd, lora ? tOf : null, 1);

    // The gradient buffer is not cleared here: micro-batches accumulate into it; the optimizer's update zeroes it.
    const recordBackward = async (temperature: number): Promise<Program> => {
      const bwd = new Program(ctx);
      headUniforms.push(
        ...(await K.fusedHeadBackward(
          bwd,
          { ...head, temperature },
          hf,
          hw.buf,
          targets,
          rowWeights,
          stats,
          dhf,
          this.baseGrads,
          work,
        )),
      );
      await this.rmsnormBackward(bwd, N, C, 'model.norm.weight', res[L], rf, dhf, dx, false);
      for (let l = L - 1; l >= 0; l--) {
        const a = layers[l];
        const p = `model.layers.${l}.`;
        // MLP: res[l+1] = mid + down(silu(gate(h2))·up(h2))
        await this.linearBackward(bwd, lb, N, C, Fm, a.a, dx, `${p}mlp.down_proj`, da, false);
        await K.swigluBackward(bwd, N * Fm, a.g, a.u, da, dg, du);
        await this.linearBackward(bwd, lb, N, Fm, C, a.h2, dg, `${p}mlp.gate_proj`, dh, false);
        await this.linearBackward(bwd, lb, N, Fm, C, a.h2, du, `${p}mlp.up_proj`, dh, true);
        await this.rmsnormBackward(
          bwd,
          N,
          C,
          `${p}post_attention_layernorm.weight`,
          a.mid,
          a.r2,
          dh,
          dx,
          true,
        );
        // attention: mid = res[l] + o(gqa(rope(norm(q)), rope(norm(k)), v))
        await this.linearBackward(bwd, lb, N, C, H * D, a.y, dx, `${p}self_attn.o_proj`, dy, false);
        await K.gqaBackward(bwd, gqaDims, a.q, a.k, a.v, a.probs, dy, a.y, dq, dkv);
        bwd.copy(dkv, N * KV * D * F4, dv, 0, N * KV * D * F4);
        await K.ropeApply(bwd, { N, heads: H, D, sinOff: rope.sinOff, inverse: true }, pos, rope.buf, dq);
        await K.ropeApply(bwd, { N, heads: KV, D, sinOff: rope.sinOff, inverse: true }, pos, rope.buf, dkv);
        if (a.qRaw && a.kRaw && a.rq && a.rk) {
          await this.rmsnormBackward(
            bwd,
            N * H,
            D,
            `${p}self_attn.q_norm.weight`,
            a.qRaw,
            a.rq,
            dq,
            dqRaw,
            false,
          );
          await this.rmsnormBackward(
            bwd,
            N * KV,
            D,
            `${p}self_attn.k_norm.weight`,
            a.kRaw,
            a.rk,
            dkv,
            dkRaw,
            false,
          );
        }
        await this.linearBackward(bwd, lb, N, H * D, C, a.h1, dqRaw, `${p}self_attn.q_proj`, dh, false);
        await this.linearBackward(bwd, lb, N, KV * D, C, a.h1, dkRaw, `${p}self_attn.k_proj`, dh, true);
        await this.linearBackward(bwd, lb, N, KV * D, C, a.h1, dv, `${p}self_attn.v_proj`, dh, true);
        await this.rmsnormBackward(bwd, N, C, `${p}input_layernorm.weight`, res[l], a.r1, dh, dx, true);
      }
      if (this.baseGrads) await K.embeddingBackward(bwd, emb, tokens, dx, this.baseGrads, false);
      return bwd;
    };
    let base: Promise<Program> | null = null;
    let backward: Promise<Program> | null = null;
    const graph: Graph = {
      B,
      T,
      tokens,
      mask,
      pos,
      targets,
      rowWeights,
      stats,
      forward: fwd,
      backward: () => {
        backward ??= (async () => {
          const p = await recordBackward(graph.temperature);
          graph.programs.push(p);
          return p;
        })();
        return backward;
      },
      headUniforms,
      temperature: 1,
      k: layers.map((a) => a.k),
      v: layers.map((a) => a.v),
      out: res[L],
      res,
      buffers,
      baseForward: () => {
        if (!lora) return Promise.resolve(fwd);
        base ??= (async () => {
          const p = new Program(ctx);
          graph.headUniforms.push(...(await record(p, null, graph.temperature)));
          graph.programs.push(p);
          return p;
        })();
        return base;
      },
      programs: [],
    };
    return graph;
  }

  private async prepare(batch: Batch): Promise<Graph> {
    checkBatch(this.config, batch);
    const g = await this.graph(batch.batchSize, batch.seqLen);
    const { targets, pos } = rowsOf(batch);
    this.ctx.write(g.tokens, batch.tokens);
    this.ctx.write(g.mask, batch.attention ?? batch.mask);
    this.ctx.write(g.targets, targets);
    this.ctx.write(g.pos, pos);
    const temperature = batch.temperature ?? 1;
    if (temperature !== g.temperature) {
      const block = K.headBlock({
        N: g.B * g.T,
        C: this.llama.hidden,
        V: this.llama.vocabSize,
        wOff: this.w(headName(this.llama)).off,
        gOff: this.off(headName(this.llama)),
        temperature,
        dtype: this.baseDtype,
      });
      for (const u of g.headUniforms) this.ctx.write(u, block);
      g.temperature = temperature;
    }
    return g;
  }

  /** Submits `enc` and reads the head's stats back, aligned like LogProbResult (row n predicts position n+1). */
  private async readStats(g: Graph, enc: GPUCommandEncoder, batch: Batch): Promise<LogProbResult> {
    const N = g.B * g.T;
    const staging = this.ctx.device.createBuffer({
      size: 3 * N * F4,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    enc.copyBufferToBuffer(g.stats, 0, staging, 0, 3 * N * F4);
    this.ctx.submit([enc.finish()]);
    const s = new Float32Array(await this.ctx.mapRead(staging, 'the log-prob readback'));
    const logProbs = new Float32Array(N);
    const entropy = new Float32Array(N);
    const { mask } = batch;
    const real = batch.attention ?? mask;
    for (let b = 0; b < g.B; b++)
      for (let t = 1; t < g.T; t++) {
        const n = b * g.T + t;
        if (mask[n] === 0 || real[n - 1] === 0) continue;
        logProbs[n] = s[3 * (n - 1)];
        entropy[n] = s[3 * (n - 1) + 1];
      }
    return { logProbs, entropy };
  }

  /** Per-token weights (B·T) as per-row head weights: row n carries the weight of position n+1. */
  private writeWeights(g: Graph, weights: Float32Array): void {
    const N = g.B * g.T;
    const rows = new Float32Array(N);
    for (let b = 0; b < g.B; b++)
      for (let t = 0; t + 1 < g.T; t++) rows[b * g.T + t] = weights[b * g.T + t + 1];
    this.ctx.write(g.rowWeights, rows);
  }

  logProbs(batch: Batch): Promise<LogProbResult> {
    return this.exclusive(async () => {
      const g = await this.prepare(batch);
      const enc = this.ctx.device.createCommandEncoder();
      g.forward.encode(enc);
      return this.readStats(g, enc, batch);
    });
  }

  /**
   * Log-probs of the frozen base with the adapter off (PEFT's `disable_adapter()`): a LoRA run's reference
   * policy, from the same weights on the GPU (no second copy).
   */
  referenceLogProbs(batch: Batch): Promise<LogProbResult> {
    if (!this.lora)
      throw new Error(
        'referenceLogProbs: full fine-tuning changes the base; the reference needs its own copy',
      );
    return this.exclusive(async () => {
      const g = await this.prepare(batch);
      const base = await g.baseForward();
      const enc = this.ctx.device.createCommandEncoder();
      base.encode(enc);
      return this.readStats(g, enc, batch);
    });
  }

  /** The frozen base as a read-only PolicyEngine (the reference policy of a LoRA run). */
  referencePolicy(): PolicyEngine {
    if (!this.lora) throw new Error('referencePolicy: only a LoRA run has the frozen base in memory');
    return frozenBasePolicy(this, (batch) => this.referenceLogProbs(batch));
  }

  /** With LoRA: the adapter as PEFT's folder (adapter_config.json, adapter_model.safetensors). */
  exportFiles(): Promise<Record<string, Uint8Array | string>> {
    return this.exclusive(async () => {
      const lora = this.lora;
      return lora ? encodeAdapter(await lora.read(), this.baseModel ?? null) : {};
    });
  }

  /** The model's weights with the adapter merged in (W + s·B·A, PEFT's merge_and_unload), in the base layout. */
  mergedParams(): Promise<Float32Array> {
    return this.exclusive(async () => {
      const base = new Float32Array(this.layout.total);
      for (let i = 0; i < this.shards.length; i++) {
        const { start, end } = this.shardPlan[i];
        const n = end - start;
        const dtype = this.baseDtype;
        base.set(
          dtype === 'f32'
            ? await this.ctx.readF32(this.shards[i], n)
            : unpackHalves(
                new Uint32Array((await this.ctx.readF32(this.shards[i], Math.ceil(n / 2))).buffer),
                n,
                dtype,
              ),
          start,
        );
      }
      return this.lora ? mergeLora(this.llama, this.layout, base, await this.lora.read()) : base;
    });
  }

  /**
   * The residual stream (B·T·C) after the embedding and after each layer (L + 1 arrays) of a forward pass: what
   * a layer-by-layer comparison with the CPU engine (llamaForwardCpu's `layers[l].x` and `xOut`) reads.
   */
  residuals(batch: Batch): Promise<Float32Array[]> {
    return this.exclusive(async () => {
      const g = await this.prepare(batch);
      const enc = this.ctx.device.createCommandEncoder();
      g.forward.encode(enc);
      this.ctx.submit([enc.finish()]);
      const n = batch.batchSize * batch.seqLen * this.llama.hidden;
      const out: Float32Array[] = [];
      for (const r of g.res) out.push(await this.ctx.readF32(r, n));
      return out;
    });
  }

  trainStep(batch: Batch, weights: Float32Array): Promise<TrainStepResult> {
    return this.exclusive(async () => {
      this.clearGradsNow();
      const r = await this.accumulateNow(batch, weights);
      const s = await this.optimizerStepNow();
      return { ...r, gradNorm: s.gradNorm, step: s.step };
    });
  }

  accumulateGrads(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult> {
    return this.exclusive(() => this.accumulateNow(batch, weights));
  }

  private async accumulateNow(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult> {
    const n = batch.tokens.length;
    if (typeof weights !== 'function') checkWeights(weights, n);
    const g = await this.prepare(batch);
    if (typeof weights !== 'function') {
      this.writeWeights(g, weights);
      const backward = await g.backward();
      const enc = this.ctx.device.createCommandEncoder();
      g.forward.encode(enc);
      backward.encode(enc);
      const r = await this.readStats(g, enc, batch);
      return { ...r, loss: weightedLoss(r.logProbs, weights) };
    }
    const enc = this.ctx.device.createCommandEncoder();
    g.forward.encode(enc);
    const r = await this.readStats(g, enc, batch);
    const w = weights(r);
    checkWeights(w, n);
    this.writeWeights(g, w);
    (await g.backward()).submit();
    return { ...r, loss: weightedLoss(r.logProbs, w) };
  }

  private adamTarget(): GpuAdamWTarget {
    const { ctx, partials } = this;
    const { grads, partial, m, v } = this.train();
    return {
      ctx,
      params: this.trainable,
      grads,
      partial,
      m,
      v,
      n: this.trainableLayout.total,
      decayEnd: this.trainableLayout.decayEnd,
      partials,
    };
  }

  private adamPrograms(): Promise<AdamPrograms> {
    if (!this.adam) this.adam = adamPrograms(this.adamTarget(), this.optimizer);
    return this.adam;
  }

  optimizerStep(): Promise<OptimizerStepResult> {
    return this.exclusive(() => this.optimizerStepNow());
  }

  private async optimizerStepNow(): Promise<OptimizerStepResult> {
    const adam = await this.adamPrograms();
    const r = await adamStep(this.adamTarget(), adam, this.optimizer, this.step, () => this.clearGradsNow());
    this.step = r.step;
    return r;
  }

  private clearGradsNow(): void {
    const enc = this.ctx.device.createCommandEncoder();
    enc.clearBuffer(this.grads);
    this.ctx.submit([enc.finish()]);
  }

  /** Forward and backward of −Σ w·logp without an update; returns the gradient (tests and checks). */
  computeGrads(batch: Batch, weights: Float32Array): Promise<Float32Array> {
    return this.exclusive(async () => {
      this.clearGradsNow();
      await this.accumulateNow(batch, weights);
      const grads = await this.ctx.readF32(this.grads, this.trainableLayout.total);
      this.clearGradsNow();
      return grads;
    });
  }

  getOptimizerState(): Promise<OptimizerState> {
    return this.exclusive(() => readOptimizerState(this.adamTarget(), this.step));
  }

  setOptimizerState(state: OptimizerState): Promise<void> {
    return this.exclusive(async () => {
      this.step = writeOptimizerState(this.adamTarget(), state);
    });
  }

  /** The decoder for at least `capacity` cached positions (rebuilt larger when a request needs more). */
  private async decoderFor(capacity: number): Promise<Decoder> {
    if (this.decoder) {
      const d = await this.decoder;
      if (d.capacity >= capacity) return d;
      destroyDecoder(d);
    }
    let cap = 16;
    while (cap < capacity) cap *= 2;
    this.decoder = this.buildDecoder(Math.min(cap, this.config.contextLength));
    return this.decoder;
  }

  private async buildDecoder(capacity: number): Promise<Decoder> {
    const { ctx } = this;
    const cfg = this.llama;
    const { hidden: C, intermediate: Fm, heads: H, kvHeads: KV, headDim: D, vocabSize: V, layers: L } = cfg;
    const buffers: GPUBuffer[] = [];
    const buf = (elements: number, label: string) => {
      const b = ctx.empty(elements * F4, label);
      buffers.push(b);
      return b;
    };
    const token = buf(1, 'dec.token');
    const pos = buf(1, 'dec.pos');
    const rope = this.ropeBuffer(capacity, 'dec.rope');
    buffers.push(rope.buf);
    const x = buf(C, 'dec.x');
    const h = buf(C, 'dec.h');
    const r = buf(1, 'dec.r');
    const rqk = buf(H, 'dec.rqk');
    const qRaw = buf(H * D, 'dec.qRaw');
    const kRaw = buf(KV * D, 'dec.kRaw');
    const q = buf(H * D, 'dec.q');
    const k = buf(KV * D, 'dec.k');
    const v = buf(KV * D, 'dec.v');
    const probs = buf(H * capacity, 'dec.probs');
    const y = buf(H * D, 'dec.y');
    const g = buf(Fm, 'dec.g');
    const u = buf(Fm, 'dec.u');
    const a = buf(Fm, 'dec.a');
    const logits = buf(V, 'dec.logits');
    const cacheK = Array.from({ length: L }, (_, l) => buf(capacity * KV * D, `dec.k${l}`));
    const cacheV = Array.from({ length: L }, (_, l) => buf(capacity * KV * D, `dec.v${l}`));
    const dtype = this.baseDtype;
    const ew = this.w('model.embed_tokens.weight');
    const emb = { N: 1, T: 1, C, V, wteOff: ew.off, wpeOff: 0, dtype };
    const loraT = this.lora ? buf(this.lora.config.r, 'dec.lora.t') : null;
    const t: LoraSaved | null = loraT ? () => loraT : null;
    const p = new Program(ctx);
    await K.embeddingGather(p, emb, token, ew.buf, x);
    const gqaUniforms: GPUBuffer[] = [];
    const copies: { dstOffset?: number }[] = [];
    for (let l = 0; l < L; l++) {
      const n = `model.layers.${l}.`;
      await this.rmsnorm(p, 1, C, `${n}input_layernorm.weight`, x, h, r);
      await this.linear(p, t, 1, H * D, C, h, `${n}self_attn.q_proj`, cfg.qkNorm ? qRaw : q);
      await this.linear(p, t, 1, KV * D, C, h, `${n}self_attn.k_proj`, cfg.qkNorm ? kRaw : k);
      await this.linear(p, t, 1, KV * D, C, h, `${n}self_attn.v_proj`, v);
      if (cfg.qkNorm) {
        await this.rmsnorm(p, H, D, `${n}self_attn.q_norm.weight`, qRaw, q, rqk);
        await this.rmsnorm(p, KV, D, `${n}self_attn.k_norm.weight`, kRaw, k, rqk);
      }
      await K.ropeApply(p, { N: 1, heads: H, D, sinOff: rope.sinOff }, pos, rope.buf, q);
      await K.ropeApply(p, { N: 1, heads: KV, D, sinOff: rope.sinOff }, pos, rope.buf, k);
      copies.push(p.copy(k, 0, cacheK[l], 0, KV * D * F4));
      copies.push(p.copy(v, 0, cacheV[l], 0, KV * D * F4));
      const dims = { B: 1, Tq: 1, Tk: capacity, H, KV, D, offset: 0 };
      const [gu] = await K.gqaForward(p, dims, q, cacheK[l], cacheV[l], null, probs, y);
      gqaUniforms.push(gu);
      await this.linear(p, t, 1, C, H * D, y, `${n}self_attn.o_proj`, x, true);
      await this.rmsnorm(p, 1, C, `${n}post_attention_layernorm.weight`, x, h, r);
      await this.linear(p, t, 1, Fm, C, h, `${n}mlp.gate_proj`, g);
      await this.linear(p, t, 1, Fm, C, h, `${n}mlp.up_proj`, u);
      await K.swigluForward(p, Fm, g, u, a);
      await this.linear(p, t, 1, C, Fm, a, `${n}mlp.down_proj`, x, true);
    }
    const head = new Program(ctx);
    await this.rmsnorm(head, 1, C, 'model.norm.weight', x, h, r);
    const hw = this.w(headName(cfg));
    await K.matmul(head, {
      mode: 'nt',
      M: 1,
      N: V,
      K: C,
      a: h,
      b: hw.buf,
      bOff: hw.off,
      bDtype: dtype,
      c: logits,
    });
    return { capacity, layers: p, head, token, pos, x, logits, gqaUniforms, copies, cacheK, cacheV, buffers };
  }

  sample(req: SampleRequest): Promise<SampleResult> {
    return this.exclusive(() => this.sampleNow(req));
  }

  private async sampleNow(req: SampleRequest): Promise<SampleResult> {
    const cfg = this.llama;
    const { heads: H, kvHeads: KV, headDim: D, hidden: C, vocabSize: V, layers: L } = cfg;
    const T = this.config.contextLength;
    checkSampleRequest(req, V, T);
    const limit = Math.min(T, req.promptIds.length + req.maxTokens);
    const d = await this.decoderFor(limit);
    const row = KV * D * F4;
    const step = (id: number, p: number) => {
      this.ctx.write(d.token, new Uint32Array([id]));
      this.ctx.write(d.pos, new Uint32Array([p]));
      const block = K.gqaBlock({ B: 1, Tq: 1, Tk: d.capacity, H, KV, D, offset: p }, false);
      for (let l = 0; l < L; l++) {
        this.ctx.write(d.gqaUniforms[l], block);
        d.copies[2 * l].dstOffset = p * row;
        d.copies[2 * l + 1].dstOffset = p * row;
      }
      const enc = this.ctx.device.createCommandEncoder();
      d.layers.encode(enc);
      d.head.encode(enc);
      this.ctx.submit([enc.finish()]);
    };
    // Prefill: the prompt in one batched forward (B = 1, T rounded up to a power of two so few graphs are built;
    // causal attention keeps the padding rows out of the real ones), its rotated keys and values become the KV
    // cache and its last residual row goes through the final norm and the full head.
    const prefill = async (ids: number[]) => {
      const P = ids.length;
      let Tb = 1;
      while (Tb < P) Tb *= 2;
      Tb = Math.min(Tb, T);
      const tokens = new Uint32Array(Tb);
      tokens.set(ids);
      const g = await this.prepare({ tokens, mask: new Float32Array(Tb).fill(1), batchSize: 1, seqLen: Tb });
      const enc = this.ctx.device.createCommandEncoder();
      g.forward.encode(enc);
      for (let l = 0; l < L; l++) {
        enc.copyBufferToBuffer(g.k[l], 0, d.cacheK[l], 0, P * row);
        enc.copyBufferToBuffer(g.v[l], 0, d.cacheV[l], 0, P * row);
      }
      enc.copyBufferToBuffer(g.out, (P - 1) * C * F4, d.x, 0, C * F4);
      d.head.encode(enc);
      this.ctx.submit([enc.finish()]);
      return this.ctx.readF32(d.logits, V);
    };
    return decodeLoop(req, limit, step, () => this.ctx.readF32(d.logits, V), prefill);
  }

  /** A copy of the trainable buffer (the adapter's with LoRA). */
  getParams(): Promise<Float32Array> {
    return this.exclusive(() => this.ctx.readF32(this.trainable, this.trainableLayout.total));
  }

  /** Replaces the trainable buffer (the adapter's with LoRA) and resets the optimizer state. */
  setParams(params: Float32Array): Promise<void> {
    return this.exclusive(async () => {
      const n = this.trainableLayout.total;
      if (params.length !== n)
        throw new Error(`setParams: got ${params.length} values, the layout needs ${n}`);
      this.ctx.write(this.trainable, params);
      const zeros = new Float32Array(n);
      const { m, v } = this.train();
      this.ctx.write(m, zeros);
      this.ctx.write(v, zeros);
      this.clearGradsNow();
      this.step = 0;
    });
  }

  dispose(): void {
    const all: GPUBuffer[] = [...this.shards];
    if (this.state) all.push(this.state.grads, this.state.m, this.state.v, this.state.partial);
    if (this.vectors !== this.shards[0]) all.push(this.vectors);
    void (async () => {
      for (const g of this.graphs.values()) destroyGraph(await g);
      if (this.decoder) destroyDecoder(await this.decoder);
      if (this.adam) {
        const a = await this.adam;
        a.norm.destroy();
        a.update.destroy();
      }
      for (const b of all) b.destroy();
      this.lora?.destroy();
    })();
  }
}

function destroyGraph(g: Graph): void {
  for (const p of g.programs) p.destroy();
  g.forward.destroy();
  for (const b of g.buffers) b.destroy();
}

function destroyDecoder(d: Decoder): void {
  d.layers.destroy();
  d.head.destroy();
  for (const b of d.buffers) b.destroy();
}
