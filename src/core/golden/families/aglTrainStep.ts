import { buildTrainingBatch, SampleBuildError } from '../../aggregate/buildTrainingBatch';
import { listLossModes } from '../../algos/lossModes';
import type { ReferenceStackName } from '../../algos/stacks';
import { resolveTrainerOptions, type TrainerOptions } from '../../pipeline/options';
import {
  advantagesFor,
  computeTrainerAdvantages,
  lossCoefficients,
  prepareTrainerBatch,
  ROW_STATUS,
} from '../../pipeline/trainer';
import { microBatchGradient, ppoMiniBatches } from '../../pipeline/update';
import { readCompletedRollouts } from '../../trace/io/completedRollouts';
import { formatIssue } from '../../trace/types';
import { registerFamily } from '../registry';
import type { Json } from '../types';
import { GoldenInputError, num } from './tensors';

function optionsOf(p: Record<string, Json>, stack: ReferenceStackName): TrainerOptions {
  const rc = (p.rollout_correction ?? null) as Record<string, Json> | null;
  return resolveTrainerOptions({
    traceAggregatorLevel: p.trace_aggregator_level as TrainerOptions['traceAggregatorLevel'],
    maxPromptLength: p.max_prompt_length as number,
    maxResponseLength: p.max_response_length as number,
    rewardFillnaValue: (p.reward_fillna_value as number) ?? 0,
    advEstimator: p.adv_estimator as string,
    normAdvByStdInGrpo: p.norm_adv_by_std_in_grpo !== false,
    gamma: (p.gamma as number) ?? 1,
    enableRolloutLevelAdvantage: p.enable_rollout_level_advantage !== false,
    rewardDtype: p.reward_dtype === 'float32' ? 'float32' : 'bfloat16',
    clipRatio: (p.clip_ratio as number) ?? 0.2,
    clipRatioLow: (p.clip_ratio_low as number) ?? 0.2,
    clipRatioHigh: (p.clip_ratio_high as number) ?? 0.2,
    clipRatioC: (p.clip_ratio_c as number) ?? 3,
    lossScaleFactor: (p.loss_scale_factor as number | null) ?? null,
    balanceBatch: p.balance_batch !== false,
    rolloutIs: (rc?.rollout_is ?? null) as TrainerOptions['rolloutIs'],
    rolloutIsThreshold: (rc?.rollout_is_threshold ?? 2) as number | string | null,
    rolloutIsBatchNormalize: Boolean(rc?.rollout_is_batch_normalize),
    rolloutRs: (rc?.rollout_rs ?? null) as string | null,
    rolloutRsThreshold: (rc?.rollout_rs_threshold ?? null) as number | string | null,
    referenceStack: stack,
  });
}

const rowsOf = (a: ArrayLike<number>, offsets: Int32Array, n: number) =>
  Array.from({ length: n }, (_, i) => Array.from((a as Float32Array).subarray(offsets[i], offsets[i + 1])));

/**
 * Agent Lightning's `_train_step` order from completed rollouts to every loss mode's per-token ∂L/∂logπ at ratio 1
 * (golden family `agl_train_step`, python/golden/agl_step.py): core's trainer pipeline, rows in the trainer's order.
 */
