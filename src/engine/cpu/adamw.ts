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

/** One step (step counts from 1); elements below decayEnd get weight decay. Returns the pre-clip norm. */
export function adamwStepCpu(
  params: Float32Array,
  grads: Float32Array,
  m: Float32Array,
  v: Float32Array,
  step: number,
  decayEnd: number,
  h: AdamWHyper,
): number {
  let sq = 0;
  for (let i = 0; i < grads.length; i++) sq += grads[i] * grads[i];
  const norm = Math.sqrt(sq);
  const scale = h.maxGradNorm > 0 ? Math.min(1, h.maxGradNorm / (norm + 1e-6)) : 1;
  const bc1 = 1 - h.beta1 ** step;
  const bc2 = 1 - h.beta2 ** step;
  for (let i = 0; i < params.length; i++) {
    const g = grads[i] * scale;
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
    const mhat = m[i] / bc1;
    const vhat = v[i] / bc2;
    const wd = i < decayEnd ? h.weightDecay : 0;
    params[i] = params[i] - h.lr * (mhat / (Math.sqrt(vhat) + h.eps) + wd * params[i]);
  }
  return norm;
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
  let sq = 0;
  for (let i = 0; i < s.grads.length; i++) sq += s.grads[i] * s.grads[i];
  const norm = Math.sqrt(sq);
  if (!Number.isFinite(norm)) {
    s.grads.fill(0);
    return { gradNorm: norm, step: s.step, skipped: true };
  }
  s.step++;
  adamwStepCpu(s.params, s.grads, s.m, s.v, s.step, decayEnd, hyper);
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
