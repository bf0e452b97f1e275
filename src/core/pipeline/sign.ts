/**
 * How effective gradient weights are shown. Core computes ∂L/∂logπ_t of the loss the actor minimises, so a token
 * the update makes more likely has a NEGATIVE weight (a successful rollout's tokens sum to, say, −0.04). People
 * read "positive = reinforced": the page and `lab analyze` show the push −∂L/∂logπ_t by default — how strongly one
 * step of gradient descent raises logπ_t, and exactly the per-token weight `PolicyEngine.trainStep` takes — and
 * offer ∂L/∂logπ_t as the other convention. Both are one registry, so the page's switch, the URL field and the
 * CLI flag iterate it.
 */

export type WeightSignName = 'push' | 'grad';

export interface WeightSign {
  name: WeightSignName;
  /** displayed value = factor · ∂L/∂logπ */
  factor: 1 | -1;
  /** the quantity in symbols (Unicode), for legends, headers and the CLI */
  symbol: string;
  /** the same in TeX, for the page's formulas */
  tex: string;
  /** a short name for controls */
  label: string;
  /** the shortest name, for narrow column headers */
  short: string;
  /** the sign a reinforced token (its log-prob raised) has under this convention */
  reinforced: 'positive' | 'negative';
  help: string;
}

export const WEIGHT_SIGNS: readonly WeightSign[] = [
  {
    name: 'push',
    factor: -1,
    symbol: '−∂L/∂logπ',
    tex: '-\\partial L/\\partial \\log\\pi',
    label: 'push −∂L/∂logπ',
    short: 'push',
    reinforced: 'positive',
    help: 'how much one descent step raises each token’s log-prob: positive = reinforced, negative = suppressed',
  },
  {
    name: 'grad',
    factor: 1,
    symbol: '∂L/∂logπ',
    tex: '\\partial L/\\partial \\log\\pi',
    label: 'gradient ∂L/∂logπ',
    short: '∂L/∂logπ',
    reinforced: 'negative',
    help: 'the gradient of the minimised loss: negative = reinforced (descent raises the log-prob), positive = suppressed',
  },
];

export const DEFAULT_WEIGHT_SIGN: WeightSignName = 'push';

export function getWeightSign(name: string): WeightSign {
  const s = WEIGHT_SIGNS.find((x) => x.name === name);
  if (!s)
    throw new Error(`unknown weight sign '${name}' (known: ${WEIGHT_SIGNS.map((x) => x.name).join(', ')})`);
  return s;
}

/** A value of ∂L/∂logπ in the convention `sign` (−0 is shown as 0). */
export function signed(v: number, sign: WeightSign): number {
  return sign.factor === 1 || v === 0 ? v : -v;
}

/** An array of ∂L/∂logπ values in the convention `sign` (the input itself when nothing changes). */
export function signedArray<T extends Float32Array | Float64Array>(values: T, sign: WeightSign): T {
  if (sign.factor === 1) return values;
  const out = new (values.constructor as new (n: number) => T)(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i] === 0 ? 0 : -values[i];
  return out;
}

/**
 * Per-group sums of the negative and of the positive token weights, in the convention `sign`: negating swaps them
 * (what was the negative side of ∂L/∂logπ is the positive side of the push).
 */
export function signedSides(
  negative: number,
  positive: number,
  sign: WeightSign,
): { negative: number; positive: number } {
  return sign.factor === 1
    ? { negative, positive }
    : { negative: signed(positive, sign), positive: signed(negative, sign) };
}
