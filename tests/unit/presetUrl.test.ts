import { describe, expect, it } from 'vitest';
import { readPresetLink, writePresetLink } from '../../src/ui/presets/presetUrl';

describe('preset links', () => {
  it('round-trips a preset with its seed and steps, keeping other parameters', () => {
    const s = writePresetLink('?tab=train', { slug: 'staleness', seed: 3, steps: 4 });
    expect(s).toBe('?tab=train&preset=staleness&seed=3&steps=4');
    expect(readPresetLink(s)).toEqual({ link: { slug: 'staleness', seed: 3, steps: 4 }, problems: [] });
    expect(writePresetLink(s, null)).toBe('?tab=train');
    expect(readPresetLink('#tab=train&preset=length-bias').link).toEqual({ slug: 'length-bias' });
    expect(writePresetLink('#tab=train', { slug: 'merge-failures' })).toBe(
      '#tab=train&preset=merge-failures',
    );
    expect(readPresetLink('?tab=train')).toEqual({ link: null, problems: [] });
  });

  it('carries the size of a seed group (one seed is the default and is not written)', () => {
    const s = writePresetLink('', { slug: 'length-bias', seed: 3, steps: 1, seeds: 2 });
    expect(s).toBe('?preset=length-bias&seed=3&steps=1&seeds=2');
    expect(readPresetLink(s).link).toEqual({ slug: 'length-bias', seed: 3, steps: 1, seeds: 2 });
    expect(writePresetLink('', { slug: 'length-bias', seeds: 1 })).toBe('?preset=length-bias');
    expect(readPresetLink('?preset=length-bias&seeds=0').problems).toEqual([
      "seeds '0' must be an integer ≥ 1; the preset's own is used",
    ]);
  });

  it('names what it could not use', () => {
    const bad = readPresetLink('?preset=lenght-bias');
    expect(bad.link).toBeNull();
    expect(bad.problems[0]).toMatch(/'lenght-bias' is not a preset \(valid: length-bias, turn-count-bias/);
    const r = readPresetLink('?preset=length-bias&seed=x&steps=0');
    expect(r.link).toEqual({ slug: 'length-bias' });
    expect(r.problems).toEqual([
      "seed 'x' must be an integer ≥ 0; the preset's own is used",
      "steps '0' must be an integer ≥ 1; the preset's own is used",
    ]);
  });
});
