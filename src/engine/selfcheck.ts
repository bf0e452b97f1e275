/**
 * The engine's self-check on whatever adapter is present: every WGSL kernel against its CPU reference, a full
 * WebGPU training step against the CPU step, and a finite-difference check of the reference gradient. Used by
 * `npm run lab -- engine-check`; the browser tests hold the same comparisons in Chromium.
 */
import { uniformF32 } from '../core/random';
import { adamwStepCpu } from './cpu/adamw';
import { attentionBackwardCpu, attentionForwardCpu } from './cpu/attention';
import { embeddingBackwardCpu, embeddingForwardCpu } from './cpu/embedding';
import { geluBackwardCpu, geluForwardCpu } from './cpu/gelu';
import { layernormBackwardCpu, layernormForwardCpu } from './cpu/layernorm';
import { logprobBackwardCpu, logprobForwardCpu } from './cpu/logprob';
import { colsumCpu, type MatmulMode, matmulModeCpu } from './cpu/matmul';
import { type GpuContext, Program } from './gpu/device';
import * as K from './gpu/kernels';
import { modelGradCheck } from './gradcheck';
import { CpuPolicy } from './policy/cpuPolicy';
import { GpuPolicy } from './policy/gpuPolicy';

export interface CheckResult {
  name: string;
  /** Max absolute error (or relative, for the gradient check). */
  error: number;
  tolerance: number;
  ok: boolean;
}

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
  }
  return a.length === b.length ? m : Number.POSITIVE_INFINITY;
}

