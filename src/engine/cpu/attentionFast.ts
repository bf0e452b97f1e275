/**
 * The CPU engine's fast causal multi-head self-attention for whole sequences (queries 0..T−1 against keys
 * 0..T−1): the same contract and layouts as attentionForwardCpu / attentionBackwardCpu (attention.ts, the
 * reference) with t0 = 0, nq = T, computed per (sequence, head) as matmuls through `mm` (the SIMD kernel of
 * matmulFast.ts in the engine) on the head's gathered q, k, v (T, hs):
 *   forward   S = q·kᵀ,  P = softmax_causal(S/√hs) (kept in att),  y = P·v
 *   backward  dP = dy·vᵀ,  dS = P ∘ (dP − rowsum(P ∘ dP)),  dq = dS·k/√hs,  dk = dSᵀ·q/√hs,  dv = Pᵀ·dy
 * Masked entries of P and dS are zero, so the full T×T products equal the causal sums.
 * tests/unit/attentionFast.test.ts holds both to the reference.
 */
import type { MatmulFn } from '../model';

/** Scratch for one head, grown on demand. */
let scratch = new Float32Array(0);
function take(n: number): Float32Array {
  if (scratch.length < n) scratch = new Float32Array(Math.max(n, 2 * scratch.length));
  return scratch;
}

/** Copies head h's q, k or v (part 0, 1, 2) of sequence b, (T, hs), from qkv (B·T, 3C) into dst. */
function gather(
  qkv: Float32Array,
  dst: Float32Array,
  b: number,
  part: number,
  h: number,
  T: number,
  C: number,
  hs: number,
) {
  const C3 = 3 * C;
  for (let t = 0; t < T; t++) {
    const src = (b * T + t) * C3 + part * C + h * hs;
    dst.set(qkv.subarray(src, src + hs), t * hs);
  }
}

/** qkv (B·T, 3C) → att (B, H, T, T) probabilities and out (B·T, C), like attentionForwardCpu(…, 0, T). */
export function attentionForwardFast(
  qkv: Float32Array,
  att: Float32Array,
  out: Float32Array,
  B: number,
  T: number,
  C: number,
  H: number,
  mm: MatmulFn,
): void {
  const hs = C / H;
  const scale = 1 / Math.sqrt(hs);
  const buf = take(4 * T * hs);
  const q = buf.subarray(0, T * hs);
  const k = buf.subarray(T * hs, 2 * T * hs);
  const v = buf.subarray(2 * T * hs, 3 * T * hs);
  const y = buf.subarray(3 * T * hs, 4 * T * hs);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      gather(qkv, q, b, 0, h, T, C, hs);
      gather(qkv, k, b, 1, h, T, C, hs);
      gather(qkv, v, b, 2, h, T, C, hs);
      const P = att.subarray((b * H + h) * T * T, (b * H + h + 1) * T * T);
      mm('nt', q, k, P, T, T, hs);
      for (let t = 0; t < T; t++) {
        const r = t * T;
        let mx = Number.NEGATIVE_INFINITY;
        for (let s = 0; s <= t; s++) mx = Math.max(mx, P[r + s]);
        let sum = 0;
        for (let s = 0; s <= t; s++) {
          const e = Math.exp((P[r + s] - mx) * scale);
          P[r + s] = e;
          sum += e;
        }
        const inv = 1 / sum;
        for (let s = 0; s <= t; s++) P[r + s] *= inv;
        P.fill(0, r + t + 1, r + T);
      }
      mm('nn', P, v, y, T, hs, T);
      for (let t = 0; t < T; t++) out.set(y.subarray(t * hs, (t + 1) * hs), (b * T + t) * C + h * hs);
    }
}

/** dout (B·T, C) → dqkv (B·T, 3C) (overwritten), like attentionBackwardCpu. */
export function attentionBackwardFast(
  qkv: Float32Array,
  att: Float32Array,
  dout: Float32Array,
  dqkv: Float32Array,
  B: number,
  T: number,
  C: number,
  H: number,
  mm: MatmulFn,
): void {
  const hs = C / H;
  const C3 = 3 * C;
  const scale = 1 / Math.sqrt(hs);
  const buf = take(7 * T * hs + T * T);
  const q = buf.subarray(0, T * hs);
  const k = buf.subarray(T * hs, 2 * T * hs);
  const v = buf.subarray(2 * T * hs, 3 * T * hs);
  const dy = buf.subarray(3 * T * hs, 4 * T * hs);
  const dq = buf.subarray(4 * T * hs, 5 * T * hs);
  const dk = buf.subarray(5 * T * hs, 6 * T * hs);
  const dv = buf.subarray(6 * T * hs, 7 * T * hs);
  const dS = buf.subarray(7 * T * hs, 7 * T * hs + T * T);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      gather(qkv, q, b, 0, h, T, C, hs);
      gather(qkv, k, b, 1, h, T, C, hs);
      gather(qkv, v, b, 2, h, T, C, hs);
      for (let t = 0; t < T; t++) {
        const src = (b * T + t) * C + h * hs;
        dy.set(dout.subarray(src, src + hs), t * hs);
      }
      const P = att.subarray((b * H + h) * T * T, (b * H + h + 1) * T * T);
      mm('nt', dy, v, dS, T, T, hs);
      for (let t = 0; t < T; t++) {
        const r = t * T;
        let dot = 0;
        for (let s = 0; s <= t; s++) dot += P[r + s] * dS[r + s];
        for (let s = 0; s <= t; s++) dS[r + s] = scale * P[r + s] * (dS[r + s] - dot);
        dS.fill(0, r + t + 1, r + T);
      }
      mm('nn', dS, k, dq, T, hs, T);
      mm('tn', dS, q, dk, T, hs, T);
      mm('tn', P, dy, dv, T, hs, T);
      for (let t = 0; t < T; t++) {
        const o = (b * T + t) * C3 + h * hs;
        dqkv.set(dq.subarray(t * hs, (t + 1) * hs), o);
        dqkv.set(dk.subarray(t * hs, (t + 1) * hs), o + C);
        dqkv.set(dv.subarray(t * hs, (t + 1) * hs), o + 2 * C);
      }
    }
}
