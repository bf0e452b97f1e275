import { describe, expect, it } from 'vitest';
import { agreeingCount, studentTCdf, studentTQuantile, tInterval } from '../../src/core/stats';

describe('Student t', () => {
  it('has the closed-form CDFs of 1 and 2 degrees of freedom', () => {
    // df 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π; df 2: F(t) = 1/2 + t / (2 √(2 + t²))
    for (const t of [-3, -1, 0, 0.5, 1, 4]) {
      expect(studentTCdf(t, 1)).toBeCloseTo(0.5 + Math.atan(t) / Math.PI, 12);
      expect(studentTCdf(t, 2)).toBeCloseTo(0.5 + t / (2 * Math.sqrt(2 + t * t)), 12);
    }
    expect(studentTCdf(1, 1)).toBeCloseTo(0.75, 12);
  });

  it('gives the tabulated two-sided 95% quantiles', () => {
    // t_{0.975, df} from the standard table
    const table: [number, number][] = [
      [1, 12.7062047],
      [2, 4.30265273],
      [4, 2.77644511],
      [9, 2.26215716],
      [30, 2.04227246],
    ];
    for (const [df, q] of table) expect(studentTQuantile(0.975, df)).toBeCloseTo(q, 6);
    expect(studentTQuantile(0.025, 4)).toBeCloseTo(-2.77644511, 6);
    expect(studentTQuantile(0.5, 7)).toBe(0);
    // df 2 inverts in closed form: t = (2p − 1) √(2 / (4p(1 − p)))
    const p = 0.9;
    expect(studentTQuantile(p, 2)).toBeCloseTo((2 * p - 1) * Math.sqrt(2 / (4 * p * (1 - p))), 9);
  });

  it('rejects impossible arguments with a clear error', () => {
    expect(() => studentTQuantile(1, 4)).toThrow(/probability must be in \(0, 1\), got 1/);
    expect(() => studentTQuantile(0.9, 0)).toThrow(/degrees of freedom must be > 0, got 0/);
    expect(() => studentTCdf(Number.NaN, 3)).toThrow(/NaN/);
  });
});

describe('tInterval', () => {
  it('matches the hand-computed interval of 1..5', () => {
    // mean 3, sd √2.5, se √2.5/√5 = √0.5, half width 2.77644511 · 0.70710678 = 1.96324
    const ci = tInterval([1, 2, 3, 4, 5]);
    expect(ci.n).toBe(5);
    expect(ci.mean).toBe(3);
    expect(ci.sd).toBeCloseTo(Math.sqrt(2.5), 12);
    expect(ci.halfWidth).toBeCloseTo(1.963243, 5);
    expect(ci.lo).toBeCloseTo(1.036757, 5);
    expect(ci.hi).toBeCloseTo(4.963243, 5);
  });

  it('is wide on two values and zero-width on equal ones', () => {
    // [2, 4]: mean 3, sd √2, se 1, half width t_{0.975,1} = 12.7062
    const ci = tInterval([2, 4]);
    expect(ci.lo).toBeCloseTo(3 - 12.7062047, 5);
    expect(ci.hi).toBeCloseTo(3 + 12.7062047, 5);
    const flat = tInterval([0.5, 0.5, 0.5]);
    expect([flat.lo, flat.hi]).toEqual([0.5, 0.5]);
    // a 90% interval is narrower: t_{0.95,4} = 2.13184679
    expect(tInterval([1, 2, 3, 4, 5], 0.9).halfWidth).toBeCloseTo(2.13184679 * Math.SQRT1_2, 5);
  });

  it('needs two finite values', () => {
    expect(() => tInterval([1])).toThrow(/at least 2 values, got 1/);
    expect(() => tInterval([1, Number.NaN])).toThrow(/value 1 is not a finite number/);
    expect(() => tInterval([1, 2], 1)).toThrow(/confidence level/);
  });
});

describe('agreeingCount', () => {
  it('counts the values with the expected sign; zero and NaN never agree', () => {
    expect(agreeingCount([1, -2, 0, 3, Number.NaN], 1)).toBe(2);
    expect(agreeingCount([1, -2, 0, 3, Number.NaN], -1)).toBe(1);
    expect(agreeingCount([], 1)).toBe(0);
    expect(() => agreeingCount([1], 0 as 1)).toThrow(/sign must be 1 or -1/);
  });
});
