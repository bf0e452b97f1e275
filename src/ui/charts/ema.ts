/**
 * Smoothing of metric curves: the debiased exponential moving average TensorBoard and W&B draw (an EMA started
 * at 0 is biased towards 0 for its first points; dividing by 1 − wᵏ removes that, as Adam's bias correction
 * does). With weight w and the finite values y₁…yₖ seen so far:
 *
 *   mₖ = w·mₖ₋₁ + (1 − w)·yₖ,  m₀ = 0,   smoothedₖ = mₖ / (1 − wᵏ)
 *
 * so smoothedₖ = Σᵢ (1 − w)·wᵏ⁻ⁱ·yᵢ / (1 − wᵏ), a weighted mean of the values so far. A missing or non-finite
 * value gets no smoothed value and does not advance k; w = 0 gives the raw series.
 */

/** The debiased EMA of `values` with weight `w` in [0, 1); null where a value is missing or non-finite. */
export function debiasedEma(values: readonly (number | null | undefined)[], w: number): (number | null)[] {
  if (!(w >= 0 && w < 1)) throw new RangeError(`smoothing weight must be in [0, 1), got ${w}`);
  const out: (number | null)[] = new Array(values.length);
  let m = 0;
  let k = 0;
  for (let i = 0; i < values.length; i++) {
    const y = values[i];
    if (typeof y !== 'number' || !Number.isFinite(y)) {
      out[i] = null;
      continue;
    }
    m = w * m + (1 - w) * y;
    k++;
    out[i] = w === 0 ? y : m / (1 - w ** k);
  }
  return out;
}
