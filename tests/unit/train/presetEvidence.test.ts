import { describe, expect, it } from 'vitest';
import {
  claimDifference,
  claimsText,
  evaluateClaim,
  type PresetClaim,
  type PresetEvidenceEntry,
  parsePresetEvidence,
  runStatistic,
} from '../../../src/train/presetEvidence';
import type { VariantHistory } from '../../../src/train/presetMetrics';
import { listPresets, presetEvidence, presetRobustness, registerPreset } from '../../../src/train/presets';

const claim: PresetClaim = {
  id: 'grows',
  metric: 'm',
  arm: 'a',
  control: 'b',
  statistic: 'change',
  sign: 1,
  text: 'm grows more under a than b',
};

const history = (variant: string, values: (number | null)[]): VariantHistory => ({
  variant,
  steps: [{ step: 0, data: { m: 100 } }, ...values.map((v, i) => ({ step: i + 1, data: { m: v } }))],
});

describe('claim statistics', () => {
  it('change = mean of the last half − mean of the first half of the training steps (step 0 and gaps skipped)', () => {
    // 5 values → halves of 2: (4 + 5)/2 − (1 + 2)/2 = 3
    expect(runStatistic(history('a', [1, 2, 3, 4, 5]), 'm', 'change')).toBe(3);
    expect(runStatistic(history('a', [1, null, 3]), 'm', 'change')).toBe(2);
    expect(runStatistic(history('a', [1, 2, 3, 4, 5]), 'm', 'mean')).toBe(3);
    expect(runStatistic(history('a', [7]), 'm', 'change')).toBeNaN();
    const runs = [history('a', [0, 0, 2, 2]), history('b', [0, 0, 1, 1])];
    expect(claimDifference(claim, runs)).toBe(1);
    expect(() => claimDifference({ ...claim, control: 'c' }, runs)).toThrow(/no run of variant 'c'/);
  });

  it('holds on 4 of 5 seeds with an interval excluding zero (hand-computed)', () => {
    // mean 0.34, sd √(0.292/4) = 0.270185, half width 2.776445 · 0.270185/√5 = 0.335478 → lo 0.004522
    const e = evaluateClaim(claim, [0.5, 0.4, 0.6, 0.3, -0.1]);
    expect(e.agree).toBe(4);
    expect(e.mean).toBeCloseTo(0.34, 12);
    expect(e.lo).toBeCloseTo(0.004522, 5);
    expect(e.hi).toBeCloseTo(0.675478, 5);
    expect(e.holds).toBe(true);
  });

  it('does not hold with 3 of 5 agreeing, an interval over zero, fewer than 5 seeds, or the other sign', () => {
    expect(evaluateClaim(claim, [0.5, 0.4, 0.6, -0.3, -0.1]).holds).toBe(false);
    const wide = evaluateClaim(claim, [1, 1, 1, 1, -3]); // 4 agree, mean 0.2, interval over 0
    expect([wide.agree, wide.holds]).toEqual([4, false]);
    expect((wide.lo as number) < 0).toBe(true);
    expect(evaluateClaim(claim, [0.5, 0.4, 0.6, 0.3]).holds).toBe(false);
    const down = evaluateClaim({ ...claim, sign: -1 }, [0.5, 0.4, 0.6, 0.3, 0.2]);
    expect([down.agree, down.holds]).toEqual([0, false]);
    // a missing seed counts against the claim: 4 values of 5 seeds, all agreeing, still needs 4 of 5
    const gap = evaluateClaim(claim, [0.5, null, 0.6, 0.4, Number.NaN]);
    expect(gap.differences).toEqual([0.5, null, 0.6, 0.4, null]);
    expect([gap.agree, gap.holds]).toEqual([3, false]);
  });
});

const entry = (sha: string, differences: number[]): PresetEvidenceEntry => ({
  harness: 'h',
  checkpoint: { path: 'checkpoints/h.safetensors', sha256: sha },
  seeds: differences.map((_, i) => i),
  steps: 4,
  command: 'npm run bench:presets -- --presets p',
  claims: [evaluateClaim(claim, differences)],
});

