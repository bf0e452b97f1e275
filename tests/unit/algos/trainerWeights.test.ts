import { describe, expect, it } from 'vitest';
import { tokenLevelScores } from '../../../src/core/aggregate/buildTrainingBatch';
import { computeAdvantage } from '../../../src/core/algos/advantage';
import { aggLoss, rowTokenCounts } from '../../../src/core/algos/aggLoss';
import { groupingFromIds, indexGroups } from '../../../src/core/algos/groups';
import { getLossMode } from '../../../src/core/algos/lossModes';
import { getPolicyLoss } from '../../../src/core/algos/policyLoss';
import { normalizeAdvantagesByRollout } from '../../../src/core/algos/rolloutLevel';
import type { TrainingBatch } from '../../../src/core/batch/types';
import type { TrainerOptions } from '../../../src/core/pipeline/options';
import { resolveTrainerOptions } from '../../../src/core/pipeline/options';
import {
  computeTrainerAdvantages,
  computeTrainerView,
  prepareTrainerBatch,
} from '../../../src/core/pipeline/trainer';
import { miniBatchGradient } from '../../../src/core/pipeline/update';
import { mulberry32 } from '../../../src/core/random';
import { batchOf, builtOf, rolloutsOf } from './helpers';

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
const LOSS_MODES = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
  'per_rollout_mean',
];

/** The trainer's view of a hand-built batch (rewards as given: float32). */
function viewOf(b: TrainingBatch, options: Partial<TrainerOptions>) {
  return computeTrainerView({
    rollouts: rolloutsOf(b),
    build: builtOf(b),
    options: { rewardDtype: 'float32', ...options },
  });
}

