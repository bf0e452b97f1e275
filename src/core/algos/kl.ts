/**
 * KL penalty estimators (verl core_algos.kl_penalty → kl_penalty_forward; J. Schulman, "Approximating KL
 * divergence", 2020). With x = logπ − logπ_ref:
 *   kl/k1: x                         ∂/∂logπ = 1
 *   abs:   |x|                       ∂ = sign(x) (0 at x = 0, as torch)
 *   mse/k2: ½x²                      ∂ = x
 *   low_var_kl/k3: clamp(e^{−x'} + x' − 1, −10, 10), x' = clamp(x, −20, 20)
 *                                    ∂ = (1 − e^{−x'}) inside both clamps, 0 where a clamp is active
 * verl 0.8.0 `kl_penalty` strips a trailing '+' before dispatching: the value is the base estimator's, and
 * (except for `mse+`/`k2+`, whose own gradient already is k2's) the gradient is k2's, ∂ = x, by the straight-through
 * trick `k2 − k2.detach() + base.detach()`. 'full' (needs full-vocabulary logits) and unknown names raise
 * NotImplementedError.
 */
import { UpstreamError } from './numeric';

export const KL_PENALTIES = ['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3'] as const;

export interface KlResult {
  kl: Float32Array;
  /** ∂(Σ kl)/∂logprob per element */
  gradLogprob: Float32Array;
}

/** Every name `kl_penalty` accepts: the base estimators and their straight-through '+' variants. */
export const KL_PENALTY_NAMES = [...KL_PENALTIES, ...KL_PENALTIES.map((k) => `${k}+`)];

export function klPenalty(logprob: Float32Array, refLogprob: Float32Array, kind: string): KlResult {
  if (logprob.length !== refLogprob.length)
    throw new Error(`logprob has ${logprob.length} values but ref_logprob has ${refLogprob.length}`);
  if (kind.endsWith('+')) {
    const out = klForward(logprob, refLogprob, kind.slice(0, -1));
    const g = out.gradLogprob;
    // straight-through: value of the base estimator, gradient of k2 (½x², ∂ = x)
    for (let i = 0; i < g.length; i++) g[i] = Math.fround(logprob[i] - refLogprob[i]);
    return out;
  }
  return klForward(logprob, refLogprob, kind);
}

function klForward(logprob: Float32Array, refLogprob: Float32Array, kind: string): KlResult {
  const n = logprob.length;
  const kl = new Float32Array(n);
  const grad = new Float32Array(n);
  switch (kind) {
    case 'kl':
    case 'k1':
      for (let i = 0; i < n; i++) {
        kl[i] = logprob[i] - refLogprob[i];
        grad[i] = 1;
      }
      break;
    case 'abs':
      for (let i = 0; i < n; i++) {
        const d = Math.fround(logprob[i] - refLogprob[i]);
        kl[i] = Math.abs(d);
        grad[i] = Math.sign(d);
      }
      break;
    case 'mse':
    case 'k2':
      for (let i = 0; i < n; i++) {
        const d = Math.fround(logprob[i] - refLogprob[i]);
        kl[i] = 0.5 * d * d;
        grad[i] = d;
      }
      break;
    case 'low_var_kl':
    case 'k3':
      for (let i = 0; i < n; i++) {
        const raw = Math.fround(refLogprob[i] - logprob[i]);
        const x = raw < -20 ? -20 : Math.min(raw, 20);
        const ratio = Math.fround(Math.exp(x));
        const v = Math.fround(Math.fround(ratio - x) - 1);
        kl[i] = v < -10 ? -10 : Math.min(v, 10);
        const inside = raw >= -20 && raw <= 20 && v >= -10 && v <= 10;
        grad[i] = inside ? 1 - ratio : 0;
      }
      break;
    default:
      throw new UpstreamError(
        'NotImplementedError',
        kind === 'full'
          ? "kl_penalty 'full' needs full-vocabulary logits; not implemented upstream"
          : `kl_penalty '${kind}' is not implemented upstream (kl_penalty_forward knows ${KL_PENALTIES.join(', ')}, each also with a '+' suffix)`,
      );
  }
  return { kl, gradLogprob: grad };
}