describe('claim texts come from the table', () => {
  const sha = 'a'.repeat(64);
  it('cite the measured numbers and the verdict', () => {
    const held = claimsText([claim], entry(sha, [0.5, 0.4, 0.6, 0.3, -0.1]), sha);
    expect(held).toContain('HOLDS');
    expect(held).toContain('mean 0.340, 95% interval [0.00452, 0.675], expected sign on 4 of 5 seeds');
    expect(held).toContain('npm run bench:presets -- --presets p');
    const not = claimsText([claim], entry(sha, [0.5, 0.4, 0.6, -0.3, -0.1]));
    expect(not).toContain('does NOT hold');
    expect(not).toContain('3 of 5 seeds');
    expect(claimsText([claim], entry(sha, [0.5, 0.4]))).toContain('NOT established (only 2 seeds measured');
  });

  it('say "not yet measured on the current checkpoint" when the checkpoint changed, and never cite stale numbers', () => {
    const t = claimsText([claim], entry(sha, [0.5, 0.4, 0.6, 0.3, -0.1]), 'b'.repeat(64));
    expect(t).toContain('not yet measured on the current checkpoint');
    expect(t).not.toContain('0.340');
    expect(claimsText([claim], undefined)).toContain('not yet measured');
    // a claim restated since the table was measured is not matched to the old numbers
    expect(claimsText([{ ...claim, sign: -1 }], entry(sha, [0.5, 0.4, 0.6, 0.3, -0.1]))).toContain(
      'not yet measured',
    );
  });

  it('the table file is checked field by field', () => {
    const good = { presets: { p: entry(sha, [0.1, 0.2]) } };
    expect(parsePresetEvidence(JSON.parse(JSON.stringify(good))).presets.p.claims[0].agree).toBe(2);
    const bad = JSON.parse(JSON.stringify(good));
    bad.presets.p.checkpoint.sha256 = 'xyz';
    expect(() => parsePresetEvidence(bad)).toThrow(/presets\.p\.checkpoint\.sha256 must be 64 lowercase hex/);
    const short = JSON.parse(JSON.stringify(good));
    short.presets.p.claims[0].differences = [0.1];
    expect(() => parsePresetEvidence(short)).toThrow(/claim grows has 1 differences for 2 seeds/);
    expect(() => parsePresetEvidence({ presets: { p: { ...good.presets.p, claims: [{ id: 1 }] } } })).toThrow(
      /presets\.p\.claims\[0\]\.id must be a string/,
    );
  });
});

describe('the registry', () => {
  it('states every preset claim machine-readably, against its own variants and metrics', () => {
    for (const p of listPresets()) {
      expect(p.claims.length, p.slug).toBeGreaterThan(0);
      const names = p.variants.map((v) => v.name);
      for (const c of p.claims) {
        expect(names, `${p.slug} ${c.id}`).toContain(c.arm);
        expect(names, `${p.slug} ${c.id}`).toContain(c.control);
        expect(p.metrics, `${p.slug} ${c.id}`).toContain(c.metric);
      }
    }
    const base = listPresets()[0];
    expect(() =>
      registerPreset({
        ...base,
        slug: 'bad-claim',
        claims: [{ ...base.claims[0], control: 'nope' }],
      }),
    ).toThrow(/preset bad-claim, claim .*: no variant 'nope'/);
  });

  it("derives each preset's robustness text from its evidence entry", () => {
    for (const p of listPresets()) {
      const e = presetEvidence(p.slug);
      const text = presetRobustness(p);
      expect(text.startsWith(p.robustness), p.slug).toBe(true);
      if (!e) {
        expect(text, p.slug).toContain('not yet measured');
        continue;
      }
      for (const c of e.claims) expect(text, p.slug).toContain(c.holds ? 'HOLDS' : 'NOT');
      expect(presetRobustness(p, e.checkpoint.sha256)).toBe(text);
      expect(presetRobustness(p, '0'.repeat(64))).toContain('not yet measured on the current checkpoint');
    }
  });
});