/** The scalar loss at log-probs `lp` (old = 0), through the real loss implementations. */
function lossAt(
  mode: string,
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

const sumOf = (xs: ArrayLike<number>) => Array.from(xs).reduce((s, x) => s + x, 0);

describe("the trainer's per-token weights", () => {
  for (const mode of LOSS_MODES)
    for (const rolloutLevel of [false, true])
      it(`${mode}${rolloutLevel ? ' (rollout-level)' : ''}: weights equal finite differences of the loss at ratio 1`, () => {
        const opts = {
          advEstimator: 'grpo',
          enableRolloutLevelAdvantage: rolloutLevel,
          lossMode: mode,
          lossScaleFactor: 5,
        };
        const view = viewOf(batch, opts);
        expect(view.selected.name).toBe(mode);
        // the advantages the loss sees: per_rollout_mean divides them by T_rollout·N first
        const adv =
          mode === 'per_rollout_mean'
            ? normalizeAdvantagesByRollout(
                batch,
                view.advantages,
                groupingFromIds(batch.rowRollout),
                batch.nRows,
              )
            : view.advantages;
        // the trainer's global batch info for one mini-batch on one rank: its tokens and rows
        const globals = {
          dpSize: 1,
          lossScaleFactor: 5,
          batchNumTokens: sumOf(batch.mask),
          globalBatchSize: batch.nRows,
        };
        const f = (lp: Float32Array) => lossAt(mode, adv, lp, globals);
        const base = new Float32Array(n);
        // every mode in one view equals the view that selects it
        const other = viewOf(batch, {
          ...opts,
          lossMode: mode === 'token-mean' ? 'per_rollout_mean' : 'token-mean',
        });
        const inOther = other.modes.find((m) => m.name === mode);
        for (let t = 0; t < n; t++) {
          expect(view.selected.weights[t]).toBeCloseTo(centralDiff(f, base, t), 3);
          expect(inOther?.weights[t]).toBeCloseTo(view.selected.weights[t], 6);
        }
        const rs = sumOf(view.selected.rowSums);
        expect(sumOf(view.groups.sums)).toBeCloseTo(rs, 9);
        expect(sumOf(view.selected.rolloutSums)).toBeCloseTo(rs, 9);
        expect(view.selected.total).toBeCloseTo(rs, 9);
        expect(inOther?.total).toBeCloseTo(rs, 9);
      });

  for (const mode of LOSS_MODES)
    it(`${mode}: the registry's row coefficients × −A equal the loss gradient with dp_size 2`, () => {
      // dp_size > 1 needs the global counts (verl 0.8.0 raises without them)
      const globals = { dpSize: 2, lossScaleFactor: 5, batchNumTokens: 31, globalBatchSize: 9 };
      const raw = viewOf(batch, { advEstimator: 'grpo', lossMode: mode }).advantages;
      const m = getLossMode(mode);
      const adv = m.normalizesAdvantages
        ? normalizeAdvantagesByRollout(batch, raw, groupingFromIds(batch.rowRollout), batch.nRows)
        : raw;
      const coef = m.rowCoefficients({ rows: batch, rowCounts: rowTokenCounts(batch), ...globals });
      const f = (lp: Float32Array) => lossAt(mode, adv, lp, globals);
      const base = new Float32Array(n);
      for (let i = 0; i < batch.nRows; i++)
        for (let t = batch.offsets[i]; t < batch.offsets[i + 1]; t++)
          expect(batch.mask[t] ? -adv[t] * coef[i] : 0).toBeCloseTo(centralDiff(f, base, t), 3);
    });

  it('at recorded ratios, clipped tokens get weight 0 and the rest match finite differences', () => {
    const rand = mulberry32(7);
    const oldLp = new Float32Array(n).map(() => -1 - rand());
    const newLp = oldLp.map((x) => x + (rand() - 0.5) * 0.8);
    // in the adapter's order, so the recorded log-probs line up with the rows
    const o = resolveTrainerOptions({
      advEstimator: 'grpo',
      enableRolloutLevelAdvantage: false,
      lossMode: 'token-mean',
      rewardDtype: 'float32',
      balanceBatch: false,
    });
    const tb = prepareTrainerBatch(rolloutsOf(batch), builtOf(batch), o);
    expect(Array.from(tb.sourceRow)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const adv = computeTrainerAdvantages(tb, { oldLogProbs: oldLp });
    const rec = miniBatchGradient(tb, adv, 0, newLp).grad;
    const f = (lp: Float32Array) =>
      getPolicyLoss('vanilla').compute(
        { rows: batch, oldLogProb: oldLp, logProb: lp, advantages: adv.advantages },
        { lossAggMode: 'token-mean', batchNumTokens: sumOf(batch.mask), globalBatchSize: batch.nRows },
      ).pgLoss;
    let zeros = 0;
    for (let t = 0; t < n; t++) {
      if (rec[t] === 0 && batch.mask[t]) zeros++;
      expect(rec[t]).toBeCloseTo(centralDiff(f, newLp, t, 1e-3), 3);
    }
    expect(zeros).toBeGreaterThan(0); // some tokens were clipped
  });

  it('row-scalar and per-token estimator paths agree with computeAdvantage on the adapter reward layout', () => {
    const tokenLevelRewards = tokenLevelScores(batch);
    for (const est of ['grpo', 'rloo', 'opo', 'gpg', 'reinforce_plus_plus', 'reinforce_plus_plus_baseline']) {
      const opts = { advEstimator: est, enableRolloutLevelAdvantage: false, lossMode: 'token-mean' };
      const view = viewOf(batch, opts);
      const ref = computeAdvantage(est, {
        rows: batch,
        tokenLevelRewards,
        groups: indexGroups(batch.dataIds),
      }).advantages;
      for (let t = 0; t < n; t++) expect(view.advantages[t]).toBeCloseTo(ref[t], 6);
      const tb = prepareTrainerBatch(
        rolloutsOf(batch),
        builtOf(batch),
        resolveTrainerOptions({ ...opts, rewardDtype: 'float32' }),
      );
      expect(computeTrainerAdvantages(tb).rowAdvantage === null).toBe(est.startsWith('reinforce'));
    }
  });

  it('token-mean weight is −A·m/Σm', () => {
    const view = viewOf(batch, {
      advEstimator: 'rloo',
      enableRolloutLevelAdvantage: false,
      lossMode: 'token-mean',
    });
    const m = sumOf(batch.mask);
    for (let t = 0; t < n; t++)
      expect(view.selected.weights[t]).toBeCloseTo(batch.mask[t] ? -view.advantages[t] / m : 0, 7);
    // aggLoss of −A·(stop-grad ratio) reproduces Σ weights·1
    const l = new Float32Array(n).map((_, t) => -view.advantages[t]);
    expect(aggLoss(batch, l, 'token-mean', { batchNumTokens: m, globalBatchSize: batch.nRows })).toBeCloseTo(
      sumOf(view.selected.weights),
      6,
    );
  });
});
