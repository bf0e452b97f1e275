import { describe, expect, it } from 'vitest';
import { COLOR_BY, type ColorBy, shownColorBy } from '../../src/ui/tokens/quantities';

describe('a colouring the trace lacks', () => {
  it('falls back to the first one the trace has, and keeps one it has', () => {
    const noLogProbs = new Set<ColorBy>(['weight', 'advantage', 'mask']);
    expect(shownColorBy('logprob', noLogProbs)).toBe('weight');
    expect(shownColorBy('entropy', new Set<ColorBy>(['logprob']))).toBe('logprob');
    for (const k of COLOR_BY) expect(shownColorBy(k, new Set(COLOR_BY))).toBe(k);
    // nothing to colour by (no trace): what was asked stays
    expect(shownColorBy('gap', new Set())).toBe('gap');
  });
});
