/**
 * The WebGPU policy engine: the model of ../model.ts with every op in a WGSL kernel. Parameters, gradients,
 * Adam moments and activations stay resident on the GPU; each batch shape gets a recorded forward, backward
 * and optimizer Program, replayed in one command encoder per call. Only token ids, masks, weights go up and
 * only per-token log-probs / entropies and the gradient norm come back (the decode loop reads one row of
 * logits per generated token).
 */

import { serialQueue } from '../../core/serial';
import { type GpuContext, Program, uniformBlock } from '../gpu/device';
import * as K from '../gpu/kernels';
import { adamwPartials, attentionBlock } from '../gpu/kernels';
import {
  type Batch,
  checkBatch,
  defaultOptimizer,
  initParams,
  type Layout,
  layoutOf,
  type PolicyConfig,
  resolveConfig,
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

const F = 4;
/** Batch shapes whose activations stay allocated; the least recently used shape beyond this is freed. */
const MAX_GRAPHS = 8;

interface Graph {
  B: number;
  T: number;
  tokens: GPUBuffer;
  mask: GPUBuffer;
  weights: GPUBuffer;
  logp: GPUBuffer;
  entropy: GPUBuffer;
  forward: Program;
  backward: Program;
  /** logprob uniforms (temperature) in the forward and backward programs. */
  logprobUniforms: GPUBuffer[];
  temperature: number;
  /** Per-layer qkv activations (B·T, 3C): a prompt's KV cache after a forward pass. */
  qkv: GPUBuffer[];
  logits: GPUBuffer;
  buffers: GPUBuffer[];
}

interface Decoder {
  program: Program;
  token: GPUBuffer;
  logits: GPUBuffer;
  embedUniform: GPUBuffer;
  attnUniforms: GPUBuffer[];
  copies: { dstOffset?: number }[];
  cache: GPUBuffer[];
  buffers: GPUBuffer[];
}

export class GpuPolicy implements PolicyEngine {
  readonly backend = 'webgpu' as const;
  readonly config: PolicyConfig;
  readonly layout: Layout;
  optimizer: AdamWHyper;
  step = 0;
  readonly params: GPUBuffer;
  readonly grads: GPUBuffer;
  private readonly m: GPUBuffer;
  private readonly v: GPUBuffer;
  private readonly partial: GPUBuffer;
  private readonly partials: number;
  private readonly graphs = new Map<string, Promise<Graph>>();
  /** AdamW in two programs: the global norm (read back and checked on the host), then the update + zeroing. */
  private adam: Promise<AdamPrograms> | null = null;
  private decoder: Promise<Decoder> | null = null;
  /** Calls run one at a time: they share the decoder, graph buffers and optimizer state. */
  private readonly exclusive = serialQueue();

  private constructor(
    readonly ctx: GpuContext,
    config: PolicyConfig,
    optimizer: AdamWHyper,
    params: Float32Array,
  ) {
    this.config = config;
    this.layout = layoutOf(config);
    this.optimizer = optimizer;
    const n = this.layout.total;
    this.params = ctx.storage(params, 'params');
    this.grads = ctx.empty(n * F, 'grads');
    this.m = ctx.empty(n * F, 'adam.m');
    this.v = ctx.empty(n * F, 'adam.v');
    this.partials = adamwPartials(n);
    this.partial = ctx.empty((this.partials + 1) * F, 'adam.partial');
  }

  static create(
    ctx: GpuContext,
    config: Partial<PolicyConfig> = {},
    optimizer: Partial<AdamWHyper> = {},
    params?: Float32Array,
  ): GpuPolicy {
    const cfg = resolveConfig(config);
    const layout = layoutOf(cfg);
    if (params && params.length !== layout.total)
      throw new Error(`policy: params has ${params.length} values, the layout needs ${layout.total}`);
    return new GpuPolicy(ctx, cfg, { ...defaultOptimizer, ...optimizer }, params ?? initParams(cfg, layout));
  }

  private off(name: string): number {
    const t = this.layout.byName.get(name);
    if (!t) throw new Error(`no parameter named ${name}`);
    return t.offset;
  }

  /** out (M, n) = x (M, k) · W + b for the linear layer `name` (`name.w` stored (in, out), `name.b`). */
  private linear(
    p: Program,
    M: number,
    n: number,
    k: number,
    x: GPUBuffer,
    name: string,
    out: GPUBuffer,
    accumulate = false,
  ): Promise<GPUBuffer[]> {
    const { params } = this;
    return K.matmul(p, {
      mode: 'nn',
      M,
      N: n,
      K: k,
      a: x,
      b: params,
      bOff: this.off(`${name}.w`),
      c: out,
      bias: params,
      biasOff: this.off(`${name}.b`),
      accumulate,
    });
  }

  /**
   * Backward of the linear layer `name` (y = x·W + b, W stored (in = k, out = n)) over M rows:
   *   dx (M, k) = dy · Wᵀ (overwritten), dW += xᵀ · dy, db += Σ_rows dy.
   */
  private async linearBackward(
    p: Program,
    M: number,
    n: number,
    k: number,
    x: GPUBuffer,
    dy: GPUBuffer,
    name: string,
    dx: GPUBuffer,
  ): Promise<void> {
    const { params, grads } = this;
    const w = this.off(`${name}.w`);
    await K.matmul(p, { mode: 'nt', M, N: k, K: n, a: dy, b: params, bOff: w, c: dx });
    await K.matmul(p, { mode: 'tn', M: k, N: n, K: M, a: x, b: dy, c: grads, cOff: w, accumulate: true });
    await K.colsum(p, dy, M, n, grads, this.off(`${name}.b`));
  }

  /** LayerNorm `name` (`name.w`, `name.b`) over N rows of width C; `stats` keeps mean and rstd per row. */
  private layernorm(p: Program, N: number, name: string, x: GPUBuffer, out: GPUBuffer, stats: GPUBuffer) {
    const C = this.config.width;
    return K.layernormForward(
      p,
      { N, C, wOff: this.off(`${name}.w`), bOff: this.off(`${name}.b`) },
      x,
      this.params,
      out,
      stats,
    );
  }

  private graph(B: number, T: number): Promise<Graph> {
    const key = `${B}x${T}`;
    let g = this.graphs.get(key);
    if (g) {
      // most recently used last, so eviction below drops the least recently used shape
      this.graphs.delete(key);
      this.graphs.set(key, g);
      return g;
    }
    g = this.buildGraph(B, T);
    this.graphs.set(key, g);
    if (this.graphs.size > MAX_GRAPHS) {
      const [oldKey, old] = this.graphs.entries().next().value as [string, Promise<Graph>];
      this.graphs.delete(oldKey);
      void old.then((o) => {
        o.forward.destroy();
        o.backward.destroy();
        for (const b of o.buffers) b.destroy();
      });
    }
    return g;
  }

  private async buildGraph(B: number, T: number): Promise<Graph> {
    const { ctx, params, grads } = this;
    const { width: C, heads: H, vocabSize: V, layers: L } = this.config;
    const N = B * T;
    const buffers: GPUBuffer[] = [];
    const buf = (elements: number, label: string) => {
      const b = ctx.empty(elements * F, label);
      buffers.push(b);
      return b;
    };
    const tokens = buf(N, 'tokens');
    const mask = buf(N, 'mask');
    const weights = buf(N, 'weights');
    const res = Array.from({ length: L + 1 }, (_, l) => buf(N * C, `res${l}`));
    const layers = Array.from({ length: L }, (_, l) => ({
      ln1: buf(N * C, `h${l}.ln1`),
      ln1s: buf(2 * N, `h${l}.ln1s`),
      qkv: buf(N * 3 * C, `h${l}.qkv`),
      att: buf(B * H * T * T, `h${l}.att`),
      atty: buf(N * C, `h${l}.atty`),
      resMid: buf(N * C, `h${l}.resMid`),
      ln2: buf(N * C, `h${l}.ln2`),
      ln2s: buf(2 * N, `h${l}.ln2s`),
      fch: buf(N * 4 * C, `h${l}.fch`),
      fcg: buf(N * 4 * C, `h${l}.fcg`),
    }));
    const lnf = buf(N * C, 'lnf');
    const lnfs = buf(2 * N, 'lnfs');
    const logits = buf(N * V, 'logits');
    const lse = buf(N, 'lse');
    const logp = buf(N, 'logp');
    const entropy = buf(N, 'entropy');
    const dres = buf(N * C, 'dres');
    const dln = buf(N * C, 'dln');
    const datty = buf(N * C, 'datty');
    const dqkv = buf(N * 3 * C, 'dqkv');
    const datt = buf(B * H * T * T, 'datt');
    const dfcg = buf(N * 4 * C, 'dfcg');
    const dfch = buf(N * 4 * C, 'dfch');
    const dlogits = buf(N * V, 'dlogits');

    const o = (n: string) => this.off(n);
    const fwd = new Program(ctx);
    await K.embeddingForward(fwd, { N, T, C, V, wteOff: o('wte'), wpeOff: o('wpe') }, tokens, params, res[0]);
    for (let l = 0; l < L; l++) {
      const a = layers[l];
      const h = `h${l}.`;
      await this.layernorm(fwd, N, `${h}ln1`, res[l], a.ln1, a.ln1s);
      await this.linear(fwd, N, 3 * C, C, a.ln1, `${h}attn.qkv`, a.qkv);
      await K.attentionForward(fwd, { B, T, C, H }, a.qkv, a.att, a.atty);
      fwd.copy(res[l], 0, a.resMid, 0, N * C * F);
      await this.linear(fwd, N, C, C, a.atty, `${h}attn.proj`, a.resMid, true);
      await this.layernorm(fwd, N, `${h}ln2`, a.resMid, a.ln2, a.ln2s);
      await this.linear(fwd, N, 4 * C, C, a.ln2, `${h}mlp.fc`, a.fch);
      await K.geluForward(fwd, N * 4 * C, a.fch, a.fcg);
      fwd.copy(a.resMid, 0, res[l + 1], 0, N * C * F);
      await this.linear(fwd, N, C, 4 * C, a.fcg, `${h}mlp.proj`, res[l + 1], true);
    }
    await this.layernorm(fwd, N, 'lnf', res[L], lnf, lnfs);
    await K.matmul(fwd, { mode: 'nt', M: N, N: V, K: C, a: lnf, b: params, bOff: o('wte'), c: logits });
    const lpDims = { B, T, V, temperature: 1 };
    const [lpFwdUniform] = await K.logprobForward(fwd, lpDims, logits, tokens, mask, lse, logp, entropy);

    // The gradient buffer is not cleared here: micro-batches accumulate into it, and the optimizer's update
    // program zeroes it after applying it.
    const bwd = new Program(ctx);
    const [lpBwdUniform] = await K.logprobBackward(bwd, lpDims, logits, tokens, weights, lse, dlogits);
    await K.matmul(bwd, { mode: 'nn', M: N, N: C, K: V, a: dlogits, b: params, bOff: o('wte'), c: dln });
    await K.matmul(bwd, {
      mode: 'tn',
      M: V,
      N: C,
      K: N,
      a: dlogits,
      b: lnf,
      c: grads,
      cOff: o('wte'),
      accumulate: true,
    });
    bwd.clear(dres);
    await K.layernormBackward(
      bwd,
      { N, C, wOff: o('lnf.w'), bOff: o('lnf.b') },
      res[L],
      lnfs,
      dln,
      dres,
      params,
      grads,
    );
    for (let l = L - 1; l >= 0; l--) {
      const a = layers[l];
      const h = `h${l}.`;
      await this.linearBackward(bwd, N, C, 4 * C, a.fcg, dres, `${h}mlp.proj`, dfcg);
      await K.geluBackward(bwd, N * 4 * C, a.fch, dfcg, dfch);
      await this.linearBackward(bwd, N, 4 * C, C, a.ln2, dfch, `${h}mlp.fc`, dln);
      await K.layernormBackward(
        bwd,
        { N, C, wOff: o(`${h}ln2.w`), bOff: o(`${h}ln2.b`) },
        a.resMid,
        a.ln2s,
        dln,
        dres,
        params,
        grads,
      );
      await this.linearBackward(bwd, N, C, C, a.atty, dres, `${h}attn.proj`, datty);
      await K.attentionBackward(bwd, { B, T, C, H }, a.qkv, a.att, datty, datt, dqkv);
      await this.linearBackward(bwd, N, 3 * C, C, a.ln1, dqkv, `${h}attn.qkv`, dln);
      await K.layernormBackward(
        bwd,
        { N, C, wOff: o(`${h}ln1.w`), bOff: o(`${h}ln1.b`) },
        res[l],
        a.ln1s,
        dln,
        dres,
        params,
        grads,
      );
    }
    await K.embeddingBackward(bwd, { N, T, C, V, wteOff: o('wte'), wpeOff: o('wpe') }, tokens, dres, grads);
    return {
      B,
      T,
      tokens,
      mask,
      weights,
      logp,
      entropy,
      forward: fwd,
      backward: bwd,
      logprobUniforms: [lpFwdUniform, lpBwdUniform],
      temperature: 1,
      qkv: layers.map((a) => a.qkv),
      logits,
      buffers,
    };
  }

  private async prepare(batch: Batch): Promise<Graph> {
    checkBatch(this.config, batch);
    const g = await this.graph(batch.batchSize, batch.seqLen);
    this.ctx.write(g.tokens, batch.tokens);
    this.ctx.write(g.mask, batch.mask);
    const temperature = batch.temperature ?? 1;
    if (temperature !== g.temperature) {
      const block = K.logprobBlock({ B: g.B, T: g.T, V: this.config.vocabSize, temperature });
      for (const u of g.logprobUniforms) this.ctx.write(u, block);
      g.temperature = temperature;
    }
    return g;
  }

  private async readPair(a: GPUBuffer, b: GPUBuffer, n: number, enc: GPUCommandEncoder) {
    const staging = this.ctx.device.createBuffer({
      size: 2 * n * F,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    enc.copyBufferToBuffer(a, 0, staging, 0, n * F);
    enc.copyBufferToBuffer(b, 0, staging, n * F, n * F);
    this.ctx.submit([enc.finish()]);
    const all = new Float32Array(await this.ctx.mapRead(staging, 'the log-prob readback'));
    return { a: all.slice(0, n), b: all.slice(n, 2 * n) };
  }

  logProbs(batch: Batch): Promise<LogProbResult> {
    return this.exclusive(() => this.logProbsNow(batch));
  }

  private async logProbsNow(batch: Batch): Promise<LogProbResult> {
    const g = await this.prepare(batch);
    const enc = this.ctx.device.createCommandEncoder();
    g.forward.encode(enc);
    const r = await this.readPair(g.logp, g.entropy, g.B * g.T, enc);
    return { logProbs: r.a, entropy: r.b };
  }

  private adamTarget(): GpuAdamWTarget {
    const { ctx, params, grads, partial, m, v, partials } = this;
    return {
      ctx,
      params,
      grads,
      partial,
      m,
      v,
      n: this.layout.total,
      decayEnd: this.layout.decayEnd,
      partials,
    };
  }

  private adamPrograms(): Promise<AdamPrograms> {
    if (!this.adam) this.adam = adamPrograms(this.adamTarget(), this.optimizer);
    return this.adam;
  }

  trainStep(batch: Batch, weights: Float32Array): Promise<TrainStepResult> {
    return this.exclusive(async () => {
      await this.clearGradsNow();
      const r = await this.accumulateNow(batch, weights);
      const s = await this.optimizerStepNow();
      return { ...r, gradNorm: s.gradNorm, step: s.step };
    });
  }

  accumulateGrads(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult> {
    return this.exclusive(() => this.accumulateNow(batch, weights));
  }

  /** Forward, then (with weights known up front) backward in the same submission; else read, weigh, backward. */
  private async accumulateNow(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult> {
    const n = batch.tokens.length;
    if (typeof weights !== 'function') checkWeights(weights, n);
    const g = await this.prepare(batch);
    if (typeof weights !== 'function') {
      this.ctx.write(g.weights, weights);
      const enc = this.ctx.device.createCommandEncoder();
      g.forward.encode(enc);
      g.backward.encode(enc);
      const r = await this.readPair(g.logp, g.entropy, g.B * g.T, enc);
      return { logProbs: r.a, entropy: r.b, loss: weightedLoss(r.a, weights) };
    }
    const enc = this.ctx.device.createCommandEncoder();
    g.forward.encode(enc);
    const r = await this.readPair(g.logp, g.entropy, g.B * g.T, enc);
    const w = weights({ logProbs: r.a, entropy: r.b });
    checkWeights(w, n);
    this.ctx.write(g.weights, w);
    g.backward.submit();
    return { logProbs: r.a, entropy: r.b, loss: weightedLoss(r.a, w) };
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

  private async clearGradsNow(): Promise<void> {
    const enc = this.ctx.device.createCommandEncoder();
    enc.clearBuffer(this.grads);
    this.ctx.submit([enc.finish()]);
  }

  getOptimizerState(): Promise<OptimizerState> {
    return this.exclusive(() => readOptimizerState(this.adamTarget(), this.step));
  }

  setOptimizerState(state: OptimizerState): Promise<void> {
    return this.exclusive(async () => {
      this.step = writeOptimizerState(this.adamTarget(), state);
    });
  }

  /** Runs forward and backward only (no update) and returns the gradient buffer; for tests and checks. */
  computeGrads(batch: Batch, weights: Float32Array): Promise<Float32Array> {
    return this.exclusive(async () => {
      await this.clearGradsNow();
      await this.accumulateNow(batch, weights);
      const grads = await this.ctx.readF32(this.grads, this.layout.total);
      await this.clearGradsNow();
      return grads;
    });
  }

  private decoderProgram(): Promise<Decoder> {
    if (!this.decoder) this.decoder = this.buildDecoder();
    return this.decoder;
  }

  private async buildDecoder(): Promise<Decoder> {
    const { ctx, params } = this;
    const { width: C, heads: H, vocabSize: V, layers: L, contextLength: T } = this.config;
    const buffers: GPUBuffer[] = [];
    const buf = (elements: number, label: string) => {
      const b = ctx.empty(elements * F, label);
      buffers.push(b);
      return b;
    };
    const token = buf(1, 'dec.token');
    const res = buf(C, 'dec.res');
    const ln = buf(C, 'dec.ln');
    const stats = buf(2, 'dec.stats');
    const qkv = buf(3 * C, 'dec.qkv');
    const att = buf(H * T, 'dec.att');
    const atty = buf(C, 'dec.atty');
    const fch = buf(4 * C, 'dec.fch');
    const fcg = buf(4 * C, 'dec.fcg');
    const logits = buf(V, 'dec.logits');
    const cache = Array.from({ length: L }, (_, l) => buf(T * 3 * C, `dec.kv${l}`));
    const o = (n: string) => this.off(n);
    const p = new Program(ctx);
    const [embedUniform] = await K.embeddingForward(
      p,
      { N: 1, T: 1, C, V, wteOff: o('wte'), wpeOff: o('wpe') },
      token,
      params,
      res,
    );
    const attnUniforms: GPUBuffer[] = [];
    const copies: { dstOffset?: number }[] = [];
    for (let l = 0; l < L; l++) {
      const h = `h${l}.`;
      await this.layernorm(p, 1, `${h}ln1`, res, ln, stats);
      await this.linear(p, 1, 3 * C, C, ln, `${h}attn.qkv`, qkv);
      copies.push(p.copy(qkv, 0, cache[l], 0, 3 * C * F));
      const [u] = await K.attentionForward(p, { B: 1, T, C, H, t0: 0, nq: 1 }, cache[l], att, atty);
      attnUniforms.push(u);
      await this.linear(p, 1, C, C, atty, `${h}attn.proj`, res, true);
      await this.layernorm(p, 1, `${h}ln2`, res, ln, stats);
      await this.linear(p, 1, 4 * C, C, ln, `${h}mlp.fc`, fch);
      await K.geluForward(p, 4 * C, fch, fcg);
      await this.linear(p, 1, C, 4 * C, fcg, `${h}mlp.proj`, res, true);
    }
    await this.layernorm(p, 1, 'lnf', res, ln, stats);
    await K.matmul(p, { mode: 'nt', M: 1, N: V, K: C, a: ln, b: params, bOff: o('wte'), c: logits });
    return { program: p, token, logits, embedUniform, attnUniforms, copies, cache, buffers };
  }

  sample(req: SampleRequest): Promise<SampleResult> {
    return this.exclusive(() => this.sampleNow(req));
  }

  private async sampleNow(req: SampleRequest): Promise<SampleResult> {
    const { vocabSize: V, contextLength: T, width: C, heads: H, layers: L } = this.config;
    checkSampleRequest(req, V, T);
    const d = await this.decoderProgram();
    const step = (id: number, pos: number) => {
      this.ctx.write(d.token, new Uint32Array([id]));
      this.ctx.write(
        d.embedUniform,
        uniformBlock([
          { u: 1 },
          { u: 1 },
          { u: C },
          { u: V },
          { u: this.off('wte') },
          { u: this.off('wpe') },
          { u: pos },
        ]),
      );
      const attn = attentionBlock({ B: 1, T, C, H, t0: pos, nq: 1 });
      for (let l = 0; l < L; l++) {
        this.ctx.write(d.attnUniforms[l], attn);
        d.copies[l].dstOffset = pos * 3 * C * F;
      }
      d.program.submit();
    };
    // Prefill: the whole prompt in one batched forward pass (B = 1, T rounded up to a power of two so few
    // graphs are built; causal attention makes the padding rows harmless), then its qkv rows become the KV cache.
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
      for (let l = 0; l < L; l++) enc.copyBufferToBuffer(g.qkv[l], 0, d.cache[l], 0, P * 3 * C * F);
      this.ctx.submit([enc.finish()]);
      return this.ctx.readF32(g.logits, V, (P - 1) * V);
    };
    return decodeLoop(req, T, step, () => this.ctx.readF32(d.logits, V), prefill);
  }

  getParams(): Promise<Float32Array> {
    return this.exclusive(() => this.getParamsNow());
  }

  private async getParamsNow(): Promise<Float32Array> {
    return this.ctx.readF32(this.params, this.layout.total);
  }

  setParams(params: Float32Array): Promise<void> {
    return this.exclusive(() => this.setParamsNow(params));
  }

  private async setParamsNow(params: Float32Array): Promise<void> {
    if (params.length !== this.layout.total)
      throw new Error(`setParams: got ${params.length} values, the layout needs ${this.layout.total}`);
    this.ctx.write(this.params, params);
    const zeros = new Float32Array(this.layout.total);
    this.ctx.write(this.m, zeros);
    this.ctx.write(this.v, zeros);
    await this.clearGradsNow();
    this.step = 0;
  }

  dispose(): void {
    const all: GPUBuffer[] = [this.params, this.grads, this.m, this.v, this.partial];
    void (async () => {
      for (const g of this.graphs.values()) {
        const graph = await g;
        graph.forward.destroy();
        graph.backward.destroy();
        for (const b of graph.buffers) b.destroy();
      }
      if (this.decoder) {
        const d = await this.decoder;
        d.program.destroy();
        for (const b of d.buffers) b.destroy();
      }
      if (this.adam) {
        const a = await this.adam;
        a.norm.destroy();
        a.update.destroy();
      }
      for (const b of all) b.destroy();
    })();
  }
}
