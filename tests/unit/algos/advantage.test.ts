import { describe, expect, it } from 'vitest';
import { computeAdvantage, getAdvEstimator, listAdvEstimators } from '../../../src/core/algos/advantage';
import { indexGroups } from '../../../src/core/algos/groups';
import { bf16, UpstreamError } from '../../../src/core/algos/numeric';
import { outcomeRewards, rowsOf } from './helpers';

function run(name: string, masks: number[][], rewards: number[], uids: string[], opts = {}) {
  const rows = rowsOf(masks);
  return {
    rows,
    ...computeAdvantage(
      name,
      { rows, tokenLevelRewards: outcomeRewards(rows, rewards), groups: indexGroups(uids) },
      opts,
    ),
  };
}

describe('advantage estimators', () => {
  it('registers every verl outcome estimator with metadata', () => {
    const names = listAdvEstimators().map((e) => e.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'grpo',
        'rloo',
        'reinforce_plus_plus_baseline',
        'opo',
        'gpg',
        'grpo_passk',
        'reinforce_plus_plus',
        'remax',
      ]),
    );
    for (const e of listAdvEstimators()) {
      expect(e.label.length).toBeGreaterThan(0);
      expect(e.formula.length).toBeGreaterThan(10);
      expect(e.source).toMatch(/core_algos/);
    }
    expect(getAdvEstimator('grpo').options.map((o) => [o.field, o.key, o.default])).toEqual([
      ['normAdvByStd', 'algorithm.norm_adv_by_std_in_grpo', true],
    ]);
    expect(getAdvEstimator('reinforce_plus_plus').options.map((o) => o.key)).toEqual(['algorithm.gamma']);
    // ReMax declares the input a trace cannot give it
    expect(getAdvEstimator('remax').requires.map((r) => r.name)).toEqual(['reward_baselines']);
    for (const e of listAdvEstimators()) if (e.name !== 'remax') expect(e.requires, e.name).toEqual([]);
    expect(() => getAdvEstimator('nope')).toThrow(/unknown advantage estimator 'nope'/);
  });

  it('grpo: (R − mean)/(std + ε) with unbiased std, broadcast over the mask; singleton → R/(1+ε)', () => {
    const { advantages } = run('grpo', [[1, 1], [1, 0, 1], [1], [1]], [1, 0, 0.5, 3], ['a', 'a', 'b', 'c']);
    const std = Math.SQRT1_2; // std of [1, 0], unbiased
    expect(advantages[0]).toBeCloseTo(0.5 / (std + 1e-6), 5);
    expect(advantages[1]).toBeCloseTo(0.5 / (std + 1e-6), 5);
    expect(advantages[2]).toBeCloseTo(-0.5 / (std + 1e-6), 5);
    expect(Math.abs(advantages[3])).toBe(0); // hole (−0 where A < 0, as torch)
    expect(advantages[5]).toBeCloseTo(0.5, 5); // singleton b: mean 0, std 1
    expect(advantages[6]).toBeCloseTo(3, 5);
  });

  it('grpo without std: R − mean; equal rewards give exactly 0', () => {
    const { advantages } = run('grpo', [[1], [1], [1], [1]], [0.3, 0.3, 0.3, 1], ['a', 'a', 'a', 'b'], {
      normAdvByStd: false,
    });
    expect(Array.from(advantages.subarray(0, 3))).toEqual([0, 0, 0]);
    expect(advantages[3]).toBeCloseTo(1, 6);
  });

  it('rloo: leave-one-out baseline', () => {
    const { advantages } = run('rloo', [[1], [1], [1], [1]], [1, 0, 0, 2], ['a', 'a', 'a', 'b']);
    expect(advantages[0]).toBeCloseTo(1 - 0, 6);
    expect(advantages[1]).toBeCloseTo(0 - 0.5, 6);
    expect(advantages[3]).toBeCloseTo(2, 6); // singleton keeps R
  });

  it('opo: length-weighted baseline', () => {
    const { advantages } = run('opo', [[1, 1, 1], [1]], [1, 0], ['a', 'a']);
    const bsl = (3 * 1 + 1 * 0) / 4;
    expect(advantages[0]).toBeCloseTo(1 - bsl, 6);
    expect(advantages[3]).toBeCloseTo(-bsl, 6);
  });

  it('gpg: α = B / #nonzero scales the centred reward', () => {
    const { advantages } = run('gpg', [[1], [1], [1], [1]], [1, 0, 0, 0], ['a', 'a', 'b', 'b']);
    expect(advantages[0]).toBeCloseTo(4 * 0.5, 6);
    expect(advantages[1]).toBeCloseTo(-4 * 0.5, 6);
    expect(advantages[2]).toBe(0);
  });

  it('grpo_passk: only the best row gets (max − second)[/std]; singleton groups raise', () => {
    const { advantages } = run('grpo_passk', [[1], [1], [1]], [0.2, 0.9, 0.5], ['a', 'a', 'a'], {
      normAdvByStd: false,
    });
    expect(advantages[0]).toBe(0);
    expect(advantages[1]).toBeCloseTo(0.4, 6);
    expect(advantages[2]).toBe(0);
    expect(() => run('grpo_passk', [[1]], [1], ['a'])).toThrow(UpstreamError);
  });

  it('reinforce_plus_plus: discounted return restarts at every mask-0 position, then batch whitening', () => {
    const rows = rowsOf([[1, 0, 1, 1]]);
    const r = new Float32Array([1, 0, 0, 2]);
    const { returns, advantages } = computeAdvantage(
      'reinforce_plus_plus',
      { rows, tokenLevelRewards: r, groups: indexGroups(['a']) },
      { gamma: 0.5 },
    );
    // t3: 2; t2: 0 + 0.5·2 = 1; t1 (mask 0): 0 + 0.5·1 = 0.5, then reset; t0: 1 + 0.5·0 = 1
    expect(Array.from(returns)).toEqual([1, 0.5, 1, 2]);
    expect(advantages[1]).toBe(0);
    const valid = [1, 1, 2];
    const mean = 4 / 3;
    const sd = Math.sqrt(valid.reduce((s, x) => s + (x - mean) ** 2, 0) / 2);
    expect(advantages[3]).toBeCloseTo((2 - mean) / sd, 4);
  });

  it('reinforce_plus_plus_baseline raises like masked_var when only one token is valid', () => {
    expect(() => run('reinforce_plus_plus_baseline', [[1], [0]], [1, 0], ['a', 'a'])).toThrow(
      /sum of the mask is one/,
    );
  });

  it('remax: reverse cumsum of masked rewards minus the baseline', () => {
    const rows = rowsOf([[1, 1, 0]]);
    const out = computeAdvantage(
      'remax',
      {
        rows,
        tokenLevelRewards: new Float32Array([0, 1, 5]),
        groups: indexGroups(['a']),
        rewardBaselines: new Float32Array([0.25]),
      },
      {},
    );
    expect(Array.from(out.returns)).toEqual([1, 1, 0]);
    expect(Array.from(out.advantages)).toEqual([0.75, 0.75, 0]);
    expect(() =>
      computeAdvantage('remax', { rows, tokenLevelRewards: new Float32Array(3), groups: indexGroups(['a']) }),
    ).toThrow(/rewardBaselines/);
  });

  it('checks shapes', () => {
    const rows = rowsOf([[1, 1]]);
    expect(() =>
      computeAdvantage('grpo', { rows, tokenLevelRewards: new Float32Array(3), groups: indexGroups(['a']) }),
    ).toThrow(/3 values but the rows hold 2/);
  });

  it('bf16 path rounds every op result to bfloat16', () => {
    const { advantages } = run('grpo', [[1], [1], [1]], [0.1, 0.7, 0.35], ['a', 'a', 'a'], {
      dtype: 'bfloat16',
    });
    for (const a of advantages) expect(bf16(a)).toBe(a);
    const f32 = run('grpo', [[1], [1], [1]], [0.1, 0.7, 0.35], ['a', 'a', 'a']).advantages;
    expect(Math.abs(advantages[0] - f32[0])).toBeLessThan(2 ** -6);
  });
});

describe('bf16', () => {
  it('rounds to nearest even on the top 16 bits', () => {
    expect(bf16(1)).toBe(1);
    expect(bf16(1 + 2 ** -8)).toBe(1); // tie → even
    expect(bf16(1 + 3 * 2 ** -8)).toBe(1 + 2 ** -6); // tie → even (up)
    expect(bf16(1 + 2 ** -8 + 2 ** -12)).toBe(1 + 2 ** -7);
    expect(bf16(-0.1)).toBeCloseTo(-0.10009765625, 12);
    expect(Number.isNaN(bf16(Number.NaN))).toBe(true);
    expect(bf16(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
  });
});
