import { describe, expect, it } from 'vitest';
import { aggLoss } from '../../src/core/algos/aggLoss';
import { klPenalty } from '../../src/core/algos/kl';
import { listLossModes } from '../../src/core/algos/lossModes';
import {
  buildRows,
  computeTrainerAdvantages,
  microBatchGradient,
  miniBatchGradient,
  miniBatchRanges,
  ppoMiniBatches,
  prepareTrainerBatch,
  resolveTrainerOptions,
  sftGradient,
  type TrainerOptions,
  trainerDataMetrics,
  trainerEntropy,
} from '../../src/core/pipeline';
import { mulberry32 } from '../../src/core/random';
import type { ModelCall, Rollout } from '../../src/core/trace/types';

function call(prompt: number[], response: number[], lp = -0.3): ModelCall {
  return {
    request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from(prompt),
    responseTokenIds: Int32Array.from(response),
    responseLogProbs: Float32Array.from(response, (_, i) => lp - 0.05 * i),
    httpStatus: 200,
  };
}

const range = (n: number, from: number) => Array.from({ length: n }, (_, i) => from + i);

/**
 * Three groups of four rollouts with mixed rewards; some rollouts make two calls whose second prompt extends the
 * first (a trajectory row with observation tokens, mask 0), so rows differ in length and in trainable tokens.
 */
function batchOfRollouts(): Rollout[] {
  const rand = mulberry32(7);
  const out: Rollout[] = [];
  for (let g = 0; g < 3; g++)
    for (let k = 0; k < 4; k++) {
      const i = g * 4 + k;
      const p0 = range(4 + (i % 3), 100 + i * 20);
      const r0 = range(2 + ((i * 5) % 7), 600 + i * 20);
      const calls = [call(p0, r0)];
      if (i % 2 === 0)
        calls.push(call([...p0, ...r0, 900, 901, 902], range(3 + (i % 4), 700 + i * 20), -0.6));
      const reward = Math.round(rand() * 4) / 4;
      out.push({
        rolloutId: `r${i}`,
        dataId: `g${g}`,
        isTrain: true,
        state: 'succeeded',
        calls,
        rewards: [{ value: reward }],
        finalReward: reward,
        metadata: {},
        step: 0,
        sampleIdxInStep: i,
      });
    }
  return out;
}

function prepared(partial: Partial<TrainerOptions>) {
  const o = resolveTrainerOptions(partial);
  const rollouts = batchOfRollouts();
  const tb = prepareTrainerBatch(rollouts, buildRows(rollouts, o), o);
  const adv = computeTrainerAdvantages(tb);
  // the current policy: near the old one (ratios inside the clip range, so the loss is smooth there)
  const rand = mulberry32(11);
  const current = adv.oldLogProbs.map((x) => x + (rand() - 0.5) * 0.1);
  return { o, tb, adv, current };
}

const tokensOf = (tb: ReturnType<typeof prepared>['tb'], values: Float32Array, rows: ArrayLike<number>) => {
  const parts: number[] = [];
  for (const r of Array.from(rows))
    parts.push(...values.subarray(tb.batch.offsets[r], tb.batch.offsets[r + 1]));
  return Float32Array.from(parts);
};

