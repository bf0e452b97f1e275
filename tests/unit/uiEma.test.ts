import { describe, expect, it } from 'vitest';
import { debiasedEma } from '../../src/ui/charts/ema';

/** The formula written out: smoothedₖ = Σᵢ (1 − w)·wᵏ⁻ⁱ·yᵢ / (1 − wᵏ) over the k finite values so far. */
function byFormula(ys: number[], w: number): number[] {
  return ys.map((_, idx) => {
    const k = idx + 1;
    let s = 0;
    for (let i = 1; i <= k; i++) s += (1 - w) * w ** (k - i) * ys[i - 1];
    return s / (1 - w ** k);
  });
}

describe('debiased EMA of metric curves', () => {
  const ys = [0.2, 0.9, -0.4, 1.7, 0.05, 3, 2.5, -1];

  it('equals the weighted-mean formula at every point, for several weights', () => {
    for (const w of [0.1, 0.6, 0.9, 0.99]) {
      const got = debiasedEma(ys, w);
      const want = byFormula(ys, w);
      for (let i = 0; i < got.length; i++) expect(got[i]).toBeCloseTo(want[i], 12);
    }
  });

  it('starts at the first value (no bias towards 0) and gives the raw series at w = 0', () => {
    expect(debiasedEma([5, 7], 0.95)[0]).toBeCloseTo(5, 12);
    // hand-computed: m₁ = 0.5·5 = 2.5, m₂ = 0.5·2.5 + 0.5·7 = 4.75, debiased 4.75 / 0.75
    expect(debiasedEma([5, 7], 0.5)[1]).toBeCloseTo(4.75 / 0.75, 12);
    expect(debiasedEma(ys, 0)).toEqual(ys);
    // a constant series stays constant
    for (const v of debiasedEma([3, 3, 3, 3], 0.8)) expect(v).toBeCloseTo(3, 12);
  });

  it('skips missing and non-finite values without advancing k', () => {
    const got = debiasedEma([1, null, Number.NaN, 3, undefined, Number.POSITIVE_INFINITY, 2], 0.7);
    const want = byFormula([1, 3, 2], 0.7);
    expect(got[1]).toBeNull();
    expect(got[2]).toBeNull();
    expect(got[4]).toBeNull();
    expect(got[5]).toBeNull();
    expect(got[0]).toBeCloseTo(want[0], 12);
    expect(got[3]).toBeCloseTo(want[1], 12);
    expect(got[6]).toBeCloseTo(want[2], 12);
  });

  it('refuses a weight outside [0, 1)', () => {
    expect(() => debiasedEma(ys, 1)).toThrow(/\[0, 1\), got 1/);
    expect(() => debiasedEma(ys, -0.1)).toThrow(RangeError);
    expect(() => debiasedEma(ys, Number.NaN)).toThrow(RangeError);
  });
});
