import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { adamwStepCpu } from '../../src/engine/cpu/adamw';
import { attentionBackwardCpu, attentionForwardCpu } from '../../src/engine/cpu/attention';
import { embeddingBackwardCpu, embeddingForwardCpu } from '../../src/engine/cpu/embedding';
import { geluBackwardCpu, geluForwardCpu } from '../../src/engine/cpu/gelu';
import { layernormBackwardCpu, layernormForwardCpu } from '../../src/engine/cpu/layernorm';
import { logprobBackwardCpu, logprobForwardCpu } from '../../src/engine/cpu/logprob';
import { colsumCpu, type MatmulMode, matmulModeCpu } from '../../src/engine/cpu/matmul';
import { type GpuContext, Program } from '../../src/engine/gpu/device';
import * as K from '../../src/engine/gpu/kernels';
import { context, maxAbsDiff } from './gpuContext';

// Every WGSL kernel against its CPU reference on Chromium's WebGPU. Shapes are tiny (software adapter) but
// not multiples of the workgroup sizes, so the bounds checks are exercised. Tolerances are absolute, sized
// from f32 rounding of the sums involved.

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await context();
});
afterAll(() => ctx?.destroy());

const up = (a: Float32Array | Uint32Array) => ctx.storage(a);
const zeros = (n: number) => ctx.empty(n * 4);
async function run(build: (p: Program) => Promise<unknown>): Promise<void> {
  const p = new Program(ctx);
  await build(p);
  p.submit();
  await ctx.device.queue.onSubmittedWorkDone();
  p.destroy();
}
const read = (b: GPUBuffer, n: number) => ctx.readF32(b, n);
const u32 = (n: number, mod: number, seed: number) =>
  Uint32Array.from(uniformF32(n, seed, 0, 1), (x) => Math.floor(x * mod));

