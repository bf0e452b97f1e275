import { describe, expect, it } from 'vitest';
import { computeAdvantage } from '../../../src/core/algos/advantage';
import { aggLoss } from '../../../src/core/algos/aggLoss';
import {
  allLossModes,
  effectiveWeights,
  type LossMode,
  tokenLevelRewardsOf,
} from '../../../src/core/algos/effectiveWeights';
import { groupingFromIds, indexGroups } from '../../../src/core/algos/groups';
import { getPolicyLoss } from '../../../src/core/algos/policyLoss';
import { normalizeAdvantagesByRollout } from '../../../src/core/algos/rolloutLevel';
import { mulberry32 } from '../../../src/core/random';
import { batchOf } from './helpers';

// Two groups, three rollouts with two rows each (multi-row rollouts), holes, one empty row.
const batch = batchOf([
  { mask: [1, 1, 0, 1], reward: 1, rollout: 0, dataId: 'q0' },
  { mask: [1, 1], reward: 1, rollout: 0, dataId: 'q0' },
  { mask: [1, 1, 1], reward: 0, rollout: 1, dataId: 'q0' },
  { mask: [1, 0, 0], reward: 0, rollout: 1, dataId: 'q0' },
  { mask: [1, 1, 1, 1, 1], reward: 0.5, rollout: 2, dataId: 'q1' },
  { mask: [0, 0], reward: 0.5, rollout: 2, dataId: 'q1' },
  { mask: [1, 1], reward: -0.5, rollout: 3, dataId: 'q1' },
]);
const n = batch.offsets[batch.nRows];

/** The scalar loss at log-probs `lp` (old = 0), through the real loss implementations. */
function lossAt(
  mode: LossMode,
  advantages: Float32Array,
  lp: Float32Array,
  extra: Record<string, number> = {},
) {
  const old = new Float32Array(n);
  if (mode === 'per_rollout_mean')
    return getPolicyLoss('per_rollout_mean').compute(
      { rows: batch, oldLogProb: old, logProb: lp, advantages },
      extra,
    ).pgLoss;
  return getPolicyLoss('vanilla').compute(
    { rows: batch, oldLogProb: old, logProb: lp, advantages },
    { lossAggMode: mode, ...extra },
  ).pgLoss;
}

function centralDiff(f: (lp: Float32Array) => number, base: Float32Array, t: number, h = 1e-2): number {
  const a = base.slice();
  const b = base.slice();
  a[t] += h;
  b[t] -= h;
  return (f(a) - f(b)) / (2 * h);
}

describe('effective weights', () => {
  for (const mode of [
    'token-mean',
    'seq-mean-token-sum',
    'seq-mean-token-mean',
    'seq-mean-token-sum-norm',
    'per_rollout_mean',
  ] as LossMode[])
    for (const rolloutLevel of [false, true])
      it(`${mode}${rolloutLevel ? ' (rollout-level)' : ''}: weights equal finite differences of the loss at ratio 1`, () => {
        // dp_size > 1 needs the global counts (verl 0.8.0 raises without them)
        const globals = { dpSize: 2, lossScaleFactor: 5, batchNumTokens: 31, globalBatchSize: 9 };
        const opts = { advEstimator: 'grpo', rolloutLevel, lossAggMode: mode, ...globals };
        const ew = effectiveWeights(batch, opts);
        // the advantages the loss sees: per_rollout_mean divides them by T_rollout·N first
        const all = allLossModes(batch, opts);
        const adv =
          mode === 'per_rollout_mean'
            ? normalizeAdvantagesByRollout(
                batch,
                ew.advantages,
                groupingFromIds(batch.rowRollout),
                batch.nRows,
              )
            : ew.advantages;
        const f = (lp: Float32Array) => lossAt(mode, adv, lp, globals);
        const base = new Float32Array(n);
        for (let t = 0; t < n; t++) {
          const fd = centralDiff(f, base, t);
          expect(ew.weights[t]).toBeCloseTo(fd, 3);
          expect(all.modes[mode].weights[t]).toBeCloseTo(ew.weights[t], 6);
        }
        let rs = 0;
        for (const x of ew.rowSums) rs += x;
        let gs = 0;
        for (const x of ew.groupSums) gs += x;
        let ro = 0;
        for (const x of ew.rolloutSums) ro += x;
        expect(gs).toBeCloseTo(rs, 9);
        expect(ro).toBeCloseTo(rs, 9);
        expect(all.modes[mode].total).toBeCloseTo(rs, 9);
      });

  it('at recorded ratios, clipped tokens get weight 0 and the rest match finite differences', () => {
    const rand = mulberry32(7);
    const oldLp = new Float32Array(n).map(() => -1 - rand());
    const newLp = oldLp.map((x) => x + (rand() - 0.5) * 0.8);
    const opts = {
      advEstimator: 'grpo',
      rolloutLevel: false,
      lossAggMode: 'token-mean' as LossMode,
      oldLogProbs: oldLp,
      newLogProbs: newLp,
    };
    const ew = effectiveWeights(batch, opts);
    const rec = ew.recordedWeights as Float32Array;
    const f = (lp: Float32Array) =>
      getPolicyLoss('vanilla').compute(
        { rows: batch, oldLogProb: oldLp, logProb: lp, advantages: ew.advantages },
        { lossAggMode: 'token-mean' },
      ).pgLoss;
    let zeros = 0;
    for (let t = 0; t < n; t++) {
      if (rec[t] === 0 && batch.mask[t]) zeros++;
      expect(rec[t]).toBeCloseTo(centralDiff(f, newLp, t, 1e-3), 3);
    }
    expect(zeros).toBeGreaterThan(0); // some tokens were clipped
  });

  it('row-scalar and per-token estimator paths agree with computeAdvantage on the adapter reward layout', () => {
    for (const est of ['grpo', 'rloo', 'opo', 'gpg', 'reinforce_plus_plus', 'reinforce_plus_plus_baseline']) {
      const ew = effectiveWeights(batch, {
        advEstimator: est,
        rolloutLevel: false,
        lossAggMode: 'token-mean',
      });
      const ref = computeAdvantage(est, {
        rows: batch,
        tokenLevelRewards: tokenLevelRewardsOf(batch),
        groups: indexGroups(batch.dataIds),
      }).advantages;
      for (let t = 0; t < n; t++) expect(ew.advantages[t]).toBeCloseTo(ref[t], 6);
      expect(ew.rowAdvantage === null).toBe(est.startsWith('reinforce'));
    }
  });

  it('token-mean weight is −A·m/Σm', () => {
    const ew = effectiveWeights(batch, {
      advEstimator: 'rloo',
      rolloutLevel: false,
      lossAggMode: 'token-mean',
    });
    let m = 0;
    for (const x of batch.mask) m += x;
    for (let t = 0; t < n; t++)
      expect(ew.weights[t]).toBeCloseTo(batch.mask[t] ? -ew.advantages[t] / m : 0, 7);
    // aggLoss of −A·(stop-grad ratio) reproduces Σ weights·1
    const l = new Float32Array(n).map((_, t) => -ew.advantages[t]);
    expect(aggLoss(batch, l, 'token-mean')).toBeCloseTo(
      ew.weights.reduce((s, x) => s + x, 0),
      6,
    );
  });
});