describe('the actor update on the trainer pipeline (verl 0.8.0 engine)', () => {
  it('micro-batches with the mini-batch’s global batch info add up to the mini-batch’s loss and gradient, in every loss mode', () => {
    for (const mode of listLossModes()) {
      const { tb, adv, current } = prepared({ ppoMiniBatchSize: 6, lossMode: mode.name });
      const plans = ppoMiniBatches(tb, adv);
      expect(plans.map((p) => Array.from(p.rows))).toEqual(
        miniBatchRanges(tb).map(([a, b]) => range(b - a, a)),
      );
      for (const plan of plans) {
        const whole = miniBatchGradient(tb, adv, plan.index, tokensOf(tb, current, plan.rows), mode.name);
        // micro-batches of 2 rows, visited in a different order than the mini-batch's
        const rows = Array.from(plan.rows).reverse();
        let loss = 0;
        for (let s = 0; s < rows.length; s += 2) {
          const micro = rows.slice(s, s + 2);
          const g = microBatchGradient(tb, adv, plan, micro, tokensOf(tb, current, micro), {
            lossMode: mode.name,
          });
          loss += g.pgLoss;
          const start = tb.batch.offsets[plan.rows[0]];
          let at = 0;
          for (const r of micro)
            for (let t = tb.batch.offsets[r]; t < tb.batch.offsets[r + 1]; t++)
              expect(g.grad[at++], `${mode.name} row ${r}`).toBeCloseTo(whole.grad[t - start], 9);
        }
        expect(loss).toBeCloseTo(whole.loss, 6);
        expect(whole.loss).not.toBe(0);
      }
    }
  });

  it('the gradient is the derivative of the loss it reports (policy + KL term), by finite differences', () => {
    for (const lossMode of ['token-mean', 'seq-mean-token-mean', 'per_rollout_mean']) {
      const { tb, adv, current } = prepared({ ppoMiniBatchSize: 6, lossMode });
      const [plan] = ppoMiniBatches(tb, adv);
      const micro = Array.from(plan.rows).slice(0, 3);
      const ref = adv.oldLogProbs.map((x, i) => x - 0.2 + 0.01 * (i % 5));
      const kl = { refLogProbs: ref, coef: 0.5, type: 'low_var_kl', aggMode: 'seq-mean-token-sum' };
      const lp = tokensOf(tb, current, micro);
      const total = (x: Float32Array) => {
        const g = microBatchGradient(tb, adv, plan, micro, x, { kl });
        return g.pgLoss + kl.coef * g.klLoss;
      };
      const g = microBatchGradient(tb, adv, plan, micro, lp, { kl });
      expect(g.klLoss).toBeGreaterThan(0);
      const mask = tokensOf(tb, Float32Array.from(adv.responseMask), micro);
      let checked = 0;
      for (let t = 0; t < lp.length; t++) {
        const eps = 1e-3;
        const up = Float32Array.from(lp);
        const down = Float32Array.from(lp);
        up[t] += eps;
        down[t] -= eps;
        const fd = (total(up) - total(down)) / (2 * eps);
        if (!mask[t]) {
          expect(g.grad[t]).toBe(0);
          continue;
        }
        expect(Math.abs(fd - g.grad[t]), `${lossMode} token ${t}`).toBeLessThan(
          2e-3 * Math.abs(g.grad[t]) + 2e-5,
        );
        checked++;
      }
      expect(checked).toBeGreaterThan(10);
    }
  });

  it('the KL term is aggregated with loss_agg_mode and the mini-batch’s global info, also under per_rollout_mean', () => {
    const { tb, adv, current } = prepared({ ppoMiniBatchSize: 6, lossMode: 'per_rollout_mean' });
    const [plan] = ppoMiniBatches(tb, adv);
    const ref = adv.oldLogProbs.map((x) => x - 0.1);
    const rows = Array.from(plan.rows);
    let kl = 0;
    for (const [a, b] of [
      [0, 2],
      [2, 6],
    ]) {
      const micro = rows.slice(a, b);
      kl += microBatchGradient(tb, adv, plan, micro, tokensOf(tb, current, micro), {
        kl: { refLogProbs: ref, coef: 1, type: 'k1', aggMode: 'token-mean' },
      }).klLoss;
    }
    // verl: agg_loss(kld, response_mask, token-mean, batch_num_tokens = the mini-batch's tokens)
    const lp = tokensOf(tb, current, rows);
    const r = tokensOf(tb, ref, rows);
    const m = tokensOf(tb, Float32Array.from(adv.responseMask), rows);
    let s = 0;
    let n = 0;
    const pen = klPenalty(lp, r, 'k1').kl;
    for (let t = 0; t < pen.length; t++)
      if (m[t]) {
        s += pen[t];
        n++;
      }
    expect(n).toBe(plan.batchNumTokens);
    expect(kl).toBeCloseTo(s / n, 6);
  });

  it('epochs repeat the mini-batches; a drawn order is cut into mini-batches of the same size; bad input is refused', () => {
    const { tb, adv } = prepared({ ppoMiniBatchSize: 6 });
    const n = tb.batch.nRows;
    expect(n).toBeGreaterThanOrEqual(12);
    const twice = ppoMiniBatches(tb, adv, { epochs: 2 });
    expect(twice.length).toBe(2 * tb.nMiniBatches);
    expect(twice.map((p) => p.epoch)).toEqual([
      ...Array(tb.nMiniBatches).fill(0),
      ...Array(tb.nMiniBatches).fill(1),
    ]);
    const reversed = range(n, 0).reverse();
    const drawn = ppoMiniBatches(tb, adv, { order: () => reversed });
    expect(Array.from(drawn[0].rows)).toEqual(reversed.slice(0, 6));
    let tokens = 0;
    for (const r of reversed.slice(0, 6))
      for (let t = tb.batch.offsets[r]; t < tb.batch.offsets[r + 1]; t++) tokens += adv.responseMask[t];
    expect(drawn[0]).toMatchObject({ batchNumTokens: tokens, globalBatchSize: 6 });
    expect(() => ppoMiniBatches(tb, adv, { order: () => [0, 0, ...range(n - 2, 2)] })).toThrow(
      /not a permutation/,
    );
    expect(() => ppoMiniBatches(tb, adv, { epochs: 0 })).toThrow(/ppo_epochs/);
    const plan = ppoMiniBatches(tb, adv)[0];
    const outside = tb.batch.nRows - 1;
    expect(() => microBatchGradient(tb, adv, plan, [outside], new Float32Array(1))).toThrow(
      /is not in mini-batch 0/,
    );
    expect(() => microBatchGradient(tb, adv, plan, [plan.rows[0]], new Float32Array(1))).toThrow(
      /holds \d+ tokens/,
    );
  });

  it('entropy, data and SFT metrics follow verl: agg_loss over the padded width, scores in bf16, clip ratios at the padded widths', () => {
    const { tb, adv } = prepared({ maxResponseLength: 9, maxPromptLength: 6 });
    const ent = Float32Array.from(adv.oldLogProbs, (_, i) => 1 + (i % 3));
    expect(trainerEntropy(tb, ent, 'token-mean')).toBeCloseTo(aggLoss(tb.batch, ent, 'token-mean'), 6);
    const sumNorm = trainerEntropy(tb, ent, 'seq-mean-token-sum-norm');
    expect(sumNorm).toBeCloseTo(aggLoss(tb.batch, ent, 'seq-mean-token-sum') / 9, 6);
    const m = trainerDataMetrics(tb, adv);
    const b = tb.batch;
    const rewards = Array.from(tb.rewards);
    expect(m['critic/score/max']).toBe(Math.max(...rewards));
    expect(m['critic/score/mean']).toBeCloseTo(rewards.reduce((a, x) => a + x, 0) / rewards.length, 2);
    const lens = Array.from({ length: b.nRows }, (_, r) => b.offsets[r + 1] - b.offsets[r]);
    expect(m['response_length/max']).toBe(Math.max(...lens));
    expect(m['response_length/clip_ratio']).toBeCloseTo(lens.filter((x) => x === 9).length / lens.length, 6);
    expect(m['response_length/clip_ratio']).toBeGreaterThan(0);
    expect(m['training/n_groups']).toBe(3);
    expect(m['critic/n_transition_after_dropping']).toBe(b.nRows);
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (let t = 0; t < adv.advantages.length; t++)
      if (adv.responseMask[t]) {
        lo = Math.min(lo, adv.advantages[t]);
        hi = Math.max(hi, adv.advantages[t]);
      }
    expect([m['critic/advantages/min'], m['critic/advantages/max']]).toEqual([lo, hi]);
    const g = sftGradient(b, 40);
    for (let t = 0; t < g.length; t++) expect(g[t]).toBe(b.mask[t] ? Math.fround(-1 / 40) : 0);
    expect(() => sftGradient(b, 0)).toThrow(/batch_num_tokens/);
  });
});
