/**
 * The CPU engine's fast grouped-query attention: the same contract and layouts as gqaForwardCpu /
 * gqaBackwardCpu (gqa.ts, the reference), computed per (sequence, query head) on the SIMD module (simd.ts)
 * with q, k, v and dy copied into its memory once and each head read there in place (row strides H·D and
 * KV·D):
 *   forward   S = q_h·k_gᵀ (gemm_nt),  P = softmax over the causal, unmasked keys (f64, as the reference),
 *             y_h = P·v_g (gemm)
 *   backward  dP = dy_h·v_gᵀ (gemm_nt),  dS = P ∘ (dP − Σ_j P·dP)/√D,  dq_h = dS·k_g,  dk_g += dSᵀ·q_h,
 *             dv_g += Pᵀ·dy_h (gemm)
 * Entries of P and dS outside the causal, unmasked keys are zero, so the full Tq×Tk products equal the
 * reference's sums (within f32 rounding: the products sum in f32). Where WebAssembly SIMD is missing, or the
 * head size is not a multiple of 8 (the gemm panel width), the reference runs.
 * tests/unit/gqaFast.test.ts holds both to the reference.
 */
import { type GqaKernels, gqaBackwardCpu, gqaForwardCpu } from './gqa';
import { heap, simdKernels } from './simd';

/** Like gqaForwardCpu: q (B·Tq, H·D), k and v (B·Tk, KV·D) → probs (B, H, Tq, Tk) and y like q. */
export const gqaForwardFast: typeof gqaForwardCpu = (q, k, v, keyMask, probs, y, s) => {
  const g = simdKernels();
  const { B, Tq, Tk, H, KV, D, offset } = s;
  if (!g || D % 8 !== 0) {
    gqaForwardCpu(q, k, v, keyMask, probs, y, s);
    return;
  }
  const group = H / KV;
  const scale = 1 / Math.sqrt(D);
  const nq = B * Tq * H * D;
  const nk = B * Tk * KV * D;
  const qOff = 0;
  const kOff = qOff + nq;
  const vOff = kOff + nk;
  const sOff = vOff + nk;
  const yOff = sOff + Tq * Tk;
  const f = heap(g, yOff + Tq * D);
  f.set(q.subarray(0, nq), qOff);
  f.set(k.subarray(0, nk), kOff);
  f.set(v.subarray(0, nk), vOff);
  const row = new Float64Array(Tk);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      const kv = Math.floor(h / group);
      const qh = qOff + b * Tq * H * D + h * D;
      const kg = kOff + b * Tk * KV * D + kv * D;
      const vg = vOff + b * Tk * KV * D + kv * D;
      g.gemm_nt(Tq, Tk, D, 4 * qh, 4 * H * D, 4 * kg, 4 * KV * D, 4 * sOff, 4 * Tk);
      for (let i = 0; i < Tq; i++) {
        const so = sOff + i * Tk;
        const po = ((b * H + h) * Tq + i) * Tk;
        const last = Math.min(offset + i, Tk - 1);
        let mx = Number.NEGATIVE_INFINITY;
        for (let j = 0; j <= last; j++) {
          if (keyMask && keyMask[b * Tk + j] === 0) {
            row[j] = Number.NEGATIVE_INFINITY;
            continue;
          }
          row[j] = f[so + j] * scale;
          if (row[j] > mx) mx = row[j];
        }
        if (mx === Number.NEGATIVE_INFINITY) {
          probs.fill(0, po, po + Tk);
          f.fill(0, so, so + Tk);
          continue;
        }
        let sum = 0;
        for (let j = 0; j <= last; j++) {
          row[j] = row[j] === Number.NEGATIVE_INFINITY ? 0 : Math.exp(row[j] - mx);
          sum += row[j];
        }
        for (let j = 0; j <= last; j++) probs[po + j] = row[j] / sum;
        probs.fill(0, po + last + 1, po + Tk);
        f.set(probs.subarray(po, po + Tk), so);
      }
      g.gemm(Tq, D / 8, Tk, 4 * sOff, 4 * Tk, 4, 4 * vg, 32, 4 * KV * D, 4 * yOff, Tq > D ? 1 : 0);
      for (let i = 0; i < Tq; i++) {
        const yo = ((b * Tq + i) * H + h) * D;
        y.set(f.subarray(yOff + i * D, yOff + (i + 1) * D), yo);
      }
    }
};

