import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { fusedHeadBackwardCpu, fusedHeadForwardCpu } from '../../src/engine/cpu/fusedLogprob';
import { gqaBackwardCpu, gqaForwardCpu } from '../../src/engine/cpu/gqa';
import { matmulModeCpu } from '../../src/engine/cpu/matmul';
import { rmsnormBackwardCpu, rmsnormForwardCpu } from '../../src/engine/cpu/rmsnorm';
import { ropeApplyCpu, ropeTables } from '../../src/engine/cpu/rope';
import { swigluBackwardCpu, swigluForwardCpu } from '../../src/engine/cpu/swiglu';
import { finiteDifference } from '../../src/engine/gradcheck';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { llamaBackwardCpu, llamaForwardCpu } from '../../src/engine/llama/model';
import { type Batch, weightedLoss } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';

// Each Llama-family reference backward against central finite differences of its forward through a random
// linear probe L = Σ r·out (f32 storage: ~1e-3 relative agreement; a wrong formula is off by O(1)).
const TOL = 3e-3;
const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

describe('Llama-family CPU backward vs finite differences', () => {
  it('rmsnorm: dx and dw', () => {
    const [N, C] = [3, 8];
    const x = uniformF32(N * C, 1);
    const w = uniformF32(C, 2);
    const r = uniformF32(N * C, 3);
    const y = new Float32Array(N * C);
    const rstd = new Float32Array(N);
    const loss = () => {
      rmsnormForwardCpu(x, w, y, rstd, N, C, 1e-6);
      return dot(y, r);
    };
    loss();
    const dx = new Float32Array(N * C);
    const dw = new Float32Array(C);
    rmsnormBackwardCpu(x, w, rstd, r, dx, dw, N, C, false);
    expect(finiteDifference(x, dx, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
    expect(finiteDifference(w, dw, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
  });

  it('rope: the backward is the inverse rotation', () => {
    const [N, H, D] = [4, 2, 8];
    const inv = Float64Array.from({ length: D / 2 }, (_, i) => 10000 ** (-(2 * i) / D));
    const { cos, sin } = ropeTables(inv, N);
    const pos = Int32Array.from([0, 1, 3, 2]);
    const x = uniformF32(N * H * D, 4);
    const r = uniformF32(N * H * D, 5);
    const loss = () => {
      const y = new Float32Array(x);
      ropeApplyCpu(y, pos, cos, sin, N, H, D);
      return dot(y, r);
    };
    const dx = new Float32Array(r);
    ropeApplyCpu(dx, pos, cos, sin, N, H, D, true);
    expect(finiteDifference(x, dx, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
  });

  it('swiglu: dgate and dup', () => {
    const n = 16;
    const g = uniformF32(n, 6);
    const u = uniformF32(n, 7);
    const r = uniformF32(n, 8);
    const a = new Float32Array(n);
    const loss = () => {
      swigluForwardCpu(g, u, a);
      return dot(a, r);
    };
    const dg = new Float32Array(n);
    const du = new Float32Array(n);
    swigluBackwardCpu(g, u, r, dg, du);
    expect(finiteDifference(g, dg, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
    expect(finiteDifference(u, du, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
  });

  it('grouped-query attention with a padding mask: dq, dk, dv', () => {
    const s = { B: 2, Tq: 4, Tk: 4, H: 4, KV: 2, D: 4, offset: 0 };
    const q = uniformF32(s.B * s.Tq * s.H * s.D, 9);
    const k = uniformF32(s.B * s.Tk * s.KV * s.D, 10);
    const v = uniformF32(s.B * s.Tk * s.KV * s.D, 11);
    const mask = Float32Array.from([1, 1, 1, 1, 0, 1, 1, 1]);
    const r = uniformF32(q.length, 12);
    const probs = new Float32Array(s.B * s.H * s.Tq * s.Tk);
    const y = new Float32Array(q.length);
    const loss = () => {
      gqaForwardCpu(q, k, v, mask, probs, y, s);
      return dot(y, r);
    };
    loss();
    const dq = new Float32Array(q.length);
    const dk = new Float32Array(k.length);
    const dv = new Float32Array(v.length);
    gqaBackwardCpu(q, k, v, probs, r, dq, dk, dv, s);
    for (const [x, d] of [
      [q, dq],
      [k, dk],
      [v, dv],
    ])
      expect(finiteDifference(x, d, loss, { eps: 1e-2, count: 32 }).maxRelError).toBeLessThan(TOL);
    // the padded key (row 1, position 0) gets no gradient and changes nothing
    for (let d = 0; d < s.KV * s.D; d++) expect(dk[s.Tk * s.KV * s.D + d]).toBe(0);
  });

  it('fused head + log-softmax across vocabulary chunks, at a temperature: dh and dW', () => {
    const [N, C, V] = [5, 6, 37];
    const h = uniformF32(N * C, 13);
    const W = uniformF32(V * C, 14);
    const targets = Int32Array.from([3, 36, 0, 17, -1]);
    const w = uniformF32(N, 15);
    const opts = { temperature: 0.7, chunk: 8, rows: 2 };
    const loss = () => {
      const r = fusedHeadForwardCpu(h, W, targets, N, C, V, matmulModeCpu, opts);
      return weightedLoss(r.logp, w);
    };
    const r = fusedHeadForwardCpu(h, W, targets, N, C, V, matmulModeCpu, opts);
    expect(r.tileFloats).toBe(2 * 8);
    const dh = new Float32Array(N * C);
    const dW = new Float32Array(V * C);
    fusedHeadBackwardCpu(h, W, targets, w, r.lse, dh, dW, N, C, V, matmulModeCpu, opts);
    expect(finiteDifference(h, dh, loss, { eps: 1e-2 }).maxRelError).toBeLessThan(TOL);
    expect(finiteDifference(W, dW, loss, { eps: 1e-2, count: 40 }).maxRelError).toBeLessThan(TOL);
  });

  for (const name of ['llama', 'qwen2', 'qwen3']) {
    it(`the whole ${name} model on a left-padded batch at temperature 0.8`, async () => {
      const folder = await readLlamaFolder(
        await nodeFolderReader(join(resolve(__dirname, '../models'), name)),
      );
      const { config: cfg, layout } = folder;
      const p = new Float32Array(folder.params);
      const T = 6;
      const batch: Batch = {
        tokens: Uint32Array.from([5, 900, 17, 33, 2, 1018, 1017, 1017, 40, 41, 42, 43]),
        mask: Float32Array.from([1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1]),
        batchSize: 2,
        seqLen: T,
        temperature: 0.8,
      };
      const weights = uniformF32(2 * T, 16);
      const grads = new Float32Array(layout.total);
      const opts = { chunk: 100 };
      const acts = llamaForwardCpu(cfg, layout, p, batch, opts);
      llamaBackwardCpu(cfg, layout, p, batch, acts, weights, grads, opts);
      const loss = () => weightedLoss(llamaForwardCpu(cfg, layout, p, batch, opts).logp, weights);
      const nameOf = (i: number) => {
        const t = layout.tensors.find((e) => i >= e.offset && i < e.offset + e.size);
        return t ? `${t.name}[${i - t.offset}]` : String(i);
      };
      const res = finiteDifference(p, grads, loss, { eps: 1e-2, count: 48, name: nameOf });
      expect(res.maxRelError, JSON.stringify(res.worst)).toBeLessThan(1e-2);
    });
  }
});
