/**
 * The per-token quantities a chip can be coloured by, and how each is scaled. The list is the page's own (these
 * are views of one batch, not algorithm choices); a quantity the loaded data lacks is offered but disabled.
 */
import type { WeightSign } from '../../core/pipeline/sign';
import { type ColorScale, divergingScale, finiteExtent, maskScale, sequentialScale } from './colorScale';

export const COLOR_BY = [
  'weight',
  'advantage',
  'logprob',
  'trainerLogprob',
  'entropy',
  'gap',
  'vocabKl',
  'vocabTv',
  'mask',
] as const;
export type ColorBy = (typeof COLOR_BY)[number];

const COLOR_BY_LABEL: Record<ColorBy, string> = {
  weight: 'effective weight',
  advantage: 'advantage',
  logprob: 'log-prob (engine)',
  trainerLogprob: 'log-prob (trainer)',
  entropy: 'entropy (trainer)',
  gap: 'log-prob gap (engine − trainer)',
  vocabKl: 'KL(rollout ‖ trainer), whole vocabulary',
  vocabTv: 'total variation, whole vocabulary',
  mask: 'loss mask',
};

/** What a colouring is called; the weight names its sign convention (push −∂L/∂logπ or ∂L/∂logπ). */
export function colorByLabel(key: ColorBy, sign: WeightSign): string {
  return key === 'weight' ? `effective weight: ${sign.label}` : COLOR_BY_LABEL[key];
}

/**
 * The colouring to paint with: the one asked for when the trace has it, else the first of COLOR_BY it has (the
 * view says so), else the one asked for.
 */
export function shownColorBy(asked: ColorBy, available: ReadonlySet<ColorBy>): ColorBy {
  if (available.has(asked)) return asked;
  return COLOR_BY.find((k) => available.has(k)) ?? asked;
}

/**
 * Scale for a quantity over the values it takes on the tokens in view (trainable tokens only for weights).
 * Weights are given in the sign convention `sign`; blue is the reinforced side for weights and advantages.
 */
export function scaleFor(
  key: ColorBy,
  values: ArrayLike<number> | undefined,
  mask: ArrayLike<number> | undefined,
  sign: WeightSign,
  /** `finiteExtent(values, mask)` when the caller has it already (the lab worker sends the weights' one) */
  known?: [number, number],
): ColorScale {
  if (key === 'mask') return maskScale();
  const extent =
    known ??
    (values ? finiteExtent(values, key === 'weight' || key === 'advantage' ? mask : undefined) : [0, 0]);
  const ext = extent as [number, number];
  if (key === 'logprob' || key === 'trainerLogprob')
    return sequentialScale([Math.min(ext[0], -1e-6), 0], true);
  if (key === 'entropy' || key === 'vocabKl' || key === 'vocabTv')
    return sequentialScale([0, Math.max(ext[1], 1e-6)]);
  if (key === 'weight') return divergingScale(ext, sign.reinforced === 'positive');
  if (key === 'advantage') return divergingScale(ext, true);
  return divergingScale(ext);
}
