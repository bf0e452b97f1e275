import { describe, expect, it } from 'vitest';
import { listLossModes } from '../../src/core/algos/lossModes';
import { bf16 } from '../../src/core/algos/numeric';
import {
  DEFAULT_TRAINER_OPTIONS,
  resolveTrainerOptions,
  TrainerOptionError,
} from '../../src/core/pipeline/options';
import {
  balanceOrder,
  buildRows,
  computeTrainerAdvantages,
  computeTrainerView,
  miniBatchRanges,
  prepareTrainerBatch,
  ROW_STATUS,
} from '../../src/core/pipeline/trainer';
import { miniBatchGradient } from '../../src/core/pipeline/update';
import type { ModelCall, Rollout } from '../../src/core/trace/types';

function call(prompt: number[], response: number[]): ModelCall {
  return {
    request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from(prompt),
    responseTokenIds: Int32Array.from(response),
    responseLogProbs: Float32Array.from(response, (_, i) => -0.2 - 0.1 * i),
    httpStatus: 200,
  };
}

function rollout(id: string, group: string, reward: number | null, calls: ModelCall[], idx = 0): Rollout {
  return {
    rolloutId: id,
    dataId: group,
    isTrain: true,
    state: reward === null ? 'failed' : 'succeeded',
    calls,
    rewards: reward === null ? [] : [{ value: reward }],
    finalReward: reward,
    metadata: {},
    step: 0,
    sampleIdxInStep: idx,
  };
}

const ids = (n: number, from = 10) => Array.from({ length: n }, (_, i) => from + i);

/** A 4+4 group: four successes, four failures, one row each. */
const fourPlusFour = Array.from({ length: 8 }, (_, i) =>
  rollout(`r${i}`, 'g', i < 4 ? 1 : 0, [call(ids(3, 100 + i), ids(4 + i))], i),
);

