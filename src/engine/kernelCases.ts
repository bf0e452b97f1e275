/**
 * The one table of kernel cases: every WGSL kernel against its CPU reference on whatever adapter is present,
 * with one tolerance per comparison. `tests/browser/kernels.test.ts` (Chromium) and `lab engine-check`
 * (Node + Dawn, via selfcheck.ts) both iterate this table, so the two can never disagree on what "matches"
 * means. Shapes are tiny (software adapters are slow) but not multiples of the workgroup sizes, so bounds
 * checks are exercised; offsets, bias and accumulate paths are covered. Tolerances are absolute, sized from
 * f32 rounding of the sums involved.
 */
import { uniformF32 } from '../core/random';
import { adamwStepCpu } from './cpu/adamw';
import { attentionBackwardCpu, attentionForwardCpu } from './cpu/attention';
import { embeddingBackwardCpu, embeddingForwardCpu } from './cpu/embedding';
import { fusedHeadBackwardCpu, fusedHeadForwardCpu } from './cpu/fusedLogprob';
import { geluBackwardCpu, geluForwardCpu } from './cpu/gelu';
import { gqaBackwardCpu, gqaForwardCpu } from './cpu/gqa';
import { packHalves, roundToDtype } from './cpu/half';
import { layernormBackwardCpu, layernormForwardCpu } from './cpu/layernorm';
import { logprobBackwardCpu, logprobForwardCpu } from './cpu/logprob';
import { colsumCpu, type MatmulMode, matmulModeCpu } from './cpu/matmul';
import { rmsnormBackwardCpu, rmsnormForwardCpu } from './cpu/rmsnorm';
import { ropeApplyCpu, ropeTables } from './cpu/rope';
import { swigluBackwardCpu, swigluForwardCpu } from './cpu/swiglu';
import { type GpuContext, Program } from './gpu/device';
import * as K from './gpu/kernels';

/** One output of a kernel next to its reference. */
export interface Comparison {
  name: string;
  got: ArrayLike<number>;
  want: ArrayLike<number>;
  tolerance: number;
}

export interface KernelCase {
  name: string;
  run(ctx: GpuContext): Promise<Comparison[]>;
}

/** max |a − b|; NaN or a length mismatch is +∞ (so it can never pass). */
export function maxAbsError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
  }
  return m;
}

/** Buffers, a one-shot program runner and read-back for one case; everything is freed at the end. */
async function withBuffers<R>(
  ctx: GpuContext,
  body: (h: {
    up: (a: Float32Array | Uint32Array) => GPUBuffer;
    zeros: (n: number) => GPUBuffer;
    run: (build: (p: Program) => Promise<unknown>) => Promise<void>;
    read: (b: GPUBuffer, n: number, offset?: number) => Promise<Float32Array>;
  }) => Promise<R>,
): Promise<R> {
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
  const read = (b: GPUBuffer, n: number, offset = 0) => ctx.readF32(b, n, offset);
  try {
    return await body({ up, zeros, run, read });
  } finally {
    for (const b of owned) b.destroy();
  }
}

const u32 = (n: number, mod: number, seed: number) =>
  Uint32Array.from(uniformF32(n, seed, 0, 1), (x) => Math.floor(x * mod));

const matmulCases: KernelCase[] = (
  [
    ['nn', 19, 1],
    ['nt', 19, 1],
    ['tn', 19, 1],
    ['nn', 1, 1],
    ['nt', 1, 1],
    // scaled products: LoRA's s·(x·Aᵀ)·Bᵀ and its backward (s = lora_alpha / r)
    ['nn', 19, 2.5],
    ['tn', 19, 2.5],
    ['nt', 1, 2.5],
  ] as [MatmulMode, number, number][]
).map(([mode, M, scale]) => ({
  name: `matmul ${mode} with offsets, bias and accumulate (M = ${M}${scale !== 1 ? `, scale ${scale}` : ''})`,
  run: (ctx) =>
    withBuffers(ctx, async ({ up, run, read }) => {
      const [N, Kd] = [70, 37];
      const aOff = 5;
      const bOff = 3;
      const cOff = 7;
      const a = uniformF32(aOff + M * Kd, 1);
      const b = uniformF32(bOff + Kd * N, 2);
      const bias = uniformF32(N, 3);
      const c0 = uniformF32(cOff + M * N, 4);
      const ref = new Float32Array(c0);
      if (scale === 1)
        matmulModeCpu(mode, a.subarray(aOff), b.subarray(bOff), ref.subarray(cOff), M, N, Kd, {
          bias,
          accumulate: true,
        });
      else {
        const prod = new Float32Array(M * N);
        matmulModeCpu(mode, a.subarray(aOff), b.subarray(bOff), prod, M, N, Kd);
        for (let i = 0; i < M * N; i++) ref[cOff + i] += scale * prod[i] + bias[i % N];
      }
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
          scale,
        }),
      );
      return [{ name: 'c', got: await read(bc, c0.length), want: ref, tolerance: 1e-5 * Kd * scale }];
    }),
}));

