/** Reference for shaders/adamw.wgsl: AdamW (Loshchilov & Hutter 2019) with global-norm clipping. */
export interface AdamWHyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Clip the global gradient norm to this; ≤ 0 disables clipping. */
  maxGradNorm: number;
}

/**
 * One step (step counts from 1); elements below decayEnd get weight decay. Returns the pre-clip norm (`norm`:
 * the gradient's global norm when the caller has it already, else it is computed here).
 */
export function adamwStepCpu(
  params: Float32Array,
  grads: Float32Array,
  m: Float32Array,
  v: Float32Array,
  step: number,
  decayEnd: number,
  h: AdamWHyper,
  norm: number = gradNormCpu(grads),
): number {
  const scale = h.maxGradNorm > 0 ? Math.min(1, h.maxGradNorm / (norm + 1e-6)) : 1;
  const { beta1, beta2, lr, eps } = h;
  const bc1 = 1 - beta1 ** step;
  const bc2 = 1 - beta2 ** step;
  const c1 = 1 - beta1;
  const c2 = 1 - beta2;
  // two ranges, with and without decay, the same arithmetic per element
  const end = Math.min(decayEnd, params.length);
  for (const [lo, hi, wd] of [
    [0, end, h.weightDecay],
    [end, params.length, 0],
  ]) {
    for (let i = lo; i < hi; i++) {
      const g = grads[i] * scale;
      const mi = beta1 * m[i] + c1 * g;
      const vi = beta2 * v[i] + c2 * g * g;
      m[i] = mi;
      v[i] = vi;
      const p = params[i];
      params[i] = p - lr * (Math.fround(mi) / bc1 / (Math.sqrt(Math.fround(vi) / bc2) + eps) + wd * p);
    }
  }
  return norm;
}

/** √Σ g² (summed in doubles). */
export function gradNormCpu(grads: Float32Array): number {
  let sq = 0;
  for (let i = 0; i < grads.length; i++) sq += grads[i] * grads[i];
  return Math.sqrt(sq);
}

/** What a CPU engine's optimizer owns: the flat parameters, their gradient, the two moments and the step count. */
export interface CpuOptimizerSlots {
  params: Float32Array;
  grads: Float32Array;
  m: Float32Array;
  v: Float32Array;
  step: number;
}

/**
 * One optimizer step of a CPU engine: the gradient's global norm, AdamW (with clipping) unless the norm is not
 * finite (then the update is skipped), and the gradient zeroed either way. Advances `s.step` when it updates.
 */
export function cpuOptimizerStep(
  s: CpuOptimizerSlots,
  decayEnd: number,
  hyper: AdamWHyper,
): { gradNorm: number; step: number; skipped: boolean } {
  const norm = gradNormCpu(s.grads);
  if (!Number.isFinite(norm)) {
    s.grads.fill(0);
    return { gradNorm: norm, step: s.step, skipped: true };
  }
  s.step++;
  adamwStepCpu(s.params, s.grads, s.m, s.v, s.step, decayEnd, hyper, norm);
  s.grads.fill(0);
  return { gradNorm: norm, step: s.step, skipped: false };
}

/** A checkpoint's optimizer state checked against a layout of `n` values, copied. */
export function checkedOptimizerState(
  state: { m: Float32Array; v: Float32Array; step: number },
  n: number,
): { m: Float32Array; v: Float32Array; step: number } {
  if (state.m.length !== n || state.v.length !== n)
    throw new Error(
      `setOptimizerState: moments have ${state.m.length} and ${state.v.length} values, the layout needs ${n}`,
    );
  if (!Number.isInteger(state.step) || state.step < 0)
    throw new Error(`setOptimizerState: step must be a non-negative integer, got ${state.step}`);
  return { m: new Float32Array(state.m), v: new Float32Array(state.v), step: state.step };
}
