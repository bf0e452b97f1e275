import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { attentionBackwardCpu, attentionForwardCpu } from '../../src/engine/cpu/attention';
import { embeddingBackwardCpu, embeddingForwardCpu } from '../../src/engine/cpu/embedding';
import { geluBackwardCpu, geluForwardCpu } from '../../src/engine/cpu/gelu';
import { layernormBackwardCpu, layernormForwardCpu } from '../../src/engine/cpu/layernorm';
import { logprobBackwardCpu, logprobForwardCpu } from '../../src/engine/cpu/logprob';
import { colsumCpu, type MatmulMode, matmulModeCpu } from '../../src/engine/cpu/matmul';
import { finiteDifference, modelGradCheck } from '../../src/engine/gradcheck';
import { initParams, layoutOf, resolveConfig } from '../../src/engine/model';

// Each CPU reference backward against central finite differences of its forward, through a random linear
// probe L = Σ r·out. f32 storage limits agreement to ~1e-3 relative; a wrong formula is off by O(1).
const TOL = 2e-3;
const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

describe('CPU reference backward vs finite differences', () => {
  for (const mode of ['nn', 'nt', 'tn'] as MatmulMode[]) {
    it(`matmul ${mode}: dA and dB are the transposed products`, () => {
      const [M, N, K] = [4, 5, 3];
      const a = uniformF32(M * K, 1);
      const b = uniformF32(K * N, 2);
      const bias = uniformF32(N, 3);
      const r = uniformF32(M * N, 4);
      const out = new Float32Array(M * N);
      const loss = () => {
        matmulModeCpu(mode, a, b, out, M, N, K, { bias });
        return dot(out, r);
      };
      // Gradients from the transposed forms the backward pass uses.
      const da = new Float32Array(M * K);
      const db = new Float32Array(K * N);
      const dbias = new Float32Array(N);
      if (mode === 'nn') {
        matmulModeCpu('nt', r, b, da, M, K, N);
        matmulModeCpu('tn', a, r, db, K, N, M);
      } else if (mode === 'nt') {
        matmulModeCpu('nn', r, b, da, M, K, N); // b stored (N, K)
        matmulModeCpu('tn', r, a, db, N, K, M); // db stored (N, K)
      } else {
        matmulModeCpu('nt', b, r, da, K, M, N); // a stored (K, M): da = b · rᵀ
        matmulModeCpu('nn', a, r, db, K, N, M);
      }
      colsumCpu(r, M, N, dbias, false);
      expect(finiteDifference(a, da, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
      expect(finiteDifference(b, db, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
      expect(finiteDifference(bias, dbias, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
    });
  }

  it('embedding', () => {
    const [T, C, V] = [4, 3, 5];
    const tokens = Uint32Array.from([1, 3, 1, 4, 0, 1, 2, 2]);
    const wte = uniformF32(V * C, 5);
    const wpe = uniformF32(T * C, 6);
    const r = uniformF32(tokens.length * C, 7);
    const out = new Float32Array(tokens.length * C);
    const loss = () => {
      embeddingForwardCpu(tokens, wte, wpe, out, T, C);
      return dot(out, r);
    };
    const dwte = new Float32Array(V * C);
    const dwpe = new Float32Array(T * C);
    embeddingBackwardCpu(tokens, r, dwte, dwpe, T, C);
    expect(finiteDifference(wte, dwte, loss, { count: V * C }).maxRelError).toBeLessThan(TOL);
    expect(finiteDifference(wpe, dwpe, loss, { count: T * C }).maxRelError).toBeLessThan(TOL);
  });

  it('layernorm', () => {
    const [N, C] = [3, 8];
    const x = uniformF32(N * C, 8, -2, 2);
    const w = uniformF32(C, 9, 0.5, 1.5);
    const b = uniformF32(C, 10);
    const r = uniformF32(N * C, 11);
    const y = new Float32Array(N * C);
    const stats = new Float32Array(2 * N);
    const loss = () => {
      layernormForwardCpu(x, w, b, y, stats, N, C);
      return dot(y, r);
    };
    loss();
    const dx = new Float32Array(N * C);
    const dw = new Float32Array(C);
    const db = new Float32Array(C);
    layernormBackwardCpu(x, w, stats, r, dx, dw, db, N, C);
    expect(finiteDifference(x, dx, loss, { eps: 1e-2, count: N * C }).maxRelError).toBeLessThan(TOL);
    expect(finiteDifference(w, dw, loss, { count: C }).maxRelError).toBeLessThan(TOL);
    expect(finiteDifference(b, db, loss, { count: C }).maxRelError).toBeLessThan(TOL);
  });

  it('gelu', () => {
    const x = uniformF32(40, 12, -4, 4);
    const r = uniformF32(40, 13);
    const y = new Float32Array(40);
    const loss = () => {
      geluForwardCpu(x, y);
      return dot(y, r);
    };
    const dx = new Float32Array(40);
    geluBackwardCpu(x, r, dx);
    expect(finiteDifference(x, dx, loss, { eps: 1e-3, count: 40 }).maxRelError).toBeLessThan(TOL);
  });

  it('causal attention', () => {
    const [B, T, C, H] = [2, 4, 6, 2];
    const qkv = uniformF32(B * T * 3 * C, 14);
    const r = uniformF32(B * T * C, 15);
    const att = new Float32Array(B * H * T * T);
    const out = new Float32Array(B * T * C);
    const loss = () => {
      attentionForwardCpu(qkv, att, out, B, T, C, H);
      return dot(out, r);
    };
    loss();
    const dqkv = new Float32Array(qkv.length);
    attentionBackwardCpu(qkv, att, r, dqkv, B, T, C, H);
    expect(finiteDifference(qkv, dqkv, loss, { count: qkv.length }).maxRelError).toBeLessThan(TOL);
    // Causality: the output at t = 0 ignores every later key and value.
    const before = out.slice(0, C);
    qkv[(0 * T + 3) * 3 * C + C] += 5;
    loss();
    expect(Array.from(out.slice(0, C))).toEqual(Array.from(before));
  });

  it('fused log-softmax + gather, weighted', () => {
    const [B, T, V] = [2, 4, 7];
    const logits = uniformF32(B * T * V, 16, -3, 3);
    const tokens = Uint32Array.from([0, 3, 6, 2, 5, 1, 1, 4]);
    const mask = new Float32Array(B * T).fill(1);
    const weights = uniformF32(B * T, 17);
    for (const temperature of [1, 0.6]) {
      const loss = () => -dot(logprobForwardCpu(logits, tokens, mask, B, T, V, temperature).logp, weights);
      const { lse } = logprobForwardCpu(logits, tokens, mask, B, T, V, temperature);
      const d = logprobBackwardCpu(logits, tokens, weights, lse, B, T, V, temperature);
      expect(finiteDifference(logits, d, loss, { eps: 1e-2, count: logits.length }).maxRelError).toBeLessThan(
        TOL,
      );
    }
  });

  it('entropy equals −Σ p log p and log-probs normalise', () => {
    const V = 5;
    const logits = Float32Array.from([0.1, -1, 2, 0.5, 0, 0, 0, 0, 0, 0]);
    const r = logprobForwardCpu(logits, Uint32Array.from([0, 2]), Float32Array.from([1, 1]), 1, 2, V);
    const z = Array.from(logits.slice(0, V));
    const s = z.reduce((a, b) => a + Math.exp(b), 0);
    const p = z.map((v) => Math.exp(v) / s);
    expect(r.logp[1]).toBeCloseTo(Math.log(p[2]), 6);
    expect(r.entropy[1]).toBeCloseTo(-p.reduce((a, q) => a + q * Math.log(q), 0), 6);
  });

  it('whole model: gradient of −Σ w·logp', () => {
    const cfg = resolveConfig({ vocabSize: 23, contextLength: 8, layers: 2, width: 8, heads: 2, seed: 3 });
    const layout = layoutOf(cfg);
    const params = initParams(cfg, layout);
    // Larger weights than the init so that every block contributes visibly.
    for (let i = 0; i < params.length; i++) params[i] += 0.2 * Math.sin(i * 1.7);
    const T = 6;
    const tokens = Uint32Array.from([1, 5, 9, 22, 3, 3, 7, 7, 0, 12, 0, 0]);
    const mask = Float32Array.from([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
    const weights = Float32Array.from([0, 1, 0.5, -0.3, 1, 2, 0, 0.7, 1, -1, 0, 0]);
    const r = modelGradCheck(cfg, layout, params, { tokens, mask, batchSize: 2, seqLen: T }, weights, {
      eps: 1e-2,
      count: 60,
    });
    expect(r.checked).toBe(60);
    // eps = 1e-2 leaves an O(eps²) curvature term of ~0.5% on the largest entries; a wrong formula is O(1).
    expect(r.maxRelError, JSON.stringify(r.worst)).toBeLessThan(1e-2);
  });
});

describe('finiteDifference', () => {
  it('fails on NaN gradients and NaN losses instead of ignoring them', () => {
    const x = Float32Array.of(0.5, -1, 2);
    const good = finiteDifference(
      x,
      Float32Array.from(x, (v) => 2 * v),
      () => x.reduce((a, v) => a + v * v, 0),
    );
    expect(good.maxRelError).toBeLessThan(1e-3);
    const nanGrad = finiteDifference(x, new Float32Array(3).fill(Number.NaN), () =>
      x.reduce((a, v) => a + v * v, 0),
    );
    expect(nanGrad.maxRelError).toBe(Number.POSITIVE_INFINITY);
    expect(nanGrad.worst).not.toBeNull();
    const nanLoss = finiteDifference(
      x,
      Float32Array.from(x, (v) => 2 * v),
      () => Number.NaN,
    );
    expect(nanLoss.maxRelError).toBe(Number.POSITIVE_INFINITY);
  });
});