registerFamily(
  'agl_train_step',
  (c, ctx) => {
    const o = optionsOf(c.params, ctx.stack);
    const imported = readCompletedRollouts(c.input);
    const fatal = imported.issues.filter((i) => i.severity !== 'warning');
    if (fatal.length) throw new GoldenInputError(fatal.map(formatIssue).join('; '));
    let build: ReturnType<typeof buildTrainingBatch>;
    try {
      build = buildTrainingBatch(imported.rollouts, {
        level: o.traceAggregatorLevel,
        maxPromptLength: o.maxPromptLength,
        maxResponseLength: o.maxResponseLength,
        padTokenId: 0,
        rewardFillnaValue: o.rewardFillnaValue,
        callFilter: 'all',
      });
    } catch (e) {
      if (e instanceof SampleBuildError) e.name = e.upstreamClass;
      throw e;
    }
    const tb = prepareTrainerBatch(imported.rollouts, build, o);
    const head = {
      n_sample_collected: tb.counters['training/n_sample_collected'],
      n_sample_dropped_marked: tb.counters['training/n_sample_dropped/marked'],
    };
    if (tb.skipped) return { ...head, n_rows: 0, skipped: true };
    const b = tb.batch;
    const n = b.offsets[b.nRows];
    // old log-probs are recorded per kept row in adapter order; the trainer's rows are in its own order
    let oldLogProbs: Float32Array | undefined;
    const given = c.input.old_log_probs;
    if (Array.isArray(given)) {
      const keptAdapterRows: number[] = [];
      for (let r = 0; r < build.batch.nRows; r++)
        if (tb.rowStatus[r] === ROW_STATUS.trained) keptAdapterRows.push(r);
      const byAdapterRow = new Map(keptAdapterRows.map((r, k) => [r, given[k] as Json[]]));
      oldLogProbs = new Float32Array(n);
      for (let i = 0; i < b.nRows; i++) {
        const row = byAdapterRow.get(tb.sourceRow[i]);
        const len = b.offsets[i + 1] - b.offsets[i];
        if (!row || row.length !== len)
          throw new GoldenInputError(
            `old_log_probs: row for batch row ${tb.sourceRow[i]} has the wrong length`,
          );
        for (let t = 0; t < len; t++) oldLogProbs[b.offsets[i] + t] = num(row[t], 'old_log_probs');
      }
    }
    const adv = computeTrainerAdvantages(tb, { oldLogProbs });
    const weights: Record<string, number[][]> = {};
    const losses: Record<string, number> = {};
    for (const mode of listLossModes()) {
      const coef = lossCoefficients(tb, adv, mode.name);
      const a = advantagesFor(adv, mode.name);
      const w = new Float32Array(n);
      for (let i = 0; i < b.nRows; i++)
        for (let t = b.offsets[i]; t < b.offsets[i + 1]; t++)
          w[t] = adv.responseMask[t]
            ? -a[t] * coef[i] * (adv.rolloutIsWeights ? adv.rolloutIsWeights[t] : 1)
            : 0;
      weights[mode.name] = rowsOf(w, b.offsets, b.nRows);
      // the same loss as a training loop computes it, at log π = old log π: verl's engine splits the mini-batch
      // into micro-batches (2 rows here) whose shares, normalised by the mini-batch's global info, add up
      const [plan] = ppoMiniBatches(tb, adv);
      let loss = 0;
      for (let s = 0; s < plan.rows.length; s += 2) {
        const micro = plan.rows.subarray(s, s + 2);
        const lp = new Float32Array(b.offsets[micro[micro.length - 1] + 1] - b.offsets[micro[0]]);
        lp.set(adv.oldLogProbs.subarray(b.offsets[micro[0]], b.offsets[micro[micro.length - 1] + 1]));
        loss += microBatchGradient(tb, adv, plan, micro, lp, { lossMode: mode.name }).pgLoss;
      }
      losses[mode.name] = loss;
    }
    const out: Record<string, unknown> = {
      ...head,
      skipped: false,
      n_rows: b.nRows,
      rollout_ids: b.rolloutIds,
      response_lengths: Array.from({ length: b.nRows }, (_, i) => b.offsets[i + 1] - b.offsets[i]),
      response_mask: rowsOf(adv.responseMask, b.offsets, b.nRows),
      advantages_dtype: adv.dtype,
      advantages: rowsOf(adv.advantages, b.offsets, b.nRows),
      normalized_advantages: rowsOf(adv.normalizedAdvantages, b.offsets, b.nRows),
      rollout_is_weights: adv.rolloutIsWeights ? rowsOf(adv.rolloutIsWeights, b.offsets, b.nRows) : null,
      weights,
      losses_at_ratio_one: losses,
      adapter_counters: {
        'training/n_sample': build.metrics['training/n_sample'],
        'training/n_truncated_sample': build.metrics['training/n_truncated_sample'],
        'training/n_skipped_empty_rows': build.metrics['training/n_skipped_empty_rows'],
      },
    };
    const rl: Record<string, number> = {};
    const rc: Record<string, number> = {};
    for (const [k, v] of Object.entries(adv.metrics)) {
      if (k.startsWith('training/rollout_level_advantage/')) rl[k] = v;
      if (k.startsWith('rollout_corr/')) rc[k] = v;
    }
    if (o.enableRolloutLevelAdvantage) out.rollout_level_advantage_metrics = rl;
    const exp = c.expected as Record<string, unknown>;
    if (exp && typeof exp === 'object' && 'rollout_correction_metrics' in exp)
      out.rollout_correction_metrics = rc;
    return out;
  },
  [
    'n_sample_collected',
    'n_sample_dropped_marked',
    'n_rows',
    'response_lengths',
    'response_mask',
    'adapter_counters',
    'rollout_level_advantage_metrics',
  ],
);
