import { describe, expect, it } from 'vitest';
import { groupingFromIds, indexGroups } from '../../../src/core/algos/groups';
import { bf16, type UpstreamError } from '../../../src/core/algos/numeric';
import { getPolicyLoss } from '../../../src/core/algos/policyLoss';
import {
  computeRolloutLevelAdvantage,
  normalizeAdvantagesByRollout,
} from '../../../src/core/algos/rolloutLevel';
import {
  computeTrainerAdvantages,
  computeTrainerView,
  prepareTrainerBatch,
} from '../../../src/core/pipeline/trainer';
import { batchOf, builtOf, outcomeRewards, rolloutsOf, rowsOf } from './helpers';

// rows: rollout A (2 rows, uid u), rollout B (1 row, uid u), rollout C (2 rows, uid v), interleaved
const masks = [[1, 1], [1, 1, 1], [1, 0, 1], [1], [1, 1]];
const rolloutOf = ['A', 'B', 'A', 'C', 'C'];
const uidOf = ['u', 'u', 'u', 'v', 'v'];
const rewardOf = [1, 0, 1, 0.5, 0.5];

function run(
  estimator = 'grpo',
  overrides: Partial<{ masks: number[][]; rewards: number[]; uids: string[] }> = {},
) {
  const rows = rowsOf(overrides.masks ?? masks);
  return {
    rows,
    out: computeRolloutLevelAdvantage(
      estimator,
      {
        rows,
        tokenLevelRewards: outcomeRewards(rows, overrides.rewards ?? rewardOf),
        uids: indexGroups(overrides.uids ?? uidOf),
        rollouts: indexGroups(rolloutOf),
      },
      { normAdvByStd: false },
    ),
  };
}

describe('rollout-level advantages', () => {
  it('runs the estimator on each rollout’s first row and broadcasts × mask', () => {
    const { out } = run();
    // group u: rollouts A (1) and B (0) → mean 0.5; group v: rollout C alone → singleton, A = R
    expect(Array.from(out.rolloutAdvantage)).toEqual([0.5, -0.5, 0.5]);
    expect(Array.from(out.advantages)).toEqual([0.5, 0.5, -0.5, -0.5, -0.5, 0.5, 0, 0.5, 0.5, 0.5, 0.5]);
    expect(out.metrics).toEqual({
      'training/rollout_level_advantage/n_rows': 5,
      'training/rollout_level_advantage/n_rollouts': 3,
      'training/rollout_level_advantage/n_multi_row_rollouts': 2,
      'training/rollout_level_advantage/max_rows_per_rollout': 2,
    });
  });
  it('gives the same result through the per-token path (reinforce_plus_plus_baseline has no row scalars)', () => {
    const { out } = run('reinforce_plus_plus_baseline');
    expect(out.advantages[0]).toBeCloseTo(out.advantages[1], 6);
    expect(out.advantages[6]).toBe(0);
  });
  it('raises when a rollout mixes uids or rewards, or its first row is empty', () => {
    expect(() => run('grpo', { uids: ['u', 'u', 'w', 'v', 'v'] })).toThrow(
      /multiple uid values for rollout_id='A'/,
    );
    expect(() => run('grpo', { rewards: [1, 0, 0.7, 0.5, 0.5] })).toThrow(
      /same scalar token_level_rewards sum; got rollout_id='A'/,
    );
    try {
      run('grpo', { masks: [[0, 0], [1, 1, 1], [1, 0, 1], [1], [1, 1]], rewards: [0, 0, 0, 0.5, 0.5] });
      expect.unreachable();
    } catch (e) {
      expect((e as UpstreamError).kind).toBe('RuntimeError');
      expect((e as Error).message).toMatch(/cannot extract advantages for empty rollout_id='A'/);
    }
  });
  it('normalize_advantages_by_rollout divides by max(1, rollout tokens × N) in the advantages’ dtype', () => {
    const { rows, out } = run();
    const norm = normalizeAdvantagesByRollout(rows, out.advantages, indexGroups(rolloutOf), 5);
    // rollout A: 2 + 2 tokens → 4·5 = 20
    expect(norm[0]).toBeCloseTo(0.5 / 20, 7);
    // rollout C: 1 + 2 tokens → 15
    expect(norm[8]).toBeCloseTo(0.5 / 15, 7);
    const b = normalizeAdvantagesByRollout(rows, out.advantages, indexGroups(rolloutOf), 7, 'bfloat16');
    // divisor 4·7 = 28 is exact in bf16, the quotient is rounded: bf16(0.5/28)
    expect(b[0]).toBe(bf16(0.5 / 28));
    expect(() => normalizeAdvantagesByRollout(rows, out.advantages, indexGroups(rolloutOf), 0)).toThrow(
      /positive/,
    );
  });
});

