/**
 * Finite-difference checks of the CPU reference backward pass (central differences, f32 forward). The CPU
 * backward is what the WGSL backward kernels are held to, so this closes the chain kernel → reference → math.
 */
import { mulberry32 } from '../core/random';
import { type Batch, backwardCpu, forwardCpu, type Layout, type PolicyConfig, weightedLoss } from './model';

export interface GradCheckResult {
  /** Largest |analytic − numeric| / max(|analytic|, |numeric|, floor) over the checked coordinates. */
  maxRelError: number;
  checked: number;
  worst: { name: string; index: number; analytic: number; numeric: number } | null;
}

/**
 * Central differences of `loss` at `count` coordinates of `x` (the largest |grad| ones and random others),
 * compared with `grad`. `loss` must read x afresh each call.
 */
export function finiteDifference(
  x: Float32Array,
  grad: Float32Array,
  loss: () => number,
  opts: { eps?: number; count?: number; seed?: number; floor?: number; name?: (i: number) => string } = {},
): GradCheckResult {
  const eps = opts.eps ?? 1e-2;
  const floor = opts.floor ?? 1e-2;
  const count = Math.min(opts.count ?? 24, x.length);
  const order = Array.from({ length: x.length }, (_, i) => i).sort(
    (a, b) => Math.abs(grad[b]) - Math.abs(grad[a]),
  );
  const picks = new Set(order.slice(0, Math.ceil(count / 2)));
  const rand = mulberry32(opts.seed ?? 1);
  while (picks.size < count) picks.add(Math.floor(rand() * x.length));
  let maxRelError = 0;
  let worst: GradCheckResult['worst'] = null;
  for (const i of picks) {
    const orig = x[i];
    x[i] = orig + eps;
    const lp = loss();
    x[i] = orig - eps;
    const lm = loss();
    x[i] = orig;
    const numeric = (lp - lm) / (2 * eps);
    const rel = Math.abs(grad[i] - numeric) / Math.max(Math.abs(grad[i]), Math.abs(numeric), floor);
    // `!(rel < max)` also catches NaN (a NaN gradient or loss), which must fail the check, not vanish.
    if (!(rel < maxRelError)) {
      maxRelError = Number.isNaN(rel) ? Number.POSITIVE_INFINITY : rel;
      worst = { name: opts.name ? opts.name(i) : String(i), index: i, analytic: grad[i], numeric };
    }
  }
  return { maxRelError, checked: picks.size, worst };
}

/** Finite-difference check of the whole model's gradient of −Σ w·logp. */
export function modelGradCheck(
  cfg: PolicyConfig,
  layout: Layout,
  params: Float32Array,
  batch: Batch,
  weights: Float32Array,
  opts: { eps?: number; count?: number; seed?: number } = {},
): GradCheckResult {
  const p = new Float32Array(params);
  const grads = new Float32Array(layout.total);
  const acts = forwardCpu(cfg, layout, p, batch);
  backwardCpu(cfg, layout, p, batch, acts, weights, grads);
  const loss = () => weightedLoss(forwardCpu(cfg, layout, p, batch).logp, weights);
  const name = (i: number) => {
    const t = layout.tensors.find((e) => i >= e.offset && i < e.offset + e.size);
    return t ? `${t.name}[${i - t.offset}]` : String(i);
  };
  return finiteDifference(p, grads, loss, { ...opts, name });
}
