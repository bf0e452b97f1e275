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
