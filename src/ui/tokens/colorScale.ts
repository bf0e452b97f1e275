/**
 * Colour scales for token chips. Signed quantities (gradient weight, advantage, log-prob gap) use a diverging
 * blue–white–red scale symmetric around 0, so the sign reads at a glance and equal magnitudes look equal; blue is
 * always the reinforced side (a positive push or advantage, a negative ∂L/∂logπ);
 * one-signed quantities (log-prob, entropy) use a sequential scale; the loss mask is categorical.
 * Colours are interpolated in sRGB between a few anchor colours picked for legibility of dark text on top.
 */

export type ScaleKind = 'diverging' | 'sequential' | 'categorical';

export interface ColorScale {
  kind: ScaleKind;
  /** domain of the scale: [−m, m] for diverging, [min, max] for sequential, [0, 1] for categorical */
  lo: number;
  hi: number;
  /** CSS colour for a value; NaN (value absent) maps to a neutral hatch-free grey */
  color: (v: number) => string;
  /** text colour that stays legible on `color(v)` */
  ink: (v: number) => string;
  /** colours sampled along the domain for a legend gradient */
  stops: string[];
}

type RGB = [number, number, number];

const DIVERGING: RGB[] = [
  [33, 102, 172],
  [146, 197, 222],
  [247, 247, 247],
  [244, 165, 130],
  [178, 24, 43],
];
const SEQUENTIAL: RGB[] = [
  [255, 247, 236],
  [253, 212, 158],
  [252, 141, 89],
  [215, 48, 31],
  [127, 0, 0],
];
export const ABSENT_COLOR = '#e4e5e9';
export const MASK_COLORS = { trainable: '#c7e9c0', observation: '#eeeeee' } as const;

function mix(anchors: RGB[], t: number): RGB {
  const x = Math.min(1, Math.max(0, t)) * (anchors.length - 1);
  const i = Math.min(anchors.length - 2, Math.floor(x));
  const f = x - i;
  const a = anchors[i];
  const b = anchors[i + 1];
  const c = (k: number) => Math.round(a[k] + (b[k] - a[k]) * f);
  return [c(0), c(1), c(2)];
}

function lerp(anchors: RGB[], t: number): string {
  const [r, g, b] = mix(anchors, t);
  return `rgb(${r},${g},${b})`;
}

/** Dark or light text by the background's relative luminance (WCAG 2 formula, threshold near mid-grey). */
function inkOn(anchors: RGB[], t: number): string {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const [r, g, b] = mix(anchors, t);
  const l = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  return l < 0.2 ? '#ffffff' : '#1d2230';
}
const DARK_INK = '#1d2230';

/** Finite min and max of `values` at positions where `include` (when given) is non-zero. */
export function finiteExtent(values: ArrayLike<number>, include?: ArrayLike<number>): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    if (include && !include[i]) continue;
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo <= hi ? [lo, hi] : [0, 0];
}

const STOP_COUNT = 9;

function makeStops(color: (v: number) => string, lo: number, hi: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < STOP_COUNT; i++) out.push(color(lo + ((hi - lo) * i) / (STOP_COUNT - 1)));
  return out;
}

/**
 * Diverging scale on [−m, m] with m = max |v|; a domain of all zeros still gives a valid scale. Blue at −m, red at
 * +m; `positiveBlue` turns it round (for quantities whose positive side is the reinforced one).
 */
export function divergingScale(extent: [number, number], positiveBlue = false): ColorScale {
  const m = Math.max(Math.abs(extent[0]), Math.abs(extent[1])) || 1;
  const t = positiveBlue ? (v: number) => (m - v) / (2 * m) : (v: number) => (v + m) / (2 * m);
  const color = (v: number) => (Number.isFinite(v) ? lerp(DIVERGING, t(v)) : ABSENT_COLOR);
  const ink = (v: number) => (Number.isFinite(v) ? inkOn(DIVERGING, t(v)) : DARK_INK);
  return { kind: 'diverging', lo: -m, hi: m, color, ink, stops: makeStops(color, -m, m) };
}

/** Sequential scale on [lo, hi]; `reverse` puts the strongest colour at the low end (e.g. log-prob). */
export function sequentialScale(extent: [number, number], reverse = false): ColorScale {
  const [lo, hi] = extent[0] < extent[1] ? extent : [extent[0] - 1, extent[0]];
  const t = (v: number) => (reverse ? 1 - (v - lo) / (hi - lo) : (v - lo) / (hi - lo));
  const color = (v: number) => (Number.isFinite(v) ? lerp(SEQUENTIAL, t(v)) : ABSENT_COLOR);
  const ink = (v: number) => (Number.isFinite(v) ? inkOn(SEQUENTIAL, t(v)) : DARK_INK);
  return { kind: 'sequential', lo, hi, color, ink, stops: makeStops(color, lo, hi) };
}

export function maskScale(): ColorScale {
  const color = (v: number) =>
    Number.isFinite(v) ? (v > 0 ? MASK_COLORS.trainable : MASK_COLORS.observation) : ABSENT_COLOR;
  return {
    kind: 'categorical',
    lo: 0,
    hi: 1,
    color,
    ink: () => DARK_INK,
    stops: [MASK_COLORS.observation, MASK_COLORS.trainable],
  };
}

/** Short, aligned number formatting for tooltips, legends and tables. */
export function fmt(v: number, digits = 4): string {
  if (Number.isNaN(v)) return '—';
  if (!Number.isFinite(v)) return v > 0 ? '+∞' : '−∞';
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v).replace('-', '−');
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(digits - 1).replace(/-/g, '−');
  return v.toPrecision(digits).replace(/^-/, '−');
}