describe('the trainer pipeline (Agent Lightning 1.0 order)', () => {
  it('computes advantages in bf16 by default, with float32 as the labelled alternative: ±0.934 vs ±0.935', () => {
    const bfv = computeTrainerView({ rollouts: fourPlusFour });
    const f32 = computeTrainerView({ rollouts: fourPlusFour, options: { rewardDtype: 'float32' } });
    expect(bfv.advantagesDType).toBe('bfloat16');
    expect(f32.advantagesDType).toBe('float32');
    const first = (v: typeof bfv) => v.advantages[v.batch.offsets[0]];
    // std of [1,1,1,1,0,0,0,0] (unbiased) = 0.5345: 0.5/0.5345 = 0.9354 in float32; bf16 rounds the std first
    const a32 = Math.abs(first(f32));
    const a16 = Math.abs(first(bfv));
    expect(a32).toBeCloseTo(0.9354, 4);
    expect(a16).toBe(bf16(0.5 / bf16(Math.sqrt(8 / 7) / 2)));
    expect(a16).toBeCloseTo(0.934, 3);
    // every weight differs by about 0.1 %
    const w16 = bfv.modes.find((m) => m.name === 'token-mean')?.weights as Float32Array;
    const w32 = f32.modes.find((m) => m.name === 'token-mean')?.weights as Float32Array;
    for (let t = 0; t < w16.length; t++) expect(Math.abs(w16[t] / w32[t] - 1)).toBeGreaterThan(5e-4);
  });

  it('removes is_drop rows before advantages: group statistics are those of the kept rows', () => {
    const long = rollout('long', 'g', 1, [call(ids(50), ids(5))], 8);
    const withDrop = computeTrainerView({
      rollouts: [...fourPlusFour, long],
      options: { maxPromptLength: 20 },
    });
    const without = computeTrainerView({ rollouts: fourPlusFour, options: { maxPromptLength: 20 } });
    const r = withDrop.batch.nRows - 1;
    expect(withDrop.batch.rolloutIds[r]).toBe('long');
    expect(withDrop.rowStatus[r]).toBe(ROW_STATUS.isDrop);
    expect(withDrop.counters['training/n_sample_dropped/marked']).toBe(1);
    expect(withDrop.counters['training/n_sample_trained']).toBe(8);
    // the dropped row gets nothing, and the others are exactly as if it had never been there
    for (let t = withDrop.batch.offsets[r]; t < withDrop.batch.offsets[r + 1]; t++)
      for (const m of withDrop.modes) expect(m.weights[t]).toBe(0);
    for (const m of withDrop.modes) {
      const o = without.modes.find((x) => x.name === m.name);
      expect(Array.from(m.rolloutSums.subarray(0, 8))).toEqual(Array.from(o?.rolloutSums ?? []));
    }
    // every row dropped: the step is skipped, not an error
    const all = computeTrainerView({ rollouts: fourPlusFour, options: { maxPromptLength: 2 } });
    expect(all.skipped).toBe(true);
    expect(all.selected.total).toBe(0);
  });

  it('rollout-level advantage skips rollouts that produced no rows (no calls, or only failed calls)', () => {
    const noCalls = rollout('none', 'g', 1, [], 9);
    const failed = rollout('failed', 'g', null, [{ ...call(ids(3), ids(2)), httpStatus: 500 }], 10);
    const v = computeTrainerView({ rollouts: [noCalls, ...fourPlusFour, failed] });
    expect(v.metrics['training/rollout_level_advantage/n_rollouts']).toBe(8);
    expect(v.selected.rolloutSums[0]).toBe(0);
    const plain = computeTrainerView({ rollouts: fourPlusFour });
    expect(Array.from(v.selected.rolloutSums.subarray(1, 9))).toEqual(Array.from(plain.selected.rolloutSums));
  });

  it('fills failed rollouts with reward_fillna_value and trains on them', () => {
    const rs = [...fourPlusFour.slice(0, 4), rollout('f', 'g', null, [call(ids(3, 300), ids(4))], 4)];
    const v0 = computeTrainerView({ rollouts: rs });
    const v1 = computeTrainerView({ rollouts: rs, options: { rewardFillnaValue: 1 } });
    expect(v0.selected.rolloutSums[4]).toBeGreaterThan(0); // reward 0 among 1s: pushed down
    expect(v1.selected.total).toBe(0); // all equal: no signal
  });

  it('trims to a multiple of the mini-batch, zero-variance groups first, seeded', () => {
    const other = Array.from({ length: 3 }, (_, i) =>
      rollout(`s${i}`, 'same', 1, [call(ids(3, 500 + i), ids(3))], 20 + i),
    );
    const o = resolveTrainerOptions({ ppoMiniBatchSize: 4 });
    const rs = [...fourPlusFour, ...other];
    const tb = prepareTrainerBatch(rs, buildRows(rs, o), o);
    expect(tb.counters['training/n_sample_dropped/same_reward']).toBe(3);
    expect(tb.counters['training/n_sample_trained']).toBe(8);
    expect(tb.nMiniBatches).toBe(2);
    expect(miniBatchRanges(tb)).toEqual([
      [0, 4],
      [4, 8],
    ]);
    const again = prepareTrainerBatch(rs, buildRows(rs, o), o);
    expect(Array.from(again.sourceRow)).toEqual(Array.from(tb.sourceRow));
  });

  it('balance_batch order: sorted by length, even positions then odd ones reversed', () => {
    expect(Array.from(balanceOrder([5, 1, 4, 2, 3]))).toEqual([1, 4, 0, 2, 3]);
    expect(Array.from(balanceOrder([2, 2, 2]))).toEqual([0, 2, 1]);
  });

  it('per mini-batch: ∂L/∂logπ at the old log-probs equals the view’s weights; a ratio change clips', () => {
    const o = resolveTrainerOptions({ ppoMiniBatchSize: 4 });
    const tb = prepareTrainerBatch(fourPlusFour, buildRows(fourPlusFour, o), o);
    const adv = computeTrainerAdvantages(tb);
    const view = computeTrainerView({ rollouts: fourPlusFour, options: { ppoMiniBatchSize: 4 } });
    for (const mode of listLossModes()) {
      const mv = view.modes.find((m) => m.name === mode.name);
      for (const [k, [a, b]] of miniBatchRanges(tb).entries()) {
        const t0 = tb.batch.offsets[a];
        const t1 = tb.batch.offsets[b];
        const g = miniBatchGradient(tb, adv, k, adv.oldLogProbs.slice(t0, t1), mode.name);
        for (let i = a; i < b; i++) {
          const src = tb.sourceRow[i];
          for (let t = 0; t < tb.batch.offsets[i + 1] - tb.batch.offsets[i]; t++)
            expect(g.grad[tb.batch.offsets[i] - t0 + t]).toBeCloseTo(
              mv?.weights[view.batch.offsets[src] + t] ?? Number.NaN,
              7,
            );
        }
      }
    }
    // a log-prob far above the old one: positive advantages clip, their gradient is 0
    const t1 = tb.batch.offsets[4];
    const lp = adv.oldLogProbs.slice(0, t1).map((x) => x + 1);
    const g = miniBatchGradient(tb, adv, 0, lp, 'token-mean');
    for (let t = 0; t < t1; t++) if (adv.advantages[t] > 0) expect(g.grad[t]).toBe(0);
    expect(g.pgClipfrac).toBeGreaterThan(0);
    expect(() => miniBatchGradient(tb, adv, 0, new Float32Array(3))).toThrow(/holds \d+ tokens/);
  });

  it('refuses options upstream would not run, naming the upstream key and the flag', () => {
    expect(() => resolveTrainerOptions({ advEstimator: 'remax' })).toThrow(TrainerOptionError);
    expect(() => resolveTrainerOptions({ advEstimator: 'remax' })).toThrow(
      /algorithm.adv_estimator \(--adv-estimator\).*reward_baselines/,
    );
    expect(() => resolveTrainerOptions({ lossMode: 'mean' })).toThrow(/--loss-mode.*token-mean/);
    expect(() => resolveTrainerOptions({ policyLossMode: 'token-mean' })).toThrow(
      /policy_loss.loss_mode \(--loss-mode\): must be one of vanilla, per_rollout_mean/,
    );
    expect(() => resolveTrainerOptions({ maxPromptLength: 0 })).toThrow(/trajectory_max_prompt_length.*≥ 1/);
    expect(() => resolveTrainerOptions({ clipRatioC: 1 })).toThrow(/clip_ratio_c/);
    expect(() => resolveTrainerOptions({ bogus: 1 } as never)).toThrow(/unknown trainer option 'bogus'/);
    expect(resolveTrainerOptions()).toEqual(DEFAULT_TRAINER_OPTIONS);
    // Agent Lightning 1.0's defaults over verl 0.8.0's
    expect(DEFAULT_TRAINER_OPTIONS).toMatchObject({
      traceAggregatorLevel: 'trajectory',
      maxPromptLength: 2048,
      maxResponseLength: 8192,
      enableRolloutLevelAdvantage: true,
      lossMode: 'per_rollout_mean',
      rewardDtype: 'bfloat16',
      clipRatioC: 3,
    });
    // at transition level Agent Lightning's trainer.py builds samples with data.max_prompt_length /
    // data.max_response_length (verl's 512 / 512), not the trajectory limits
    const t = resolveTrainerOptions({ traceAggregatorLevel: 'transition' });
    expect([t.maxPromptLength, t.maxResponseLength]).toEqual([512, 512]);
    expect(
      resolveTrainerOptions({ traceAggregatorLevel: 'transition', dataMaxResponseLength: 64 })
        .maxResponseLength,
    ).toBe(64);
    // null clip bounds fall back to clip_ratio, as verl's actor does
    expect(resolveTrainerOptions({ clipRatio: 0.3, clipRatioLow: null }).clipRatioLow).toBe(0.3);
    // the loss mode the two upstream keys select
    expect(
      resolveTrainerOptions({ policyLossMode: 'vanilla', lossAggMode: 'seq-mean-token-mean' }).lossMode,
    ).toBe('seq-mean-token-mean');
    expect(resolveTrainerOptions({ lossAggMode: 'seq-mean-token-mean' }).lossMode).toBe('per_rollout_mean');
  });

  it('seq-mean-token-sum-norm divides by max_response_length (the padded width), not the longest row', () => {
    const v = computeTrainerView({
      rollouts: fourPlusFour,
      options: { lossMode: 'seq-mean-token-sum-norm', maxResponseLength: 100 },
    });
    const w = v.selected.weights;
    // row 0: −A / (rows · 100)
    expect(w[0]).toBeCloseTo(-v.advantages[0] / (8 * 100), 9);
  });
});