/** Like gqaBackwardCpu: from dy, dq (overwritten), dk and dv (overwritten; kv heads sum their group). */
export const gqaBackwardFast: typeof gqaBackwardCpu = (q, k, v, probs, dy, dq, dk, dv, s) => {
  const g = simdKernels();
  const { B, Tq, Tk, H, KV, D, offset } = s;
  if (!g || D % 8 !== 0) {
    gqaBackwardCpu(q, k, v, probs, dy, dq, dk, dv, s);
    return;
  }
  const group = H / KV;
  const scale = 1 / Math.sqrt(D);
  const nq = B * Tq * H * D;
  const nk = B * Tk * KV * D;
  const qOff = 0;
  const dyOff = qOff + nq;
  const kOff = dyOff + nq;
  const vOff = kOff + nk;
  const sOff = vOff + nk;
  const pOff = sOff + Tq * Tk;
  const oOff = pOff + Tq * Tk;
  const f = heap(g, oOff + Math.max(Tq, Tk) * D);
  f.set(q.subarray(0, nq), qOff);
  f.set(dy.subarray(0, nq), dyOff);
  f.set(k.subarray(0, nk), kOff);
  f.set(v.subarray(0, nk), vOff);
  dq.fill(0, 0, nq);
  dk.fill(0, 0, nk);
  dv.fill(0, 0, nk);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      const kv = Math.floor(h / group);
      const qh = qOff + b * Tq * H * D + h * D;
      const dyh = dyOff + b * Tq * H * D + h * D;
      const kg = kOff + b * Tk * KV * D + kv * D;
      const vg = vOff + b * Tk * KV * D + kv * D;
      // dP = dy_h · v_gᵀ, then dS in place of dP, P beside it
      g.gemm_nt(Tq, Tk, D, 4 * dyh, 4 * H * D, 4 * vg, 4 * KV * D, 4 * sOff, 4 * Tk);
      for (let i = 0; i < Tq; i++) {
        const so = sOff + i * Tk;
        const po = ((b * H + h) * Tq + i) * Tk;
        const last = Math.min(offset + i, Tk - 1);
        let dot = 0;
        for (let j = 0; j <= last; j++) dot += probs[po + j] * f[so + j];
        for (let j = 0; j <= last; j++) {
          const p = probs[po + j];
          f[so + j] = p === 0 ? 0 : p * (f[so + j] - dot) * scale;
        }
        f.fill(0, so + last + 1, so + Tk);
        f.set(probs.subarray(po, po + Tk), pOff + i * Tk);
      }
      // dq_h = dS · k_g (Tq, D)
      g.gemm(Tq, D / 8, Tk, 4 * sOff, 4 * Tk, 4, 4 * kg, 32, 4 * KV * D, 4 * oOff, Tq > D ? 1 : 0);
      for (let i = 0; i < Tq; i++)
        dq.set(f.subarray(oOff + i * D, oOff + (i + 1) * D), ((b * Tq + i) * H + h) * D);
      // dk_g += dSᵀ · q_h and dv_g += Pᵀ · dy_h (Tk, D): the (Tq, Tk) operand read transposed
      const ko = b * Tk * KV * D + kv * D;
      g.gemm(Tk, D / 8, Tq, 4 * sOff, 4, 4 * Tk, 4 * qh, 32, 4 * H * D, 4 * oOff, Tk > D ? 1 : 0);
      addRows(f, oOff, dk, ko, Tk, D, KV * D);
      g.gemm(Tk, D / 8, Tq, 4 * pOff, 4, 4 * Tk, 4 * dyh, 32, 4 * H * D, 4 * oOff, Tk > D ? 1 : 0);
      addRows(f, oOff, dv, ko, Tk, D, KV * D);
    }
};

/** out[o + r·ld + d] += f[src + r·D + d] for r < R, d < D. */
function addRows(
  f: Float32Array,
  src: number,
  out: Float32Array,
  o: number,
  R: number,
  D: number,
  ld: number,
) {
  for (let r = 0; r < R; r++) {
    const a = src + r * D;
    const c = o + r * ld;
    for (let d = 0; d < D; d++) out[c + d] += f[a + d];
  }
}

export const gqaFast: GqaKernels = { forward: gqaForwardFast, backward: gqaBackwardFast };