describe('WGSL kernels vs CPU references (Chromium WebGPU)', () => {
  for (const [mode, M] of [
    ['nn', 19],
    ['nt', 19],
    ['tn', 19],
    ['nn', 1],
    ['nt', 1],
  ] as [MatmulMode, number][]) {
    it(`matmul ${mode} with offsets, bias and accumulate (M = ${M})`, async () => {
      const [N, Kd] = [70, 37];
      const aOff = 5;
      const bOff = 3;
      const cOff = 7;
      const a = uniformF32(aOff + M * Kd, 1);
      const b = uniformF32(bOff + Kd * N, 2);
      const bias = uniformF32(N, 3);
      const c0 = uniformF32(cOff + M * N, 4);
      const ref = new Float32Array(c0);
      matmulModeCpu(mode, a.subarray(aOff), b.subarray(bOff), ref.subarray(cOff), M, N, Kd, {
        bias,
        accumulate: true,
      });
      const bc = up(c0);
      await run((p) =>
        K.matmul(p, {
          mode,
          M,
          N,
          K: Kd,
          a: up(a),
          aOff,
          b: up(b),
          bOff,
          c: bc,
          cOff,
          bias: up(bias),
          accumulate: true,
        }),
      );
      const got = await read(bc, c0.length);
      expect(maxAbsDiff(got, ref)).toBeLessThanOrEqual(1e-5 * Kd);
    });
  }

  it('colsum (bias gradient)', async () => {
    const [M, N] = [29, 70];
    const x = uniformF32(M * N, 5);
    const out0 = uniformF32(N + 4, 6);
    const ref = new Float32Array(out0);
    colsumCpu(x, M, N, ref.subarray(4));
    const bo = up(out0);
    await run((p) => K.colsum(p, up(x), M, N, bo, 4));
    expect(maxAbsDiff(await read(bo, out0.length), ref)).toBeLessThanOrEqual(1e-5 * M);
  });

  it('embedding forward and backward', async () => {
    const [B, T, C, V] = [2, 7, 12, 11];
    const N = B * T;
    const wteOff = 3;
    const wpeOff = wteOff + V * C;
    const params = uniformF32(wpeOff + T * C + 2, 7);
    const tokens = u32(N, V, 8);
    const ref = new Float32Array(N * C);
    embeddingForwardCpu(
      tokens,
      params.subarray(wteOff, wteOff + V * C),
      params.subarray(wpeOff, wpeOff + T * C),
      ref,
      T,
      C,
    );
    const out = zeros(N * C);
    const bt = up(tokens);
    const d = { N, T, C, V, wteOff, wpeOff };
    await run((p) => K.embeddingForward(p, d, bt, up(params), out));
    expect(maxAbsDiff(await read(out, N * C), ref)).toBe(0);

    const dout = uniformF32(N * C, 9);
    const g0 = uniformF32(params.length, 10);
    const gref = new Float32Array(g0);
    embeddingBackwardCpu(
      tokens,
      dout,
      gref.subarray(wteOff, wteOff + V * C),
      gref.subarray(wpeOff, wpeOff + T * C),
      T,
      C,
    );
    const bg = up(g0);
    await run((p) => K.embeddingBackward(p, d, bt, up(dout), bg));
    expect(maxAbsDiff(await read(bg, g0.length), gref)).toBeLessThanOrEqual(1e-5 * N);
  });

  it('layernorm forward, backward and parameter gradients', async () => {
    const [N, C] = [13, 40];
    const wOff = 2;
    const bOff = 2 + C;
    const params = uniformF32(bOff + C, 11, 0.5, 1.5);
    const x = uniformF32(N * C, 12, -2, 2);
    const y = new Float32Array(N * C);
    const stats = new Float32Array(2 * N);
    layernormForwardCpu(x, params.subarray(wOff, wOff + C), params.subarray(bOff, bOff + C), y, stats, N, C);
    const by = zeros(N * C);
    const bs = zeros(2 * N);
    const bx = up(x);
    const bp = up(params);
    await run((p) => K.layernormForward(p, { N, C, wOff, bOff }, bx, bp, by, bs));
    expect(maxAbsDiff(await read(by, N * C), y)).toBeLessThanOrEqual(2e-5);
    expect(maxAbsDiff(await read(bs, 2 * N), stats)).toBeLessThanOrEqual(2e-5);

    const dy = uniformF32(N * C, 13);
    const dx0 = uniformF32(N * C, 14);
    const dx = new Float32Array(dx0);
    const g0 = uniformF32(params.length, 15);
    const g = new Float32Array(g0);
    layernormBackwardCpu(
      x,
      params.subarray(wOff, wOff + C),
      stats,
      dy,
      dx,
      g.subarray(wOff, wOff + C),
      g.subarray(bOff, bOff + C),
      N,
      C,
    );
    const bdx = up(dx0);
    const bg = up(g0);
    await run((p) => K.layernormBackward(p, { N, C, wOff, bOff }, bx, bs, up(dy), bdx, bp, bg));
    expect(maxAbsDiff(await read(bdx, N * C), dx)).toBeLessThanOrEqual(5e-5);
    expect(maxAbsDiff(await read(bg, g0.length), g)).toBeLessThanOrEqual(1e-4);
  });

  it('gelu forward and backward', async () => {
    const n = 301;
    const x = uniformF32(n, 16, -6, 6);
    x[0] = 30; // far tail: tanh saturates
    x[1] = -30;
    const y = new Float32Array(n);
    geluForwardCpu(x, y);
    const by = zeros(n);
    const bx = up(x);
    await run((p) => K.geluForward(p, n, bx, by));
    expect(maxAbsDiff(await read(by, n), y)).toBeLessThanOrEqual(1e-5);
    const dy = uniformF32(n, 17);
    const dx = new Float32Array(n);
    geluBackwardCpu(x, dy, dx);
    const bdx = zeros(n);
    await run((p) => K.geluBackward(p, n, bx, up(dy), bdx));
    expect(maxAbsDiff(await read(bdx, n), dx)).toBeLessThanOrEqual(1e-5);
  });

  it('causal attention forward and backward', async () => {
    const [B, T, C, H] = [2, 9, 16, 4];
    const qkv = uniformF32(B * T * 3 * C, 18, -1.5, 1.5);
    const att = new Float32Array(B * H * T * T);
    const out = new Float32Array(B * T * C);
    attentionForwardCpu(qkv, att, out, B, T, C, H);
    const bq = up(qkv);
    const ba = zeros(att.length);
    const bo = zeros(out.length);
    await run((p) => K.attentionForward(p, { B, T, C, H }, bq, ba, bo));
    expect(maxAbsDiff(await read(ba, att.length), att)).toBeLessThanOrEqual(1e-6);
    expect(maxAbsDiff(await read(bo, out.length), out)).toBeLessThanOrEqual(1e-5);

    const dout = uniformF32(out.length, 19);
    const dqkv = new Float32Array(qkv.length);
    attentionBackwardCpu(qkv, att, dout, dqkv, B, T, C, H);
    const bd = zeros(qkv.length);
    await run((p) => K.attentionBackward(p, { B, T, C, H }, bq, ba, up(dout), zeros(att.length), bd));
    expect(maxAbsDiff(await read(bd, qkv.length), dqkv)).toBeLessThanOrEqual(2e-5);
  });

  it('attention decode step (one query against a KV cache)', async () => {
    const [T, C, H, t0] = [10, 16, 2, 6];
    const qkv = uniformF32(T * 3 * C, 20);
    const att = new Float32Array(H * T);
    const out = new Float32Array(C);
    attentionForwardCpu(qkv, att, out, 1, T, C, H, t0, 1);
    const bo = zeros(C);
    await run((p) => K.attentionForward(p, { B: 1, T, C, H, t0, nq: 1 }, up(qkv), zeros(H * T), bo));
    expect(maxAbsDiff(await read(bo, C), out)).toBeLessThanOrEqual(1e-5);
  });

  for (const temperature of [1, 0.7]) {
    it(`fused log-softmax + gather forward and weighted backward (temperature ${temperature})`, async () => {
      const [B, T, V] = [3, 6, 67];
      const logits = uniformF32(B * T * V, 21, -4, 4);
      const tokens = u32(B * T, V, 22);
      const mask = Float32Array.from({ length: B * T }, (_, i) => (i % T < 5 - (i % 2) ? 1 : 0));
      const ref = logprobForwardCpu(logits, tokens, mask, B, T, V, temperature);
      const bl = up(logits);
      const bt = up(tokens);
      const lse = zeros(B * T);
      const lp = zeros(B * T);
      const ent = zeros(B * T);
      const d = { B, T, V, temperature };
      await run((p) => K.logprobForward(p, d, bl, bt, up(mask), lse, lp, ent));
      expect(maxAbsDiff(await read(lp, B * T), ref.logp)).toBeLessThanOrEqual(1e-5);
      expect(maxAbsDiff(await read(ent, B * T), ref.entropy)).toBeLessThanOrEqual(1e-5);
      const weights = uniformF32(B * T, 23);
      const dref = logprobBackwardCpu(logits, tokens, weights, ref.lse, B, T, V, temperature);
      const bd = zeros(B * T * V);
      await run((p) => K.logprobBackward(p, d, bl, bt, up(weights), lse, bd));
      expect(maxAbsDiff(await read(bd, B * T * V), dref)).toBeLessThanOrEqual(1e-6);
    });
  }

  for (const maxGradNorm of [0, 0.5]) {
    it(`AdamW over a flat buffer with global-norm clipping (maxGradNorm ${maxGradNorm})`, async () => {
      const n = 1000;
      const decayEnd = 600;
      const params = uniformF32(n, 24);
      const grads = uniformF32(n, 25, -0.1, 0.1);
      const m = uniformF32(n, 26, -0.01, 0.01);
      const v = uniformF32(n, 27, 0, 0.001);
      const h = { lr: 0.01, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm };
      const step = 3;
      const [pr, mr, vr] = [new Float32Array(params), new Float32Array(m), new Float32Array(v)];
      const norm = adamwStepCpu(pr, grads, mr, vr, step, decayEnd, h);
      const partials = K.adamwPartials(n);
      const bp = up(params);
      const bm = up(m);
      const bv = up(v);
      const part = zeros(partials + 1);
      await run((p) =>
        K.adamw(
          p,
          {
            n,
            decayEnd,
            partials,
            lr: h.lr,
            beta1: h.beta1,
            beta2: h.beta2,
            eps: h.eps,
            weightDecay: h.weightDecay,
            maxGradNorm,
            step,
          },
          up(grads),
          part,
          bp,
          bm,
          bv,
        ),
      );
      const gotNorm = (await ctx.readF32(part, 1, partials))[0];
      expect(Math.abs(gotNorm - norm)).toBeLessThanOrEqual(1e-5 * norm);
      expect(maxAbsDiff(await read(bm, n), mr)).toBeLessThanOrEqual(1e-7);
      expect(maxAbsDiff(await read(bv, n), vr)).toBeLessThanOrEqual(1e-8);
      expect(maxAbsDiff(await read(bp, n), pr)).toBeLessThanOrEqual(1e-5);
    });
  }
});
