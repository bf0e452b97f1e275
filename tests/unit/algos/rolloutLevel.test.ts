import { describe, expect, it } from 'vitest';
import { allLossModes, effectiveWeights } from '../../../src/core/algos/effectiveWeights';
import { groupingFromIds, indexGroups } from '../../../src/core/algos/groups';
import { bf16, type UpstreamError } from '../../../src/core/algos/numeric';
import { getPolicyLoss } from '../../../src/core/algos/policyLoss';
import {
  computeRolloutLevelAdvantage,
  normalizeAdvantagesByRollout,
} from '../../../src/core/algos/rolloutLevel';
import { batchOf, outcomeRewards, rowsOf } from './helpers';

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

describe('effective weights with IS weights', () => {
  const batch = batchOf(
    masks.map((m, i) => ({
      mask: m,
      reward: rewardOf[i],
      rollout: rolloutOf[i].charCodeAt(0) - 65,
      dataId: uidOf[i],
    })),
  );
  const n = batch.offsets[batch.nRows];
  const isw = new Float32Array(n).map((_, t) => 0.5 + (t % 3) * 0.25);
  it('per_rollout_mean at rollout level: weights = −dp·w_IS·A/(T_rollout·N), equal to the loss gradient', () => {
    const opts = {
      advEstimator: 'grpo',
      normAdvByStd: false,
      rolloutLevel: true,
      dpSize: 2,
      batchNumTokens: 22,
      globalBatchSize: 10,
      rolloutIsWeights: isw,
    };
    const ew = effectiveWeights(batch, { ...opts, lossAggMode: 'per_rollout_mean' });
    const all = allLossModes(batch, opts);
    const adv = normalizeAdvantagesByRollout(
      batch,
      ew.advantages,
      groupingFromIds(batch.rowRollout),
      batch.nRows,
    );
    const old = new Float32Array(n);
    const loss = (lp: Float32Array) =>
      getPolicyLoss('per_rollout_mean').compute(
        { rows: batch, oldLogProb: old, logProb: lp, advantages: adv, rolloutIsWeights: isw },
        { dpSize: 2 },
      ).pgLoss;
    for (let t = 0; t < n; t++) {
      const a = new Float32Array(n);
      const b = new Float32Array(n);
      a[t] = 1e-2;
      b[t] = -1e-2;
      expect(ew.weights[t]).toBeCloseTo((loss(a) - loss(b)) / 2e-2, 3);
      expect(all.modes.per_rollout_mean.weights[t]).toBeCloseTo(ew.weights[t], 7);
    }
    expect(Array.from(ew.rowAdvantage ?? [])).toEqual([0.5, -0.5, 0.5, 0.5, 0.5]);
  });
});
