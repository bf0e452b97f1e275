import { memo, useMemo, useRef } from 'react';
import { fmt } from '../tokens/colorScale';
import { useClientSize } from './useClientSize';

export interface Bins {
  lo: number;
  hi: number;
  counts: Int32Array;
}

/**
 * Counts of `values` (finite ones, where `keep` is non-zero) in `n` equal bins over [lo, hi]. A symmetric domain
 * [−m, m] when `symmetric` (signed quantities, so 0 sits in the middle).
 */
export function binValues(
  sets: (ArrayLike<number> | null | undefined)[],
  n: number,
  opts: { keep?: (ArrayLike<number> | null | undefined)[]; symmetric?: boolean } = {},
): Bins[] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  sets.forEach((vs, k) => {
    if (!vs) return;
    const keep = opts.keep?.[k];
    for (let i = 0; i < vs.length; i++) {
      if (keep && !keep[i]) continue;
      const v = vs[i];
      if (!Number.isFinite(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  });
  if (lo > hi) [lo, hi] = [0, 0];
  if (opts.symmetric) {
    const m = Math.max(Math.abs(lo), Math.abs(hi));
    [lo, hi] = [-m, m];
  }
  if (lo === hi) [lo, hi] = [lo - 0.5, hi + 0.5];
  const w = (hi - lo) / n;
  return sets.map((vs, k) => {
    const counts = new Int32Array(n);
    if (vs) {
      const keep = opts.keep?.[k];
      for (let i = 0; i < vs.length; i++) {
        if (keep && !keep[i]) continue;
        const v = vs[i];
        if (!Number.isFinite(v)) continue;
        counts[Math.min(n - 1, Math.max(0, Math.floor((v - lo) / w)))]++;
      }
    }
    return { lo, hi, counts };
  });
}

const H = 120;
const ZERO_BIN = '#9aa0ad';
const PAD = { l: 34, r: 8, t: 6, b: 20 };

/**
 * A histogram as SVG: bars for the current values, coloured by the side of 0 they lie on, and the previous
 * values (before the last change of options) as a ghost outline over the same bins.
 */
export const Histogram = memo(function Histogram(props: {
  bins: Bins;
  ghost?: Bins | null;
  /** colour of bars below and above 0 */
  colors: [string, string];
  /** the chart's accessible name */
  label: string;
  /** unit of a count ("tokens", "rollouts") */
  unit: string;
  testId?: string;
}) {
  const { bins, ghost, colors } = props;
  const box = useRef<HTMLDivElement>(null);
  const width = useClientSize(box, 'clientWidth', 0);
  const n = bins.counts.length;
  const max = useMemo(() => {
    let m = 1;
    for (const c of bins.counts) m = Math.max(m, c);
    if (ghost) for (const c of ghost.counts) m = Math.max(m, c);
    return m;
  }, [bins, ghost]);
  const w = Math.max(120, width);
  const plotW = w - PAD.l - PAD.r;
  const plotH = H - PAD.t - PAD.b;
  const bw = plotW / n;
  const x = (v: number) => PAD.l + ((v - bins.lo) / (bins.hi - bins.lo)) * plotW;
  const y = (c: number) => PAD.t + plotH - (c / max) * plotH;
  const ghostPath = ghost
    ? Array.from(
        ghost.counts,
        (c, i) => `${i === 0 ? 'M' : 'L'}${PAD.l + i * bw},${y(c)}H${PAD.l + (i + 1) * bw}`,
      )
        .join('')
        .concat(`V${y(0)}`)
    : '';
  let total = 0;
  for (const c of bins.counts) total += c;
  return (
    <div ref={box} className="hist" data-testid={props.testId}>
      <svg width={w} height={H} role="img" aria-label={props.label}>
        <title>{props.label}</title>
        <line x1={PAD.l} x2={w - PAD.r} y1={y(0)} y2={y(0)} className="axis" />
        {bins.lo < 0 && bins.hi > 0 && <line x1={x(0)} x2={x(0)} y1={PAD.t} y2={y(0)} className="zero" />}
        {Array.from(bins.counts, (c, i) => {
          const mid = bins.lo + (i + 0.5) * ((bins.hi - bins.lo) / n);
          return c > 0 ? (
            <rect
              // biome-ignore lint/suspicious/noArrayIndexKey: bins are positional
              key={i}
              x={PAD.l + i * bw + 0.5}
              width={Math.max(1, bw - 1)}
              y={y(c)}
              height={y(0) - y(c)}
              // the bin around 0 is neither side
              fill={Math.abs(mid) < (bins.hi - bins.lo) / n / 2 ? ZERO_BIN : mid < 0 ? colors[0] : colors[1]}
            >
              <title>
                {`${fmt(bins.lo + i * ((bins.hi - bins.lo) / n), 3)} … ${fmt(bins.lo + (i + 1) * ((bins.hi - bins.lo) / n), 3)}: ${c} ${props.unit}`}
              </title>
            </rect>
          ) : null;
        })}
        {ghost && <path d={ghostPath} className="ghost" data-testid="hist-ghost" />}
        <text x={PAD.l} y={H - 5} className="tick">
          {fmt(bins.lo, 2)}
        </text>
        {bins.lo < 0 && bins.hi > 0 && (
          <text x={x(0)} y={H - 5} className="tick" textAnchor="middle">
            0
          </text>
        )}
        <text x={w - PAD.r} y={H - 5} className="tick" textAnchor="end">
          {fmt(bins.hi, 2)}
        </text>
        <text x={PAD.l - 4} y={PAD.t + 8} className="tick" textAnchor="end">
          {max}
        </text>
        <text x={PAD.l - 4} y={y(0)} className="tick" textAnchor="end">
          0
        </text>
      </svg>
      <span className="sr-only">
        {total} {props.unit}
      </span>
    </div>
  );
});
