import { describe, expect, it } from 'vitest';
import { aggLoss, getAggMode, rowTokenCounts } from '../../../src/core/algos/aggLoss';
import { klPenalty } from '../../../src/core/algos/kl';
import { UpstreamError } from '../../../src/core/algos/numeric';
import { getPolicyLoss, ppoTokenLosses } from '../../../src/core/algos/policyLoss';
import { computeRolloutCorrection, parseRsThresholds } from '../../../src/core/algos/rolloutCorrection';
import { mulberry32 } from '../../../src/core/random';
import { rowsOf } from './helpers';

const rows = rowsOf([
  [1, 1, 0],
  [1, 0, 0],
  [0, 0, 0],
]);
const loss = new Float32Array([1, 2, 100, 4, 100, 100, 100, 100, 100]);

describe('rowTokenCounts', () => {
  it('matches a byte-by-byte count for any alignment and row length', () => {
    const rand = mulberry32(11);
    for (const shift of [0, 1, 2, 3]) {
      const buf = new Uint8Array(600);
      for (let i = 0; i < buf.length; i++) buf[i] = rand() < 0.6 ? 1 : 0;
      const mask = buf.subarray(shift, shift + 590);
      const lens = [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 100, 200, 220];
      const offsets = new Int32Array(lens.length + 1);
      lens.forEach((l, i) => {
        offsets[i + 1] = offsets[i] + l;
      });
      const got = rowTokenCounts({ nRows: lens.length, offsets, mask });
      for (let i = 0; i < lens.length; i++) {
        let c = 0;
        for (let t = offsets[i]; t < offsets[i + 1]; t++) c += mask[t];
        expect(got[i]).toBe(c);
      }
    }
    expect(
      Array.from(rowTokenCounts({ nRows: 1, offsets: Int32Array.of(0, 2), mask: Uint8Array.of(1, 1) })),
    ).toEqual([2]);
  });
});