/**
 * The weight-reading kernels with a frozen base packed as 16-bit halves (two per u32 word, widened to f32 in the
 * kernel, f32 accumulation) against the f32 references run on the same rounded values. Odd element offsets put
 * tensors across word boundaries, so both halves of a word are read.
 */
const packedCases: KernelCase[] = (['f16', 'bf16'] as const).flatMap((dtype): KernelCase[] => [
  ...(
    [
      ['nt', 19],
      ['nn', 19],
      ['nt', 1],
      ['nn', 1],
    ] as [MatmulMode, number][]
  ).map(
    ([mode, M]): KernelCase => ({
      name: `matmul ${mode} with a packed ${dtype} B, bias and accumulate (M = ${M})`,
      run: (ctx) =>
        withBuffers(ctx, async ({ up, run, read }) => {
          const [N, Kd] = [70, 37];
          const bOff = 3;
          const a = uniformF32(M * Kd, 1);
          const b = uniformF32(bOff + Kd * N, 2, -1, 1);
          const bias = uniformF32(N, 3);
          const c0 = uniformF32(M * N, 4);
          const ref = new Float32Array(c0);
          const rounded = roundToDtype(b, dtype);
          matmulModeCpu(mode, a, rounded.subarray(bOff), ref, M, N, Kd, { bias, accumulate: true });
          const bc = up(c0);
          await run((p) =>
            K.matmul(p, {
              mode,
              M,
              N,
              K: Kd,
              a: up(a),
              b: up(packHalves(b, dtype)),
              bOff,
              bDtype: dtype,
              c: bc,
              bias: up(bias),
              accumulate: true,
            }),
          );
          return [{ name: 'c', got: await read(bc, c0.length), want: ref, tolerance: 1e-5 * Kd }];
        }),
    }),
  ),
  {
    name: `embedding gather from a packed ${dtype} table`,
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [B, T, C, V, wteOff] = [2, 5, 7, 11, 3];
        const N = B * T;
        const params = uniformF32(wteOff + V * C, 20, -1, 1);
        const rounded = roundToDtype(params, dtype);
        const tokens = u32(N, V, 21);
        const ref = new Float32Array(N * C);
        embeddingForwardCpu(tokens, rounded.subarray(wteOff), new Float32Array(T * C), ref, T, C);
        const out = zeros(N * C);
        const d = { N, T, C, V, wteOff, wpeOff: 0, dtype };
        await run((p) => K.embeddingGather(p, d, up(tokens), up(packHalves(params, dtype)), out));
        return [{ name: 'gather', got: await read(out, N * C), want: ref, tolerance: 0 }];
      }),
  },
  {
    name: `fused output head + log-softmax with a packed ${dtype} head, forward and input gradient`,
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [N, C, V] = [9, 12, 131];
        const wOff = 5;
        const params = uniformF32(wOff + V * C, 60, -1, 1);
        const W = roundToDtype(params, dtype).subarray(wOff);
        const h = uniformF32(N * C, 61, -1, 1);
        const targets = Int32Array.from({ length: N }, (_, i) => (i === 4 ? -1 : (i * 37) % V));
        const weights = uniformF32(N, 62);
        const ref = fusedHeadForwardCpu(h, W, targets, N, C, V, matmulModeCpu, { chunk: 32 });
        const dh = new Float32Array(N * C);
        fusedHeadBackwardCpu(h, W, targets, weights, ref.lse, dh, null, N, C, V, matmulModeCpu, {
          chunk: 32,
        });
        const d = { N, C, V, wOff, dtype, chunk: 48 };
        const [bh, bp, bt, bs] = [
          up(h),
          up(packHalves(params, dtype)),
          up(Uint32Array.from(targets)),
          zeros(3 * N),
        ];
        await run((p) => K.fusedHeadForward(p, d, bh, bp, bt, bs));
        const stats = await read(bs, 3 * N);
        const pick = (k: number) => Float32Array.from({ length: N }, (_, i) => stats[3 * i + k]);
        const bdh = zeros(N * C);
        // a frozen (packed) head has no gradient: dh alone
        await run((p) => K.fusedHeadBackward(p, d, bh, bp, bt, up(weights), bs, bdh, null));
        return [
          { name: 'logp', got: pick(0), want: ref.logp, tolerance: 2e-5 },
          { name: 'lse', got: pick(2), want: ref.lse, tolerance: 2e-5 },
          { name: 'dh', got: await read(bdh, N * C), want: dh, tolerance: 5e-5 },
        ];
      }),
  },
]);

