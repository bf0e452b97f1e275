/**
 * The output head and log-softmax fused and chunked (the "fused linear cross-entropy" approach): log-probs of
 * the target ids, the entropies, and the backward of L = −Σ w·logp, from the final hidden rows h (N, C) and the
 * head W (V, C) WITHOUT the (N·V) logits. Rows go in blocks of R, the vocabulary in chunks of Vc; one R×Vc tile
 * of logits exists at a time, and an online log-sum-exp (running max m, Σe^(z−m), Σe^(z−m)·z) carries each
 * row across chunks. The backward recomputes each tile from the saved log-sum-exp and turns it straight into
 * dh and dW. Extra memory: the tile (R·Vc f32, i.e. Vc·4 bytes per row of the block) plus O(N) statistics.
 * Logits are divided by the temperature τ before the softmax, as everywhere in the engine.
 */
import type { MatmulFn } from '../model';

export interface FusedHeadOptions {
  temperature?: number;
  /** vocabulary chunk Vc (default 4096) */
  chunk?: number;
  /** rows per block R (default 32) */
  rows?: number;
  /** full-distribution output: the top-k ids and log-probs for these row indices */
  topk?: { rows: number[]; k: number };
}

export interface FusedHeadResult {
  logp: Float32Array;
  entropy: Float32Array;
  /** log-sum-exp of z/τ per row (the backward's input) */
  lse: Float32Array;
  /** per requested row: ids and log-probs, best first */
  topk?: { row: number; ids: number[]; logprobs: number[] }[];
  /** floats of the largest logits tile held (the peak extra memory is 4× this in bytes) */
  tileFloats: number;
}

/** Bytes of logits memory per token: the materialised head (V·4) against the fused one (Vc·4). */
export function headBytesPerToken(V: number, chunk = 4096): { materialised: number; fused: number } {
  return { materialised: V * 4, fused: Math.min(V, chunk) * 4 };
}

export function fusedHeadForwardCpu(
  h: Float32Array,
  W: Float32Array,
  targets: Int32Array,
  N: number,
  C: number,
  V: number,
  mm: MatmulFn,
  opts: FusedHeadOptions = {},
): FusedHeadResult {
  const tau = opts.temperature ?? 1;
  const Vc = Math.min(opts.chunk ?? 4096, V);
  const R = Math.min(opts.rows ?? 32, Math.max(N, 1));
  const tile = new Float32Array(R * Vc);
  const logp = new Float32Array(N);
  const entropy = new Float32Array(N);
  const lse = new Float32Array(N);
  const mx = new Float64Array(R);
  const se = new Float64Array(R);
  const sz = new Float64Array(R);
  const tgt = new Float64Array(R);
  const want = new Map<number, { k: number; ids: number[]; vals: number[] }>();
  for (const r of opts.topk?.rows ?? []) {
    if (!Number.isInteger(r) || r < 0 || r >= N) throw new Error(`topk: row ${r} is outside [0, ${N})`);
    want.set(r, { k: opts.topk?.k ?? 0, ids: [], vals: [] });
  }
  for (let r0 = 0; r0 < N; r0 += R) {
    const nr = Math.min(R, N - r0);
    mx.fill(Number.NEGATIVE_INFINITY);
    se.fill(0);
    sz.fill(0);
    tgt.fill(0);
    for (let v0 = 0; v0 < V; v0 += Vc) {
      const nv = Math.min(Vc, V - v0);
      mm('nt', h.subarray(r0 * C, (r0 + nr) * C), W.subarray(v0 * C, (v0 + nv) * C), tile, nr, nv, C);
      for (let r = 0; r < nr; r++) {
        const o = r * nv;
        let m = mx[r];
        for (let j = 0; j < nv; j++) {
          const z = tile[o + j] / tau;
          if (z > m) m = z;
        }
        const rescale = mx[r] === Number.NEGATIVE_INFINITY ? 0 : Math.exp(mx[r] - m);
        let s = se[r] * rescale;
        let t = sz[r] * rescale;
        for (let j = 0; j < nv; j++) {
          const z = tile[o + j] / tau;
          const e = Math.exp(z - m);
          s += e;
          t += e * z;
        }
        mx[r] = m;
        se[r] = s;
        sz[r] = t;
        const target = targets[r0 + r];
        if (target >= v0 && target < v0 + nv) tgt[r] = tile[o + target - v0] / tau;
        const w = want.get(r0 + r);
        if (w) {
          // keep the k largest logits seen so far (ids ascending within equal values)
          for (let j = 0; j < nv; j++) {
            const z = tile[o + j] / tau;
            if (w.vals.length < w.k || z > w.vals[w.vals.length - 1]) {
              let at = w.vals.length;
              while (at > 0 && w.vals[at - 1] < z) at--;
              w.vals.splice(at, 0, z);
              w.ids.splice(at, 0, v0 + j);
              if (w.vals.length > w.k) {
                w.vals.pop();
                w.ids.pop();
              }
            }
          }
        }
      }
    }
    for (let r = 0; r < nr; r++) {
      const l = mx[r] + Math.log(se[r]);
      lse[r0 + r] = l;
      entropy[r0 + r] = l - sz[r] / se[r];
      logp[r0 + r] = targets[r0 + r] >= 0 ? tgt[r] - l : 0;
    }
  }
  const res: FusedHeadResult = { logp, entropy, lse, tileFloats: R * Vc };
  if (opts.topk)
    res.topk = [...want.entries()].map(([row, w]) => ({
      row,
      ids: w.ids,
      logprobs: w.vals.map((z) => z - lse[row]),
    }));
  return res;
}