describe('agg_loss', () => {
  it('token-mean: Σ m ℓ / Σ m × dp, or / batch_num_tokens', () => {
    expect(aggLoss(rows, loss, 'token-mean')).toBeCloseTo(7 / 3, 6);
    expect(aggLoss(rows, loss, 'token-mean', { dpSize: 2, batchNumTokens: 7 })).toBeCloseTo(2, 6);
  });
  it('seq-mean-token-sum / -token-mean over non-empty rows', () => {
    expect(aggLoss(rows, loss, 'seq-mean-token-sum')).toBeCloseTo((3 + 4) / 2, 5);
    expect(aggLoss(rows, loss, 'seq-mean-token-mean')).toBeCloseTo((1.5 + 4) / 2, 5);
    expect(aggLoss(rows, loss, 'seq-mean-token-mean', { globalBatchSize: 11, dpSize: 2 })).toBeCloseTo(
      (5.5 / 11) * 2,
      5,
    );
  });
  it('seq-mean-token-sum-norm (verl 0.8.0): the seq-mean divided by loss_scale_factor or the padded width', () => {
    // row sums 3 and 4 over 2 non-empty rows, padded width 3
    expect(aggLoss(rows, loss, 'seq-mean-token-sum-norm')).toBeCloseTo(7 / 2 / 3, 6);
    expect(aggLoss(rows, loss, 'seq-mean-token-sum-norm', { lossScaleFactor: 7 })).toBeCloseTo(0.5, 6);
    expect(aggLoss(rows, loss, 'seq-mean-token-sum-norm', { paddedWidth: 10 })).toBeCloseTo(0.35, 6);
    expect(
      aggLoss(rows, loss, 'seq-mean-token-sum-norm', { dpSize: 2, globalBatchSize: 4, lossScaleFactor: 7 }),
    ).toBeCloseTo(((7 / 4) * 2) / 7, 6);
  });
  it('dp_size > 1 needs the global counts, as upstream', () => {
    expect(() => aggLoss(rows, loss, 'token-mean', { dpSize: 2 })).toThrow(/batch_num_tokens is required/);
    for (const m of ['seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
      expect(() => aggLoss(rows, loss, m, { dpSize: 2 })).toThrow(/global_batch_size is required/);
  });
  it('all-masked batches: NaN in every mode', () => {
    const empty = rowsOf([[0, 0]]);
    const l = new Float32Array([1, 1]);
    for (const m of ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
      expect(aggLoss(empty, l, m)).toBeNaN();
  });
  it('rejects unknown modes and bad shapes', () => {
    expect(() => getAggMode('mean')).toThrow(/Invalid loss_agg_mode: mean/);
    expect(() => aggLoss(rows, new Float32Array(2), 'token-mean')).toThrow(/2 values/);
  });
  it('row coefficients reproduce the loss as Σ c_r m ℓ', () => {
    for (const mode of [
      'token-mean',
      'seq-mean-token-sum',
      'seq-mean-token-mean',
      'seq-mean-token-sum-norm',
    ]) {
      const o = { dpSize: 2, batchNumTokens: 5, globalBatchSize: 3 };
      const c = getAggMode(mode).rowCoefficients(rows, o);
      let s = 0;
      for (let i = 0; i < rows.nRows; i++)
        for (let t = rows.offsets[i]; t < rows.offsets[i + 1]; t++) s += rows.mask[t] ? c[i] * loss[t] : 0;
      expect(s).toBeCloseTo(aggLoss(rows, loss, mode, o), 5);
    }
  });
});

describe('policy losses', () => {
  const r1 = rowsOf([[1, 1, 1, 1]]);
  const old = new Float32Array([0, 0, 0, 0]);
  it('vanilla PPO: unclipped, clipped, dual-clipped tokens and metrics', () => {
    const lp = new Float32Array([Math.log(1.1), Math.log(1.5), Math.log(0.5), Math.log(5)]);
    const adv = new Float32Array([1, 1, 1, -1]);
    const r = getPolicyLoss('vanilla').compute(
      { rows: r1, oldLogProb: old, logProb: lp, advantages: adv },
      { clipRatio: 0.2, clipRatioC: 3, lossAggMode: 'token-mean' },
    );
    // token 0: −1.1; token 1: clipped at 1.2 → −1.2; token 2: −0.5 (min side of max(−Aρ, −A clip) keeps −0.5);
    // token 3: A<0, ρ=5 → max(5, 1.2) = 5 → dual clip min(3, 5) = 3
    expect(Array.from(r.tokenLosses).map((x) => +x.toFixed(5))).toEqual([-1.1, -1.2, -0.5, 3]);
    expect(r.pgLoss).toBeCloseTo((-1.1 - 1.2 - 0.5 + 3) / 4, 5);
    expect(r.pgClipfrac).toBeCloseTo(1 / 4, 6); // only token 1: ℓ2 > ℓ1
    expect(r.pgClipfracLower).toBeCloseTo(1 / 4, 6);
    expect(r.ppoKl).toBeCloseTo(-(Math.log(1.1) + Math.log(1.5) + Math.log(0.5) + Math.log(5)) / 4, 5);
    expect(Array.from(r.tokenGrads).map((x) => +x.toFixed(5))).toEqual([-1.1, 0, -0.5, 0]);
  });
  it('clip_ratio_c must exceed 1', () => {
    expect(() =>
      ppoTokenLosses({ rows: r1, oldLogProb: old, logProb: old, advantages: old }, { clipRatioC: 1 }),
    ).toThrow(/greater than 1.0/);
  });
  it('per_rollout_mean: masked sum × dp, IS weights multiply the per-token loss', () => {
    const adv = new Float32Array([0.5, 0.5, 0.5, 0.5]);
    const w = new Float32Array([1, 2, 0, 1]);
    const r = getPolicyLoss('per_rollout_mean').compute(
      { rows: rowsOf([[1, 1, 1, 0]]), oldLogProb: old, logProb: old, advantages: adv, rolloutIsWeights: w },
      { dpSize: 2 },
    );
    expect(r.pgLoss).toBeCloseTo(-0.5 * 3 * 2, 6);
  });
});

describe('kl penalties', () => {
  const lp = new Float32Array([-1, -2, -30]);
  const ref = new Float32Array([-1.5, -1, 0]);
  it('k1, abs, k2 and k3 values and gradients', () => {
    expect(Array.from(klPenalty(lp, ref, 'k1').kl)).toEqual([0.5, -1, -30]);
    expect(Array.from(klPenalty(lp, ref, 'abs').gradLogprob)).toEqual([1, -1, -1]);
    const k2 = klPenalty(lp, ref, 'mse');
    expect(k2.kl[0]).toBeCloseTo(0.125, 7);
    expect(k2.gradLogprob[1]).toBeCloseTo(-1, 7);
    const k3 = klPenalty(lp, ref, 'low_var_kl');
    expect(k3.kl[0]).toBeCloseTo(Math.exp(-0.5) + 0.5 - 1, 6);
    expect(k3.gradLogprob[0]).toBeCloseTo(1 - Math.exp(-0.5), 6);
    expect(k3.kl[2]).toBe(10); // clamped log-ratio 20 → e^20 − 21 → output clamp 10
    expect(k3.gradLogprob[2]).toBe(0);
  });
  it("'+' variants: the base estimator's value with k2's gradient (straight-through)", () => {
    for (const base of ['k1', 'abs', 'k2', 'k3', 'low_var_kl']) {
      const plus = klPenalty(lp, ref, `${base}+`);
      expect(Array.from(plus.kl)).toEqual(Array.from(klPenalty(lp, ref, base).kl));
      expect(Array.from(plus.gradLogprob)).toEqual([0.5, -1, -30]);
    }
  });
  it('full and unknown names raise NotImplementedError', () => {
    for (const k of ['full', 'full+', 'bogus', 'bogus+']) {
      try {
        klPenalty(lp, ref, k);
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(UpstreamError);
        expect((e as UpstreamError).kind).toBe('NotImplementedError');
      }
    }
  });
});

describe('rollout correction', () => {
  const rr = rowsOf([
    [1, 1],
    [1, 0],
  ]);
  const old = new Float32Array([0, 0, 0, 0]);
  const roll = new Float32Array([-Math.log(3), 0, Math.log(2), 0]); // log ρ = [ln3, 0, −ln2, ·]
  it('token-level truncated IS with metrics', () => {
    const r = computeRolloutCorrection(rr, old, roll, { rolloutIs: 'token', rolloutIsThreshold: 2 });
    expect(Array.from(r.rolloutIsWeights ?? []).map((x) => +x.toFixed(5))).toEqual([2, 1, 0.5, 0]);
    // verl 0.8.0: the statistics describe the truncated weights; the high/low fractions the raw ones
    expect(r.metrics['rollout_corr/rollout_is_mean']).toBeCloseTo((2 + 1 + 0.5) / 3, 5);
    expect(r.metrics['rollout_corr/rollout_is_max']).toBeCloseTo(2, 5);
    expect(r.metrics['rollout_corr/rollout_is_ratio_fraction_high']).toBeCloseTo(1 / 3, 5);
    expect(r.metrics['rollout_corr/kl']).toBeCloseTo((-Math.log(3) + Math.log(2)) / 3, 5);
  });
  it('sequence-level IS with batch normalisation', () => {
    const r = computeRolloutCorrection(rr, old, roll, {
      rolloutIs: 'sequence',
      rolloutIsThreshold: 5,
      rolloutIsBatchNormalize: true,
    });
    const w = r.rolloutIsWeights as Float32Array;
    // raw: row0 3,3; row1 0.5; mean of per-row means = 1.75
    expect(w[0]).toBeCloseTo(3 / 1.75, 5);
    expect(w[2]).toBeCloseTo(0.5 / 1.75, 5);
    expect(r.metrics['rollout_corr/rollout_is_batch_norm_factor']).toBeCloseTo(1.75, 5);
  });
  it('IcePop thresholds "lo_hi" zero the weights outside the range', () => {
    const r = computeRolloutCorrection(rr, old, roll, { rolloutIs: 'token', rolloutIsThreshold: '0.6_2.5' });
    expect(Array.from(r.rolloutIsWeights ?? []).map((x) => +x.toFixed(5))).toEqual([0, 1, 0, 0]);
    expect(r.metrics['rollout_corr/rollout_is_oob_ratio']).toBeCloseTo(2 / 3, 5);
    for (const bad of ['', '2_1', 'x', '-1'])
      expect(() =>
        computeRolloutCorrection(rr, old, roll, { rolloutIs: 'token', rolloutIsThreshold: bad }),
      ).toThrow(/rollout_is_threshold/);
  });
  it('rejection sampling masks tokens and sequences', () => {
    const tok = computeRolloutCorrection(rr, old, roll, {
      rolloutRs: 'token_k1',
      rolloutRsThreshold: '0.5_2.5',
    });
    // k1 = −log ρ: [−ln3, 0, ln2]; keep within [ln 0.5, ln 2.5]
    expect(Array.from(tok.responseMask)).toEqual([0, 1, 1, 0]);
    expect(tok.metrics['rollout_corr/rollout_rs_masked_fraction']).toBeCloseTo(1 / 3, 5);
    const seq = computeRolloutCorrection(rr, old, roll, { rolloutRs: 'seq_max_k2', rolloutRsThreshold: 0.5 });
    expect(Array.from(seq.responseMask)).toEqual([0, 0, 1, 0]);
    expect(seq.metrics['rollout_corr/rollout_rs_seq_masked_fraction']).toBeCloseTo(0.5, 5);
  });
  it('threshold parsing and errors', () => {
    expect(parseRsThresholds(['token_k1'], 2).get('token_k1')).toEqual({ lower: 0.5, upper: 2 });
    expect(parseRsThresholds(['token_k1', 'seq_mean_k3'], '0.5_2,0.1').get('seq_mean_k3')).toEqual({
      lower: null,
      upper: 0.1,
    });
    expect(() => parseRsThresholds(['token_k2'], '0.1_0.2')).toThrow(/without '_'/);
    expect(() => parseRsThresholds(['token_k2', 'token_k3'], '1,2,3')).toThrow(/exactly 2 thresholds/);
    expect(() =>
      computeRolloutCorrection(rr, old, roll, { rolloutRs: 'token_k9', rolloutRsThreshold: 1 }),
    ).toThrow(/Invalid rollout_rs option: token_k9/);
    expect(() =>
      computeRolloutCorrection(rowsOf([[0]]), new Float32Array(1), new Float32Array(1), {}),
    ).toThrow(/at least one valid token/);
  });
});