export const KERNEL_CASES: KernelCase[] = [
  ...matmulCases,
  {
    name: 'colsum (bias gradient)',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, run, read }) => {
        const [M, N] = [29, 70];
        const x = uniformF32(M * N, 5);
        const out0 = uniformF32(N + 4, 6);
        const ref = new Float32Array(out0);
        colsumCpu(x, M, N, ref.subarray(4));
        const bo = up(out0);
        await run((p) => K.colsum(p, up(x), M, N, bo, 4));
        return [{ name: 'out', got: await read(bo, out0.length), want: ref, tolerance: 1e-5 * M }];
      }),
  },
  {
    name: 'embedding forward and backward',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [B, T, C, V] = [2, 7, 12, 11];
        const N = B * T;
        const wteOff = 3;
        const wpeOff = wteOff + V * C;
        const params = uniformF32(wpeOff + T * C + 2, 7);
        const tokens = u32(N, V, 8);
        const ref = new Float32Array(N * C);
        const wte = (x: Float32Array) => x.subarray(wteOff, wteOff + V * C);
        const wpe = (x: Float32Array) => x.subarray(wpeOff, wpeOff + T * C);
        embeddingForwardCpu(tokens, wte(params), wpe(params), ref, T, C);
        const out = zeros(N * C);
        const bt = up(tokens);
        const d = { N, T, C, V, wteOff, wpeOff };
        await run((p) => K.embeddingForward(p, d, bt, up(params), out));
        const fwd = await read(out, N * C);
        const dout = uniformF32(N * C, 9);
        const g0 = uniformF32(params.length, 10);
        const gref = new Float32Array(g0);
        embeddingBackwardCpu(tokens, dout, wte(gref), wpe(gref), T, C);
        const bg = up(g0);
        await run((p) => K.embeddingBackward(p, d, bt, up(dout), bg));
        // token embedding alone (rotary models) and its backward without the position table
        const gatherRef = new Float32Array(N * C);
        embeddingForwardCpu(tokens, wte(params), new Float32Array(T * C), gatherRef, T, C);
        const gout = zeros(N * C);
        await run((p) => K.embeddingGather(p, d, bt, up(params), gout));
        const gtok = new Float32Array(g0);
        embeddingBackwardCpu(tokens, dout, wte(gtok), new Float32Array(T * C), T, C);
        const bg2 = up(g0);
        await run((p) => K.embeddingBackward(p, d, bt, up(dout), bg2, false));
        return [
          { name: 'forward', got: fwd, want: ref, tolerance: 0 },
          { name: 'backward (accumulated)', got: await read(bg, g0.length), want: gref, tolerance: 1e-5 * N },
          { name: 'gather (token only)', got: await read(gout, N * C), want: gatherRef, tolerance: 0 },
          {
            name: 'backward (token only, accumulated)',
            got: await read(bg2, g0.length),
            want: gtok,
            tolerance: 1e-5 * N,
          },
        ];
      }),
  },
  {
    name: 'layernorm forward, backward and parameter gradients',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [N, C] = [13, 40];
        const wOff = 2;
        const bOff = 2 + C;
        const params = uniformF32(bOff + C, 11, 0.5, 1.5);
        const w = params.subarray(wOff, wOff + C);
        const x = uniformF32(N * C, 12, -2, 2);
        const y = new Float32Array(N * C);
        const stats = new Float32Array(2 * N);
        layernormForwardCpu(x, w, params.subarray(bOff, bOff + C), y, stats, N, C);
        const [by, bs, bx, bp] = [zeros(N * C), zeros(2 * N), up(x), up(params)];
        await run((p) => K.layernormForward(p, { N, C, wOff, bOff }, bx, bp, by, bs));
        const gotY = await read(by, N * C);
        const gotStats = await read(bs, 2 * N);
        const dy = uniformF32(N * C, 13);
        const dx0 = uniformF32(N * C, 14);
        const dx = new Float32Array(dx0);
        const g0 = uniformF32(params.length, 15);
        const g = new Float32Array(g0);
        layernormBackwardCpu(
          x,
          w,
          stats,
          dy,
          dx,
          g.subarray(wOff, wOff + C),
          g.subarray(bOff, bOff + C),
          N,
          C,
        );
        const [bdx, bg] = [up(dx0), up(g0)];
        await run((p) => K.layernormBackward(p, { N, C, wOff, bOff }, bx, bs, up(dy), bdx, bp, bg));
        return [
          { name: 'forward', got: gotY, want: y, tolerance: 2e-5 },
          { name: 'stats', got: gotStats, want: stats, tolerance: 2e-5 },
          { name: 'backward (input, accumulated)', got: await read(bdx, N * C), want: dx, tolerance: 5e-5 },
          {
            name: 'backward (params, accumulated)',
            got: await read(bg, g0.length),
            want: g,
            tolerance: 1e-4,
          },
        ];
      }),
  },
  {
    name: 'rmsnorm forward, backward (accumulated and not) and weight gradient',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [N, C] = [13, 40];
        const wOff = 3;
        const eps = 1e-6;
        const params = uniformF32(wOff + C, 40, 0.5, 1.5);
        const w = params.subarray(wOff, wOff + C);
        const x = uniformF32(N * C, 41, -2, 2);
        const y = new Float32Array(N * C);
        const rstd = new Float32Array(N);
        rmsnormForwardCpu(x, w, y, rstd, N, C, eps);
        const [by, br, bx, bp] = [zeros(N * C), zeros(N), up(x), up(params)];
        await run((p) => K.rmsnormForward(p, { N, C, wOff, eps }, bx, bp, by, br));
        const gotY = await read(by, N * C);
        const gotR = await read(br, N);
        const dy = uniformF32(N * C, 42);
        const dx0 = uniformF32(N * C, 43);
        const gOff = 1;
        const g0 = uniformF32(gOff + C, 44);
        const out: Comparison[] = [
          { name: 'forward', got: gotY, want: y, tolerance: 2e-5 },
          { name: 'rstd', got: gotR, want: rstd, tolerance: 2e-5 },
        ];
        for (const accumulate of [true, false]) {
          const dx = new Float32Array(dx0);
          const g = new Float32Array(g0);
          rmsnormBackwardCpu(x, w, rstd, dy, dx, g.subarray(gOff), N, C, accumulate);
          const [bdx, bg] = [up(dx0), up(g0)];
          await run((p) =>
            K.rmsnormBackward(p, { N, C, wOff, eps, gOff, accumulate }, bx, br, up(dy), bdx, bp, bg),
          );
          const how = accumulate ? 'accumulated' : 'overwritten';
          out.push({
            name: `backward (input, ${how})`,
            got: await read(bdx, N * C),
            want: dx,
            tolerance: 5e-5,
          });
          out.push({
            name: `backward (weights, ${how})`,
            got: await read(bg, g0.length),
            want: g,
            tolerance: 1e-4,
          });
        }
        return out;
      }),
  },
  {
    name: 'swiglu forward and backward',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const n = 301;
        const g = uniformF32(n, 45, -8, 8);
        g[0] = 80; // σ saturates at both ends
        g[1] = -80;
        const u = uniformF32(n, 46, -2, 2);
        const a = new Float32Array(n);
        swigluForwardCpu(g, u, a);
        const [bg, bu, ba] = [up(g), up(u), zeros(n)];
        await run((p) => K.swigluForward(p, n, bg, bu, ba));
        const gotA = await read(ba, n);
        const da = uniformF32(n, 47);
        const dg = new Float32Array(n);
        const du = new Float32Array(n);
        swigluBackwardCpu(g, u, da, dg, du);
        const [bdg, bdu] = [zeros(n), zeros(n)];
        await run((p) => K.swigluBackward(p, n, bg, bu, up(da), bdg, bdu));
        return [
          { name: 'forward', got: gotA, want: a, tolerance: 1e-4 },
          { name: 'backward (gate)', got: await read(bdg, n), want: dg, tolerance: 1e-4 },
          { name: 'backward (up)', got: await read(bdu, n), want: du, tolerance: 1e-4 },
        ];
      }),
  },
  {
    name: 'rope forward and inverse (backward) at mixed positions',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, run, read }) => {
        const [N, H, D, P] = [7, 3, 12, 40];
        const inv = Float64Array.from({ length: D / 2 }, (_, i) => 10000 ** (-(2 * i) / D));
        const { cos, sin } = ropeTables(inv, P);
        const cs = new Float32Array(cos.length + sin.length);
        cs.set(cos);
        cs.set(sin, cos.length);
        const pos = Int32Array.from([0, 1, 39, 5, 5, 17, 2]);
        const x = uniformF32(N * H * D, 48);
        const out: Comparison[] = [];
        for (const inverse of [false, true]) {
          const want = new Float32Array(x);
          ropeApplyCpu(want, pos, cos, sin, N, H, D, inverse);
          const bx = up(x);
          await run((p) =>
            K.ropeApply(
              p,
              { N, heads: H, D, sinOff: cos.length, inverse },
              up(Uint32Array.from(pos)),
              up(cs),
              bx,
            ),
          );
          out.push({
            name: inverse ? 'inverse' : 'forward',
            got: await read(bx, x.length),
            want,
            tolerance: 1e-5,
          });
        }
        return out;
      }),
  },
  {
    name: 'grouped-query attention forward and backward (key mask, KV-cache window)',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const out: Comparison[] = [];
        const shapes = [
          { B: 2, Tq: 5, Tk: 5, H: 6, KV: 2, D: 12, offset: 0, masked: true },
          { B: 1, Tq: 2, Tk: 7, H: 4, KV: 4, D: 8, offset: 5, masked: false },
        ];
        for (const [n, { masked, ...s }] of shapes.entries()) {
          const q = uniformF32(s.B * s.Tq * s.H * s.D, 50 + n);
          const k = uniformF32(s.B * s.Tk * s.KV * s.D, 52 + n);
          const v = uniformF32(s.B * s.Tk * s.KV * s.D, 54 + n);
          const mask = masked
            ? Float32Array.from({ length: s.B * s.Tk }, (_, i) => (i === s.Tk ? 0 : 1))
            : null;
          const probs = new Float32Array(s.B * s.H * s.Tq * s.Tk);
          const y = new Float32Array(q.length);
          gqaForwardCpu(q, k, v, mask, probs, y, s);
          const dy = uniformF32(q.length, 56 + n);
          const dq = new Float32Array(q.length);
          const dk = new Float32Array(k.length);
          const dv = new Float32Array(v.length);
          gqaBackwardCpu(q, k, v, probs, dy, dq, dk, dv, s);
          const [bq, bk, bv, bp, by] = [up(q), up(k), up(v), zeros(probs.length), zeros(y.length)];
          await run((p) => K.gqaForward(p, s, bq, bk, bv, mask ? up(mask) : null, bp, by));
          const [bdq, bdkv] = [zeros(q.length), zeros(2 * k.length)];
          await run((p) => K.gqaBackward(p, s, bq, bk, bv, bp, up(dy), by, bdq, bdkv));
          const dkv = await read(bdkv, 2 * k.length);
          const tag = masked ? 'masked' : 'decode window';
          out.push({
            name: `probs (${tag})`,
            got: await read(bp, probs.length),
            want: probs,
            tolerance: 1e-5,
          });
          out.push({ name: `forward (${tag})`, got: await read(by, y.length), want: y, tolerance: 1e-5 });
          out.push({ name: `dq (${tag})`, got: await read(bdq, q.length), want: dq, tolerance: 5e-5 });
          out.push({ name: `dk (${tag})`, got: dkv.subarray(0, k.length), want: dk, tolerance: 5e-5 });
          out.push({ name: `dv (${tag})`, got: dkv.subarray(k.length), want: dv, tolerance: 5e-5 });
        }
        return out;
      }),
  },
  {
    name: 'fused output head + log-softmax forward and backward at a temperature',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [N, C, V] = [9, 12, 131];
        const wOff = 5;
        const gOff = 3;
        const temperature = 0.7;
        const params = uniformF32(wOff + V * C, 60, -1, 1);
        const W = params.subarray(wOff);
        const h = uniformF32(N * C, 61, -1, 1);
        const targets = Int32Array.from({ length: N }, (_, i) => (i === 4 ? -1 : (i * 37) % V));
        const weights = uniformF32(N, 62);
        const ref = fusedHeadForwardCpu(h, W, targets, N, C, V, matmulModeCpu, { temperature, chunk: 32 });
        const dh = new Float32Array(N * C);
        const g0 = uniformF32(gOff + V * C, 63);
        const g = new Float32Array(g0);
        fusedHeadBackwardCpu(h, W, targets, weights, ref.lse, dh, g.subarray(gOff), N, C, V, matmulModeCpu, {
          temperature,
          chunk: 32,
        });
        const d = { N, C, V, wOff, temperature, gOff, chunk: 32 };
        const [bh, bp, bt, bs] = [up(h), up(params), up(Uint32Array.from(targets)), zeros(3 * N)];
        await run((p) => K.fusedHeadForward(p, d, bh, bp, bt, bs));
        const stats = await read(bs, 3 * N);
        const pick = (k: number) => Float32Array.from({ length: N }, (_, i) => stats[3 * i + k]);
        const [bdh, bg] = [zeros(N * C), up(g0)];
        await run((p) => K.fusedHeadBackward(p, d, bh, bp, bt, up(weights), bs, bdh, bg));
        return [
          { name: 'logp', got: pick(0), want: ref.logp, tolerance: 2e-5 },
          { name: 'entropy', got: pick(1), want: ref.entropy, tolerance: 2e-5 },
          { name: 'lse', got: pick(2), want: ref.lse, tolerance: 2e-5 },
          { name: 'dh', got: await read(bdh, N * C), want: dh, tolerance: 5e-5 },
          { name: 'dW (accumulated)', got: await read(bg, g0.length), want: g, tolerance: 5e-5 },
        ];
      }),
  },
  {
    name: 'gelu forward and backward',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const n = 301;
        const x = uniformF32(n, 16, -6, 6);
        x[0] = 30; // far tail: tanh saturates
        x[1] = -30;
        const y = new Float32Array(n);
        geluForwardCpu(x, y);
        const [bx, by] = [up(x), zeros(n)];
        await run((p) => K.geluForward(p, n, bx, by));
        const gotY = await read(by, n);
        const dy = uniformF32(n, 17);
        const dx = new Float32Array(n);
        geluBackwardCpu(x, dy, dx);
        const bdx = zeros(n);
        await run((p) => K.geluBackward(p, n, bx, up(dy), bdx));
        return [
          { name: 'forward', got: gotY, want: y, tolerance: 1e-5 },
          { name: 'backward', got: await read(bdx, n), want: dx, tolerance: 1e-5 },
        ];
      }),
  },
  {
    name: 'causal attention forward and backward',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [B, T, C, H] = [2, 9, 16, 4];
        const qkv = uniformF32(B * T * 3 * C, 18, -1.5, 1.5);
        const att = new Float32Array(B * H * T * T);
        const out = new Float32Array(B * T * C);
        attentionForwardCpu(qkv, att, out, B, T, C, H);
        const [bq, ba, bo] = [up(qkv), zeros(att.length), zeros(out.length)];
        await run((p) => K.attentionForward(p, { B, T, C, H }, bq, ba, bo));
        const gotAtt = await read(ba, att.length);
        const gotOut = await read(bo, out.length);
        const dout = uniformF32(out.length, 19);
        const dqkv = new Float32Array(qkv.length);
        attentionBackwardCpu(qkv, att, dout, dqkv, B, T, C, H);
        const bd = zeros(qkv.length);
        await run((p) => K.attentionBackward(p, { B, T, C, H }, bq, ba, up(dout), zeros(att.length), bd));
        return [
          { name: 'probabilities', got: gotAtt, want: att, tolerance: 1e-6 },
          { name: 'output', got: gotOut, want: out, tolerance: 1e-5 },
          { name: 'backward', got: await read(bd, qkv.length), want: dqkv, tolerance: 2e-5 },
        ];
      }),
  },
  {
    name: 'attention decode step (one query against a KV cache)',
    run: (ctx) =>
      withBuffers(ctx, async ({ up, zeros, run, read }) => {
        const [T, C, H, t0] = [10, 16, 2, 6];
        const qkv = uniformF32(T * 3 * C, 20);
        const att = new Float32Array(H * T);
        const out = new Float32Array(C);
        attentionForwardCpu(qkv, att, out, 1, T, C, H, t0, 1);
        const bo = zeros(C);
        await run((p) => K.attentionForward(p, { B: 1, T, C, H, t0, nq: 1 }, up(qkv), zeros(H * T), bo));
        return [{ name: 'output', got: await read(bo, C), want: out, tolerance: 1e-5 }];
      }),
  },
  ...[1, 0.7].map(
    (temperature): KernelCase => ({
      name: `fused log-softmax + gather forward and weighted backward (temperature ${temperature})`,
      run: (ctx) =>
        withBuffers(ctx, async ({ up, zeros, run, read }) => {
          const [B, T, V] = [3, 6, 67];
          const logits = uniformF32(B * T * V, 21, -4, 4);
          const tokens = u32(B * T, V, 22);
          const mask = Float32Array.from({ length: B * T }, (_, i) => (i % T < 5 - (i % 2) ? 1 : 0));
          const ref = logprobForwardCpu(logits, tokens, mask, B, T, V, temperature);
          const [bl, bt, lse, lp, ent] = [up(logits), up(tokens), zeros(B * T), zeros(B * T), zeros(B * T)];
          const d = { B, T, V, temperature };
          await run((p) => K.logprobForward(p, d, bl, bt, up(mask), lse, lp, ent));
          const gotLp = await read(lp, B * T);
          const gotEnt = await read(ent, B * T);
          const weights = uniformF32(B * T, 23);
          const dref = logprobBackwardCpu(logits, tokens, weights, ref.lse, B, T, V, temperature);
          const bd = zeros(B * T * V);
          await run((p) => K.logprobBackward(p, d, bl, bt, up(weights), lse, bd));
          return [
            { name: 'log-probs', got: gotLp, want: ref.logp, tolerance: 1e-5 },
            { name: 'entropies', got: gotEnt, want: ref.entropy, tolerance: 1e-5 },
            { name: 'dlogits', got: await read(bd, B * T * V), want: dref, tolerance: 1e-6 },
          ];
        }),
    }),
  ),
  ...[0, 0.5].map(
    (maxGradNorm): KernelCase => ({
      name: `AdamW over a flat buffer with global-norm clipping (maxGradNorm ${maxGradNorm})`,
      run: (ctx) =>
        withBuffers(ctx, async ({ up, zeros, run, read }) => {
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
          const [bp, bm, bv, part] = [up(params), up(m), up(v), zeros(partials + 1)];
          await run((p) => K.adamw(p, { n, decayEnd, partials, ...h, step }, up(grads), part, bp, bm, bv));
          return [
            { name: 'norm', got: await read(part, 1, partials), want: [norm], tolerance: 1e-5 * norm },
            { name: 'm', got: await read(bm, n), want: mr, tolerance: 1e-7 },
            { name: 'v', got: await read(bv, n), want: vr, tolerance: 1e-8 },
            { name: 'params', got: await read(bp, n), want: pr, tolerance: 1e-5 },
          ];
        }),
    }),
  ),
  ...packedCases,
];