/**
 * Backward of L = −Σ_n weights[n]·logp[n]: ∂L/∂z_v = −w·(δ_v,target − p_v)/τ per row, applied tile by tile:
 * dh (N, C) is overwritten, dW (V, C) accumulated (skipped when null: a frozen head).
 */
export function fusedHeadBackwardCpu(
  h: Float32Array,
  W: Float32Array,
  targets: Int32Array,
  weights: Float32Array,
  lse: Float32Array,
  dh: Float32Array,
  dW: Float32Array | null,
  N: number,
  C: number,
  V: number,
  mm: MatmulFn,
  opts: { temperature?: number; chunk?: number; rows?: number } = {},
): void {
  const tau = opts.temperature ?? 1;
  const Vc = Math.min(opts.chunk ?? 4096, V);
  const R = Math.min(opts.rows ?? 32, Math.max(N, 1));
  const tile = new Float32Array(R * Vc);
  dh.fill(0, 0, N * C);
  for (let r0 = 0; r0 < N; r0 += R) {
    const nr = Math.min(R, N - r0);
    const hb = h.subarray(r0 * C, (r0 + nr) * C);
    const dhb = dh.subarray(r0 * C, (r0 + nr) * C);
    for (let v0 = 0; v0 < V; v0 += Vc) {
      const nv = Math.min(Vc, V - v0);
      const Wc = W.subarray(v0 * C, (v0 + nv) * C);
      mm('nt', hb, Wc, tile, nr, nv, C);
      for (let r = 0; r < nr; r++) {
        const o = r * nv;
        const target = targets[r0 + r];
        // a row without a target has logp 0 and contributes nothing
        const w = target >= 0 ? weights[r0 + r] : 0;
        const l = lse[r0 + r];
        for (let j = 0; j < nv; j++) {
          const p = Math.exp(tile[o + j] / tau - l);
          tile[o + j] = (w * p) / tau;
        }
        if (target >= v0 && target < v0 + nv) tile[o + target - v0] -= w / tau;
      }
      mm('nn', tile, Wc, dhb, nr, C, nv, { accumulate: true });
      if (dW) mm('tn', tile, hb, dW.subarray(v0 * C, (v0 + nv) * C), nv, C, nr, { accumulate: true });
    }
  }
}
