/**
 * Causal grouped-query attention (Ainslie et al. 2023) with a key padding mask, the Llama family's attention:
 * H query heads share KV key/value heads (query head h reads kv head ⌊h / (H/KV)⌋), scores scaled by 1/√D.
 * Query i of row b sits at key index `offset + i` and attends keys j ≤ offset + i whose keyMask is 1; a query
 * with no key to attend (a left-padding row) outputs zeros. Layouts, row-major: q (B·Tq, H·D), k and v
 * (B·Tk, KV·D), y like q, probabilities (B, H, Tq, Tk) kept for the backward.
 */

export interface GqaShape {
  B: number;
  Tq: number;
  Tk: number;
  H: number;
  KV: number;
  D: number;
  /** key index of query 0 (0 for a full sequence; the cache length when decoding) */
  offset: number;
}

export function gqaForwardCpu(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  keyMask: Float32Array | null,
  probs: Float32Array,
  y: Float32Array,
  s: GqaShape,
): void {
  const { B, Tq, Tk, H, KV, D, offset } = s;
  const group = H / KV;
  const scale = 1 / Math.sqrt(D);
  const row = new Float64Array(Tk);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < Tq; i++) {
        const qo = ((b * Tq + i) * H + h) * D;
        const last = Math.min(offset + i, Tk - 1);
        let mx = Number.NEGATIVE_INFINITY;
        for (let j = 0; j <= last; j++) {
          if (keyMask && keyMask[b * Tk + j] === 0) {
            row[j] = Number.NEGATIVE_INFINITY;
            continue;
          }
          const ko = ((b * Tk + j) * KV + g) * D;
          let dot = 0;
          for (let d = 0; d < D; d++) dot += q[qo + d] * k[ko + d];
          row[j] = dot * scale;
          if (row[j] > mx) mx = row[j];
        }
        const po = ((b * H + h) * Tq + i) * Tk;
        const yo = qo;
        for (let d = 0; d < D; d++) y[yo + d] = 0;
        if (mx === Number.NEGATIVE_INFINITY) {
          for (let j = 0; j < Tk; j++) probs[po + j] = 0;
          continue;
        }
        let sum = 0;
        for (let j = 0; j <= last; j++) {
          row[j] = row[j] === Number.NEGATIVE_INFINITY ? 0 : Math.exp(row[j] - mx);
          sum += row[j];
        }
        for (let j = 0; j < Tk; j++) probs[po + j] = j <= last ? row[j] / sum : 0;
        for (let j = 0; j <= last; j++) {
          const p = probs[po + j];
          if (p === 0) continue;
          const vo = ((b * Tk + j) * KV + g) * D;
          for (let d = 0; d < D; d++) y[yo + d] += p * v[vo + d];
        }
      }
    }
}

/**
 * Backward from dy: dP = dy·vᵀ, dS = P ⊙ (dP − Σ_j P·dP), dq = dS·k/√D, dk += dSᵀ·q/√D, dv += Pᵀ·dy
 * (kv heads sum over their query group). dq is overwritten, dk and dv are overwritten too.
 */
export function gqaBackwardCpu(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  probs: Float32Array,
  dy: Float32Array,
  dq: Float32Array,
  dk: Float32Array,
  dv: Float32Array,
  s: GqaShape,
): void {
  const { B, Tq, Tk, H, KV, D, offset } = s;
  const group = H / KV;
  const scale = 1 / Math.sqrt(D);
  dq.fill(0);
  dk.fill(0);
  dv.fill(0);
  const dp = new Float64Array(Tk);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < Tq; i++) {
        const qo = ((b * Tq + i) * H + h) * D;
        const po = ((b * H + h) * Tq + i) * Tk;
        const last = Math.min(offset + i, Tk - 1);
        let dot = 0;
        for (let j = 0; j <= last; j++) {
          const p = probs[po + j];
          if (p === 0) {
            dp[j] = 0;
            continue;
          }
          const vo = ((b * Tk + j) * KV + g) * D;
          let acc = 0;
          for (let d = 0; d < D; d++) {
            acc += dy[qo + d] * v[vo + d];
            dv[vo + d] += p * dy[qo + d];
          }
          dp[j] = acc;
          dot += p * acc;
        }
        for (let j = 0; j <= last; j++) {
          const p = probs[po + j];
          if (p === 0) continue;
          const ds = p * (dp[j] - dot) * scale;
          const ko = ((b * Tk + j) * KV + g) * D;
          for (let d = 0; d < D; d++) {
            dq[qo + d] += ds * k[ko + d];
            dk[ko + d] += ds * q[qo + d];
          }
        }
      }
    }
}

/** The forward and backward an engine runs: the reference loops here, or gqaFast.ts's SIMD ones. */
export interface GqaKernels {
  forward: typeof gqaForwardCpu;
  backward: typeof gqaBackwardCpu;
}

export const gqaReference: GqaKernels = { forward: gqaForwardCpu, backward: gqaBackwardCpu };