export async function runSelfCheck(
  ctx: GpuContext,
  report: (r: CheckResult) => void = () => {},
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add = (name: string, error: number, tolerance: number) => {
    const r = { name, error, tolerance, ok: error <= tolerance };
    results.push(r);
    report(r);
  };
  const owned: GPUBuffer[] = [];
  const up = (a: Float32Array | Uint32Array) => {
    const b = ctx.storage(a);
    owned.push(b);
    return b;
  };
  const zeros = (n: number) => {
    const b = ctx.empty(n * 4);
    owned.push(b);
    return b;
  };
  const run = async (build: (p: Program) => Promise<unknown>) => {
    const p = new Program(ctx);
    await build(p);
    p.submit();
    await ctx.device.queue.onSubmittedWorkDone();
    p.destroy();
  };
  const read = (b: GPUBuffer, n: number) => ctx.readF32(b, n);

  for (const mode of ['nn', 'nt', 'tn'] as MatmulMode[]) {
    const [M, N, Kd] = [37, 29, 45];
    const a = uniformF32(M * Kd, 1);
    const b = uniformF32(Kd * N, 2);
    const bias = uniformF32(N, 3);
    const ref = new Float32Array(M * N);
    matmulModeCpu(mode, a, b, ref, M, N, Kd, { bias });
    const c = zeros(M * N);
    await run((p) => K.matmul(p, { mode, M, N, K: Kd, a: up(a), b: up(b), c, bias: up(bias) }));
    add(`matmul ${mode} (${M}x${N}x${Kd})`, maxAbs(await read(c, M * N), ref), 1e-5 * Kd);
  }
  {
    const [M, N] = [33, 70];
    const x = uniformF32(M * N, 5);
    const ref = new Float32Array(N);
    colsumCpu(x, M, N, ref, false);
    const o = zeros(N);
    await run((p) => K.colsum(p, up(x), M, N, o, 0, false));
    add('colsum', maxAbs(await read(o, N), ref), 1e-5 * M);
  }
  {
    const [B, T, C, V] = [2, 7, 12, 11];
    const N = B * T;
    const wte = uniformF32(V * C, 7);
    const wpe = uniformF32(T * C, 8);
    const params = new Float32Array([...wte, ...wpe]);
    const tokens = Uint32Array.from({ length: N }, (_, i) => (i * 5 + 2) % V);
    const ref = new Float32Array(N * C);
    embeddingForwardCpu(tokens, wte, wpe, ref, T, C);
    const d = { N, T, C, V, wteOff: 0, wpeOff: V * C };
    const out = zeros(N * C);
    const bt = up(tokens);
    await run((p) => K.embeddingForward(p, d, bt, up(params), out));
    add('embedding forward', maxAbs(await read(out, N * C), ref), 0);
    const dout = uniformF32(N * C, 9);
    const gref = new Float32Array(params.length);
    embeddingBackwardCpu(tokens, dout, gref.subarray(0, V * C), gref.subarray(V * C), T, C);
    const g = zeros(params.length);
    await run((p) => K.embeddingBackward(p, d, bt, up(dout), g));
    add('embedding backward', maxAbs(await read(g, params.length), gref), 1e-5 * N);
  }
  {
    const [N, C] = [13, 40];
    const params = uniformF32(2 * C, 11, 0.5, 1.5);
    const x = uniformF32(N * C, 12, -2, 2);
    const y = new Float32Array(N * C);
    const stats = new Float32Array(2 * N);
    layernormForwardCpu(x, params.subarray(0, C), params.subarray(C), y, stats, N, C);
    const d = { N, C, wOff: 0, bOff: C };
    const [by, bs, bx, bp] = [zeros(N * C), zeros(2 * N), up(x), up(params)];
    await run((p) => K.layernormForward(p, d, bx, bp, by, bs));
    add('layernorm forward', maxAbs(await read(by, N * C), y), 2e-5);
    const dy = uniformF32(N * C, 13);
    const dx = new Float32Array(N * C);
    const g = new Float32Array(2 * C);
    layernormBackwardCpu(x, params.subarray(0, C), stats, dy, dx, g.subarray(0, C), g.subarray(C), N, C);
    const [bdx, bg] = [zeros(N * C), zeros(2 * C)];
    await run((p) => K.layernormBackward(p, d, bx, bs, up(dy), bdx, bp, bg));
    add('layernorm backward (input)', maxAbs(await read(bdx, N * C), dx), 5e-5);
    add('layernorm backward (params)', maxAbs(await read(bg, 2 * C), g), 1e-4);
  }
  {
    const n = 301;
    const x = uniformF32(n, 16, -6, 6);
    const y = new Float32Array(n);
    geluForwardCpu(x, y);
    const [bx, by] = [up(x), zeros(n)];
    await run((p) => K.geluForward(p, n, bx, by));
    add('gelu forward', maxAbs(await read(by, n), y), 1e-5);
    const dy = uniformF32(n, 17);
    const dx = new Float32Array(n);
    geluBackwardCpu(x, dy, dx);
    const bdx = zeros(n);
    await run((p) => K.geluBackward(p, n, bx, up(dy), bdx));
    add('gelu backward', maxAbs(await read(bdx, n), dx), 1e-5);
  }
  {
    const [B, T, C, H] = [2, 9, 16, 4];
    const qkv = uniformF32(B * T * 3 * C, 18, -1.5, 1.5);
    const att = new Float32Array(B * H * T * T);
    const out = new Float32Array(B * T * C);
    attentionForwardCpu(qkv, att, out, B, T, C, H);
    const [bq, ba, bo] = [up(qkv), zeros(att.length), zeros(out.length)];
    await run((p) => K.attentionForward(p, { B, T, C, H }, bq, ba, bo));
    add('attention forward', maxAbs(await read(bo, out.length), out), 1e-5);
    const dout = uniformF32(out.length, 19);
    const dqkv = new Float32Array(qkv.length);
    attentionBackwardCpu(qkv, att, dout, dqkv, B, T, C, H);
    const bd = zeros(qkv.length);
    await run((p) => K.attentionBackward(p, { B, T, C, H }, bq, ba, up(dout), zeros(att.length), bd));
    add('attention backward', maxAbs(await read(bd, qkv.length), dqkv), 2e-5);
  }
  {
    const [B, T, V, temperature] = [3, 6, 67, 0.8];
    const logits = uniformF32(B * T * V, 21, -4, 4);
    const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 11 + 3) % V);
    const mask = new Float32Array(B * T).fill(1);
    const ref = logprobForwardCpu(logits, tokens, mask, B, T, V, temperature);
    const [bl, bt, lse, lp, ent] = [up(logits), up(tokens), zeros(B * T), zeros(B * T), zeros(B * T)];
    const d = { B, T, V, temperature };
    await run((p) => K.logprobForward(p, d, bl, bt, up(mask), lse, lp, ent));
    add('log-prob forward', maxAbs(await read(lp, B * T), ref.logp), 1e-5);
    add('entropy forward', maxAbs(await read(ent, B * T), ref.entropy), 1e-5);
    const weights = uniformF32(B * T, 23);
    const dref = logprobBackwardCpu(logits, tokens, weights, ref.lse, B, T, V, temperature);
    const bd = zeros(B * T * V);
    await run((p) => K.logprobBackward(p, d, bl, bt, up(weights), lse, bd));
    add('log-prob backward (dlogits)', maxAbs(await read(bd, B * T * V), dref), 1e-6);
  }
  {
    const n = 1000;
    const params = uniformF32(n, 24);
    const grads = uniformF32(n, 25, -0.1, 0.1);
    const h = { lr: 0.01, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.5 };
    const pr = new Float32Array(params);
    adamwStepCpu(pr, grads, new Float32Array(n), new Float32Array(n), 1, 600, h);
    const partials = K.adamwPartials(n);
    const bp = up(params);
    await run((p) =>
      K.adamw(
        p,
        { n, decayEnd: 600, partials, ...h, step: 1 },
        up(grads),
        zeros(partials + 1),
        bp,
        zeros(n),
        zeros(n),
      ),
    );
    add('adamw + global-norm clip', maxAbs(await read(bp, n), pr), 1e-5);
  }
  for (const b of owned) b.destroy();

  // A whole training step of a small policy, WebGPU vs CPU.
  const cfg = { vocabSize: 64, contextLength: 16, layers: 2, width: 32, heads: 4, seed: 5 };
  const B = 2;
  const T = 12;
  const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % cfg.vocabSize);
  const mask = Float32Array.from({ length: B * T }, (_, i) => (i < T + 8 ? 1 : 0));
  const batch = { tokens, mask, batchSize: B, seqLen: T };
  const weights = Float32Array.from(mask, (m, i) => (m && i % T ? (i % 3) - 0.8 : 0));
  const opt = { lr: 1e-3 };
  const gpu = GpuPolicy.create(ctx, cfg, opt);
  const cpu = new CpuPolicy(cfg, opt);
  const lpG = await gpu.logProbs(batch);
  const lpC = await cpu.logProbs(batch);
  add('policy log-probs', maxAbs(lpG.logProbs, lpC.logProbs), 1e-5);
  cpu.computeGrads(batch, weights);
  add('policy gradients', maxAbs(await gpu.computeGrads(batch, weights), cpu.grads), 1e-5);
  const sg = await gpu.trainStep(batch, weights);
  const sc = await cpu.trainStep(batch, weights);
  add('policy train step: loss', Math.abs(sg.loss - sc.loss), 1e-5);
  add('policy train step: params', maxAbs(await gpu.getParams(), cpu.params), 5e-3 * opt.lr);
  const req = { promptIds: [1, 2, 3], temperature: 1, topP: 0.9, maxTokens: 6, seed: 3 };
  const a = await gpu.sample(req);
  const c = await cpu.sample(req);
  add('sampling: same tokens as CPU', a.tokenIds.join() === c.tokenIds.join() ? 0 : 1, 0);
  add('sampling: log-probs', maxAbs(a.logProbs, c.logProbs), 1e-5);
  gpu.dispose();

  // The reference gradient itself, against finite differences.
  const fd = modelGradCheck(cpu.config, cpu.layout, cpu.params, batch, weights, { eps: 1e-2, count: 40 });
  add('reference gradient vs finite differences (rel)', fd.maxRelError, 1e-2);
  return results;
}