describe('trainer weights with IS weights', () => {
  const base = batchOf(
    masks.map((m, i) => ({
      mask: m,
      reward: rewardOf[i],
      rollout: rolloutOf[i].charCodeAt(0) - 65,
      dataId: uidOf[i],
    })),
  );
  const n = base.offsets[base.nRows];
  const isw = new Float32Array(n).map((_, t) => 0.5 + (t % 3) * 0.25);
  // engine log-probs −log w with the trainer's old log-probs 0: token-level IS weights exp(0 − (−log w)) = w
  const batch = { ...base, responseLogProbs: isw.map((w) => -Math.log(w)) };
  it('per_rollout_mean at rollout level: weights = −w_IS·A/(T_rollout·N), equal to the loss gradient', () => {
    const opts = {
      advEstimator: 'grpo',
      normAdvByStdInGrpo: false,
      enableRolloutLevelAdvantage: true,
      rewardDtype: 'float32' as const,
      rolloutIs: 'token' as const,
      rolloutIsThreshold: 2,
    };
    const rollouts = rolloutsOf(batch);
    const input = { rollouts, build: builtOf(batch), oldLogProbs: new Float32Array(n) };
    const view = computeTrainerView({ ...input, options: { ...opts, lossMode: 'per_rollout_mean' } });
    const other = computeTrainerView({ ...input, options: { ...opts, lossMode: 'token-mean' } });
    const w = view.rolloutIsWeights as Float32Array;
    for (let t = 0; t < n; t++) expect(w[t]).toBeCloseTo(batch.mask[t] ? isw[t] : 0, 6);
    const adv = normalizeAdvantagesByRollout(
      batch,
      view.advantages,
      groupingFromIds(batch.rowRollout),
      batch.nRows,
    );
    const old = new Float32Array(n);
    const loss = (lp: Float32Array) =>
      getPolicyLoss('per_rollout_mean').compute(
        { rows: batch, oldLogProb: old, logProb: lp, advantages: adv, rolloutIsWeights: w },
        { dpSize: 1 },
      ).pgLoss;
    const fromOther = other.modes.find((m) => m.name === 'per_rollout_mean')?.weights as Float32Array;
    for (let t = 0; t < n; t++) {
      const a = new Float32Array(n);
      const b = new Float32Array(n);
      a[t] = 1e-2;
      b[t] = -1e-2;
      expect(view.selected.weights[t]).toBeCloseTo((loss(a) - loss(b)) / 2e-2, 3);
      expect(fromOther[t]).toBeCloseTo(view.selected.weights[t], 7);
    }
    // the rollout-level advantage of each row, in the adapter's order
    const tb = prepareTrainerBatch(rollouts, builtOf(batch), view.options);
    const perRow = computeTrainerAdvantages(tb, { oldLogProbs: old }).rowAdvantage as Float64Array;
    const byAdapterRow = new Array<number>(batch.nRows);
    tb.sourceRow.forEach((r, i) => {
      byAdapterRow[r] = perRow[i];
    });
    expect(byAdapterRow).toEqual([0.5, -0.5, 0.5, 0.5, 0.5]);
  });
});
