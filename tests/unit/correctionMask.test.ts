import { describe, expect, it } from 'vitest';
import { correctionMask, MASK_CLASS } from '../../src/core/algos/correctionMask';
import { computeRolloutCorrection } from '../../src/core/algos/rolloutCorrection';
import { resolveTrainerOptions } from '../../src/core/pipeline/options';
import { buildRows } from '../../src/core/pipeline/trainer';
import { trainerValuesOf } from '../../src/ui/lab/derive';
import { correctionTrace } from '../fixtures/correctionTrace';

function batchOfTrace() {
  const rollouts = correctionTrace();
  const { batch } = buildRows(rollouts, resolveTrainerOptions({ traceAggregatorLevel: 'trajectory' }));
  const trainer = trainerValuesOf(batch, rollouts);
  if (!trainer || !batch.responseLogProbs) throw new Error('the trace should carry both log-probs');
  return { batch, trainer: trainer.logProbs, rollout: batch.responseLogProbs };
}

describe('rollout-correction masks per token (the Trace view colouring)', () => {
  const { batch, trainer, rollout } = batchOfTrace();
  const n = batch.offsets[batch.nRows];
  const observations = Array.from(batch.mask).filter((m) => !m).length;

  it('the trace has masked observation spans and both log-probs on every loss token', () => {
    expect(observations).toBeGreaterThan(0);
    for (let t = 0; t < n; t++) if (batch.mask[t]) expect(Number.isFinite(trainer[t])).toBe(true);
  });

  for (const [lo, hi] of [
    [0.7, 1.3],
    [0.9, 1.6],
  ]) {
    it(`Token-MIS classes equal core's rejection mask (token_k1 ${lo}_${hi})`, () => {
      const view = correctionMask(batch, trainer, rollout, 'token_mis', { upper: hi, lower: lo });
      const core = computeRolloutCorrection(batch, trainer, rollout, {
        rolloutIs: null,
        rolloutRs: 'token_k1',
        rolloutRsThreshold: `${lo}_${hi}`,
      });
      let masked = 0;
      let checked = 0;
      for (let t = 0; t < n; t++) {
        // verl's token_k1 keeps −log ρ in [log lo, log hi] (away from the bounds, where float32 rounding decides)
        const k1 = rollout[t] - trainer[t];
        if (batch.mask[t] && Math.min(...[Math.log(lo), Math.log(hi)].map((b) => Math.abs(k1 - b))) > 1e-4) {
          checked++;
          expect(view.classes[t]).toBe(
            k1 < Math.log(lo) || k1 > Math.log(hi) ? MASK_CLASS.masked : MASK_CLASS.kept,
          );
        }
        const want = !batch.mask[t]
          ? MASK_CLASS.unmeasured
          : core.responseMask[t]
            ? MASK_CLASS.kept
            : MASK_CLASS.masked;
        expect(view.classes[t], `position ${t}`).toBe(want);
        if (want === MASK_CLASS.masked) masked++;
      }
      expect(masked).toBeGreaterThan(0);
      expect(checked).toBeGreaterThan(n / 2);
      expect(view.counts.masked).toBe(masked);
      expect(view.maskedFraction).toBeCloseTo(core.metrics['rollout_corr/rollout_rs_masked_fraction'], 6);
      expect(view.configText).toContain(`rollout_rs_threshold=${lo}_${hi}`);
    });

    it(`IcePop classes are core's zero weights (${lo}_${hi}); Token-TIS truncates where ρ > ${hi}`, () => {
      const ice = correctionMask(batch, trainer, rollout, 'token_icepop', { upper: hi, lower: lo });
      const coreIce = computeRolloutCorrection(batch, trainer, rollout, {
        rolloutIs: 'token',
        rolloutIsThreshold: `${lo}_${hi}`,
      });
      const tis = correctionMask(batch, trainer, rollout, 'token_tis', { upper: hi });
      const coreTis = computeRolloutCorrection(batch, trainer, rollout, {
        rolloutIs: 'token',
        rolloutIsThreshold: hi,
      });
      let truncated = 0;
      for (let t = 0; t < n; t++) {
        if (!batch.mask[t]) {
          expect(ice.classes[t]).toBe(MASK_CLASS.unmeasured);
          expect(tis.classes[t]).toBe(MASK_CLASS.unmeasured);
          continue;
        }
        expect(ice.classes[t]).toBe(
          coreIce.rolloutIsWeights?.[t] === 0 ? MASK_CLASS.masked : MASK_CLASS.kept,
        );
        // TIS: truncated exactly where core's weight is the bound and the raw ratio exceeds it
        const rho = Math.exp(trainer[t] - rollout[t]);
        const isTruncated = rho > Math.fround(hi);
        if (isTruncated) {
          truncated++;
          expect(coreTis.rolloutIsWeights?.[t]).toBe(Math.fround(hi));
        }
        expect(tis.classes[t]).toBe(isTruncated ? MASK_CLASS.truncated : MASK_CLASS.kept);
      }
      expect(truncated).toBeGreaterThan(0);
      expect(tis.counts.truncated).toBe(truncated);
      expect(tis.counts.masked).toBe(0);
      expect(ice.counts.masked).toBeGreaterThan(0);
      expect(ice.counts.truncated).toBe(0);
    });
  }

  it('a wider range masks fewer tokens', () => {
    const narrow = correctionMask(batch, trainer, rollout, 'token_mis', { upper: 1.3, lower: 0.7 });
    const wide = correctionMask(batch, trainer, rollout, 'token_mis', { upper: 1.6, lower: 0.6 });
    expect(wide.counts.masked).toBeLessThan(narrow.counts.masked);
  });

  it('tokens without a trainer log-prob are left out, and bad input is refused by name', () => {
    const partial = Float32Array.from(trainer);
    const first = Array.from(batch.mask).indexOf(1);
    partial[first] = Number.NaN;
    const v = correctionMask(batch, partial, rollout, 'token_tis', { upper: 1.2 });
    expect(v.classes[first]).toBe(MASK_CLASS.unmeasured);
    expect(v.counts.measured).toBe(n - observations - 1);
    expect(() => correctionMask(batch, trainer.subarray(1), rollout, 'token_tis', { upper: 2 })).toThrow(
      /trainer's log-probs have/,
    );
    expect(() => correctionMask(batch, trainer, rollout, 'token_icepop', { upper: 2 })).toThrow(
      /needs a finite lower threshold/,
    );
    expect(() => correctionMask(batch, trainer, rollout, 'token_icepop', { upper: 0.5, lower: 2 })).toThrow(
      /lower bound must be <= upper bound/,
    );
    expect(() =>
      correctionMask(batch, new Float32Array(n).fill(Number.NaN), rollout, 'token_tis', { upper: 2 }),
    ).toThrow(/nothing to correct/);
  });
});
