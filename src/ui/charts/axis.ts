/**
 * The value axis of a metric chart, computed rather than left to the chart library: a domain on "nice" steps
 * (1, 2, 2.5, 5 × 10ᵏ) covering every finite value, its ticks, and their labels written with a true minus sign
 * (U+2212) and as many decimals as the step needs (so neighbouring ticks never read the same). A constant series,
 * or one that differs only by float rounding (0.1 vs 0.10000000000000002), gets a domain centred on its value
 * and is drawn as a flat line in the middle of the chart instead of a rounding-noise zig-zag across it. The
 * axis width follows the longest label, so a leading minus is never cut off.
 */

export interface ValueAxis {
  domain: [number, number];
  ticks: number[];
  labels: string[];
  /** pixels for the tick labels (at the chart's 10px font) */
  width: number;
}

/** Values closer than this fraction of their magnitude count as one constant value. */
const FLAT = 1e-9;

/** The smallest 1, 2, 2.5 or 5 × 10ᵏ that is at least `raw` (> 0). */
export function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw))
    throw new RangeError(`axis step must be a positive number, got ${raw}`);
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw * (1 - 1e-12)) return m * p;
  return 10 * p;
}

/** Decimals that write every multiple of `step` exactly (0.25 → 2, 5 → 0, 0.002 → 3). */
function decimalsOf(step: number): number {
  for (let d = 0; d <= 20; d++) {
    const x = step * 10 ** d;
    if (x >= 1 && Math.abs(Math.round(x) - x) < 1e-6 * x) return d;
  }
  return 20;
}

/** A number with a true minus sign (never "−0"). */
export function withMinus(text: string): string {
  const t = text.replace(/-/g, '\u2212');
  return /^\u22120*(\.0*)?(e.*)?$/.test(t) ? t.slice(1) : t;
}

/** Labels for ticks `step` apart: fixed decimals, or exponent notation for very large or small magnitudes. */
export function tickLabels(ticks: readonly number[], step: number): string[] {
  const big = Math.max(...ticks.map(Math.abs));
  if (big >= 1e5 || step < 1e-4) {
    // mantissa digits enough to separate neighbouring ticks at the largest magnitude
    const digits = Math.max(1, Math.ceil(Math.log10(Math.max(big, step) / step)) + 1);
    return ticks.map((t) =>
      withMinus(t === 0 ? '0' : t.toExponential(Math.min(digits - 1, 15)).replace('e+', 'e')),
    );
  }
  const d = decimalsOf(step);
  return ticks.map((t) => withMinus(t.toFixed(d)));
}

/** The axis for a chart showing `values` (non-finite ones ignored); null when none is finite. */
export function valueAxis(values: Iterable<number | null | undefined>, count = 5): ValueAxis | null {
  if (!(Number.isInteger(count) && count >= 2))
    throw new RangeError(`tick count must be an integer ≥ 2, got ${count}`);
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) return null;
  const scale = Math.max(Math.abs(lo), Math.abs(hi));
  const flat = hi - lo <= FLAT * scale;
  if (flat) {
    // constant: the value in the middle, one order of magnitude below it either side (±1 around 0)
    const c = (lo + hi) / 2;
    const half = c === 0 ? 1 : 10 ** Math.floor(Math.log10(Math.abs(c)));
    lo = c - half;
    hi = c + half;
  }
  const step = niceStep((hi - lo) / (count - 1));
  const d = decimalsOf(step);
  const round = (x: number) => Number(x.toFixed(Math.min(d + 2, 100)));
  // a constant's domain stays centred on it (ticks are the step's multiples inside); otherwise the domain ends
  // on ticks
  const first = (flat ? Math.ceil(lo / step - 1e-9) : Math.floor(lo / step + 1e-9)) * step;
  const last = (flat ? Math.floor(hi / step + 1e-9) : Math.ceil(hi / step - 1e-9)) * step;
  const n = Math.round((last - first) / step);
  const ticks = Array.from({ length: n + 1 }, (_, i) => round(first + i * step));
  const labels = tickLabels(ticks, step);
  const longest = Math.max(...labels.map((l) => l.length));
  const domain: [number, number] = flat ? [lo, hi] : [ticks[0], ticks[n]];
  return { domain, ticks, labels, width: Math.ceil(longest * 6.2) + 12 };
}
