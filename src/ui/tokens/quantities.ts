/**
 * The per-token quantities a chip can be coloured by, and how each is scaled. The list is the page's own (these
 * are views of one batch, not algorithm choices); a quantity the loaded data lacks is offered but disabled.
 */
import { type ColorScale, divergingScale, finiteExtent, maskScale, sequentialScale } from './colorScale';

export const COLOR_BY = ['weight', 'advantage', 'logprob', 'entropy', 'gap', 'mask'] as const;
export type ColorBy = (typeof COLOR_BY)[number];

export const COLOR_BY_LABEL: Record<ColorBy, string> = {
  weight: 'effective gradient weight ∂L/∂logπ',
  advantage: 'advantage',
  logprob: 'log-prob (engine)',
  entropy: 'entropy',
  gap: 'log-prob gap (engine − trainer)',
  mask: 'loss mask',
};

/** Scale for a quantity over the values it takes on the tokens in view (trainable tokens only for weights). */
export function scaleFor(
  key: ColorBy,
  values: ArrayLike<number> | undefined,
  mask?: ArrayLike<number>,
): ColorScale {
  if (key === 'mask') return maskScale();
  const extent = values
    ? finiteExtent(values, key === 'weight' || key === 'advantage' ? mask : undefined)
    : [0, 0];
  const ext = extent as [number, number];
  if (key === 'logprob') return sequentialScale([Math.min(ext[0], -1e-6), 0], true);
  if (key === 'entropy') return sequentialScale([0, Math.max(ext[1], 1e-6)]);
  return divergingScale(ext);
}
