/**
 * Small-sample statistics for seed sweeps: the Student t quantile, a two-sided t interval of a mean, and how
 * many values agree with an expected sign. Pure functions; every input is checked.
 */

/** ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 coefficients; ~1e-15 relative). */
function lnGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const z = x - 1;
  let a = c[0];
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i] / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the regularised incomplete beta function (modified Lentz). */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-15) break;
  }
  return h;
}

/** The regularised incomplete beta function I_x(a, b). */
function regularizedBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2)
    ? (front * betaContinuedFraction(a, b, x)) / a
    : 1 - (front * betaContinuedFraction(b, a, 1 - x)) / b;
}

function checkDf(df: number): void {
  if (!Number.isFinite(df) || df <= 0) throw new RangeError(`degrees of freedom must be > 0, got ${df}`);
}

/** P(T ≤ t) for Student's t with `df` degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  checkDf(df);
  if (Number.isNaN(t)) throw new RangeError('t must be a number, got NaN');
  const tail = 0.5 * regularizedBeta(df / (df + t * t), df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/** The p-quantile of Student's t with `df` degrees of freedom (0 < p < 1), by bisection on the CDF. */
export function studentTQuantile(p: number, df: number): number {
  checkDf(df);
  if (!(p > 0 && p < 1)) throw new RangeError(`probability must be in (0, 1), got ${p}`);
  if (p === 0.5) return 0;
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  let lo = 0;
  let hi = 1;
  while (studentTCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

export interface MeanInterval {
  n: number;
  mean: number;
  /** sample standard deviation (n − 1 in the denominator) */
  sd: number;
  /** the two-sided interval's half width: t_{(1+level)/2, n−1} · sd / √n */
  halfWidth: number;
  lo: number;
  hi: number;
  level: number;
}

/** Two-sided Student t interval of the mean of `xs` (at least two finite values) at `level` (default 0.95). */
export function tInterval(xs: readonly number[], level = 0.95): MeanInterval {
  if (!(level > 0 && level < 1)) throw new RangeError(`confidence level must be in (0, 1), got ${level}`);
  const bad = xs.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw new RangeError(`value ${bad} is not a finite number (${xs[bad]})`);
  const n = xs.length;
  if (n < 2) throw new RangeError(`a t interval needs at least 2 values, got ${n}`);
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  const halfWidth = (studentTQuantile((1 + level) / 2, n - 1) * sd) / Math.sqrt(n);
  return { n, mean, sd, halfWidth, lo: mean - halfWidth, hi: mean + halfWidth, level };
}

/** How many of `xs` have the expected sign (+1: > 0, −1: < 0); zero and non-finite values never agree. */
export function agreeingCount(xs: readonly number[], sign: 1 | -1): number {
  if (sign !== 1 && sign !== -1) throw new RangeError(`sign must be 1 or -1, got ${sign}`);
  return xs.filter((x) => Number.isFinite(x) && x * sign > 0).length;
}
