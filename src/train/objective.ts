/**
 * Everything the trainer asks of core, in one module: what Agent Lightning's `_train_step` does between
 * "rollouts are back" and "update the actor" (agentlightning/verl/trainer.py), and the per-token gradient
 * weights of verl's PPO loss for a micro-batch (verl/workers/utils/losses.py:ppo_loss with agg_loss over the
 * mini-batch's global token count and row count). The step (step.ts) owns the engines and the layout; this
 * module only turns rows + log-probs into advantages, weights and metrics.
 *
 * Order of operations, as upstream: rows (RolloutAdapter) → uid = data id → drop `is_drop` rows → trim to a
 * multiple of the mini-batch (same-reward groups first, then seeded random) → [old_log_prob, ref on the
 * engine] → rollout correction (IS weights, rejection mask) → advantages (rollout level or per row, in the
 * reward dtype) → data metrics → per_rollout_mean normalisation → PPO.
 */

import { type BuildResult, buildTrainingBatch } from '../core/aggregate/buildTrainingBatch';
import type { MergeFailureKind } from '../core/aggregate/mergeFailure';
import {
  computeAdvantage,
  getAdvEstimator,
  listAdvEstimators,
  traceUnavailable,
} from '../core/algos/advantage';
import { getAggMode } from '../core/algos/aggLoss';
import { tokenLevelRewardsOf } from '../core/algos/effectiveWeights';
import { indexGroups } from '../core/algos/groups';
import { klPenalty } from '../core/algos/kl';
import { rounder } from '../core/algos/numeric';
import { ppoTokenLosses } from '../core/algos/policyLoss';
import { computeRolloutCorrection } from '../core/algos/rolloutCorrection';
import { computeRolloutLevelAdvantage, normalizeAdvantagesByRollout } from '../core/algos/rolloutLevel';
import { trimBatch } from '../core/algos/trim';
import type { ResponseRows, TrainingBatch } from '../core/batch/types';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { Rollout } from '../core/trace/types';
import type { TrainConfig } from './config';

/** Estimators a training run can use: every registered one whose inputs a run has (not ReMax's greedy baselines). */
export function objectiveEstimators(): string[] {
  return listAdvEstimators()
    .filter((e) => traceUnavailable(e) === null)
    .map((e) => e.name);
}

export type { TrainingBatch };

/** The rows a step trains on, plus how they were selected. */
export interface StepRows {
  build: BuildResult;
  /** the kept rows (is_drop removed, trimmed), in build order */
  batch: TrainingBatch;
  /** per kept row: its index in build.batch */
  kept: Int32Array;
  /** per kept row: 1 when the row kept its engine log-probs */
  rowHasLogProbs: Uint8Array;
  metrics: Record<string, number>;
  mergeFailuresByKind: Record<MergeFailureKind, number>;
}

/** The rows of `batch` named by `rows` (ascending or not), every CSR array re-based. */
export function subsetRows(batch: TrainingBatch, rows: ArrayLike<number>): TrainingBatch {
  const n = rows.length;
  const offsets = new Int32Array(n + 1);
  const promptOffsets = new Int32Array(n + 1);
  for (let k = 0; k < n; k++) {
    const r = rows[k];
    offsets[k + 1] = offsets[k] + batch.offsets[r + 1] - batch.offsets[r];
    promptOffsets[k + 1] = promptOffsets[k] + batch.promptOffsets[r + 1] - batch.promptOffsets[r];
  }
  const T = offsets[n];
  const mask = new Uint8Array(T);
  const responseIds = new Int32Array(T);
  const tokenCall = new Int32Array(T);
  const lps = batch.responseLogProbs ? new Float32Array(T) : null;
  const promptIds = new Int32Array(promptOffsets[n]);
  const pick = <A extends Int32Array | Uint8Array>(src: A, make: (n: number) => A): A => {
    const out = make(n);
    for (let k = 0; k < n; k++) out[k] = src[rows[k]];
    return out;
  };
  for (let k = 0; k < n; k++) {
    const r = rows[k];
    const a = batch.offsets[r];
    const e = batch.offsets[r + 1];
    mask.set(batch.mask.subarray(a, e), offsets[k]);
    responseIds.set(batch.responseIds.subarray(a, e), offsets[k]);
    tokenCall.set(batch.tokenCall.subarray(a, e), offsets[k]);
    if (lps && batch.responseLogProbs) lps.set(batch.responseLogProbs.subarray(a, e), offsets[k]);
    promptIds.set(
      batch.promptIds.subarray(batch.promptOffsets[r], batch.promptOffsets[r + 1]),
      promptOffsets[k],
    );
  }
  return {
    nRows: n,
    offsets,
    mask,
    rowRollout: pick(batch.rowRollout, (m) => new Int32Array(m)),
    rolloutIds: Array.from({ length: n }, (_, k) => batch.rolloutIds[rows[k]]),
    dataIds: Array.from({ length: n }, (_, k) => batch.dataIds[rows[k]]),
    turnIndex: pick(batch.turnIndex, (m) => new Int32Array(m)),
    firstCall: pick(batch.firstCall, (m) => new Int32Array(m)),
    nCalls: pick(batch.nCalls, (m) => new Int32Array(m)),
    isDrop: pick(batch.isDrop, (m) => new Uint8Array(m)),
    promptOffsets,
    promptIds,
    responseIds,
    tokenCall,
    responseLogProbs: lps,
    reward: Float32Array.from({ length: n }, (_, k) => batch.reward[rows[k]]),
  };
}

/** Per-token values of `values` (aligned with `batch`) for the rows named, concatenated in that order. */
export function gatherRows(batch: ResponseRows, values: Float32Array, rows: ArrayLike<number>): Float32Array {
  let n = 0;
  for (let k = 0; k < rows.length; k++) n += batch.offsets[rows[k] + 1] - batch.offsets[rows[k]];
  const out = new Float32Array(n);
  let at = 0;
  for (let k = 0; k < rows.length; k++) {
    const a = batch.offsets[rows[k]];
    const e = batch.offsets[rows[k] + 1];
    out.set(values.subarray(a, e), at);
    at += e - a;
  }
  return out;
}

/** The mini-batch size in rows, as Agent Lightning and verl count it: ppo_mini_batch_size × rollout.n. */
export function miniBatchRows(cfg: TrainConfig): number {
  return cfg.actor_rollout_ref.actor.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n;
}

/**
 * Rollouts → the rows one step trains on: the adapter's rows (trace_aggregator level, limits, token source),
 * `is_drop` rows removed, then the trim to a multiple of the mini-batch with its counters.
 */
export function buildStepRows(
  rollouts: Rollout[],
  cfg: TrainConfig,
  opts: { tokenizer?: ChatTokenizer; trimSeed: number; padTokenId?: number },
): StepRows {
  const ta = cfg.agentlightning.trace_aggregator;
  const trajectory = ta.level === 'trajectory';
  const build = buildTrainingBatch(rollouts, {
    level: ta.level,
    maxPromptLength: trajectory ? ta.trajectory_max_prompt_length : cfg.data.max_prompt_length,
    maxResponseLength: trajectory ? ta.trajectory_max_response_length : cfg.data.max_response_length,
    padTokenId: opts.padTokenId ?? 0,
    rewardFillnaValue: cfg.agentlightning.reward_fillna_value,
    tokenSource: cfg.lab.token_source,
    tokenizer: opts.tokenizer,
  });
  const b = build.batch;
  const metrics: Record<string, number> = { ...build.metrics };
  metrics['training/n_sample_collected'] = b.nRows;
  const notDropped: number[] = [];
  for (let r = 0; r < b.nRows; r++) if (!b.isDrop[r]) notDropped.push(r);
  metrics['training/n_sample_dropped/marked'] = b.nRows - notDropped.length;
  const uids = notDropped.map((r) => b.dataIds[r]);
  const rewards = notDropped.map((r) => b.reward[r]);
  const trim = trimBatch(uids, rewards, {
    miniBatchSize: miniBatchRows(cfg),
    maxPpoUpdateTimes: cfg.agentlightning.max_ppo_update_times,
    seed: opts.trimSeed,
  });
  Object.assign(metrics, trim.counters);
  const kept = Int32Array.from(trim.keep, (k) => notDropped[k]);
  const byKind: Record<MergeFailureKind, number> = {
    template: 0,
    retokenization: 0,
    truncation_or_summarization: 0,
    other: 0,
  };
  for (const f of build.mergeFailures) byKind[f.kind]++;
  return {
    build,
    batch: subsetRows(b, kept),
    kept,
    rowHasLogProbs: Uint8Array.from(kept, (r) => build.rowHasLogProbs[r]),
    metrics,
    mergeFailuresByKind: byKind,
  };
}

export interface Advantages {
  /** per token: the estimator's advantages (before per_rollout_mean normalisation) */
  advantages: Float32Array;
  returns: Float32Array;
  /** per token: what the PPO loss sees (normalised by rollout for per_rollout_mean) */
  lossAdvantages: Float32Array;
  /** truncated IS weights (rollout correction), or null */
  rolloutIsWeights: Float32Array | null;
  /** the response mask after rejection sampling */
  responseMask: Uint8Array;
  metrics: Record<string, number>;
}

function stats(prefix: string, values: ArrayLike<number>, mask?: Uint8Array): Record<string, number> {
  let s = 0;
  let n = 0;
  let mx = Number.NEGATIVE_INFINITY;
  let mn = Number.POSITIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    if (mask && !mask[i]) continue;
    const v = values[i];
    s += v;
    n++;
    if (v > mx) mx = v;
    if (v < mn) mn = v;
  }
  return n
    ? { [`${prefix}/mean`]: s / n, [`${prefix}/max`]: mx, [`${prefix}/min`]: mn }
    : { [`${prefix}/mean`]: Number.NaN, [`${prefix}/max`]: Number.NaN, [`${prefix}/min`]: Number.NaN };
}

/** True when the loss mode divides advantages by rollout (Agent Lightning's per_rollout_mean). */
export function perRolloutMean(cfg: TrainConfig): boolean {
  return cfg.actor_rollout_ref.actor.policy_loss.loss_mode === 'per_rollout_mean';
}

/**
 * Rollout correction, advantages, verl's data metrics and the per-rollout normalisation. `oldLogProbs` are
 * the trainer's (recomputed) log-probs per response token; `rolloutLogProbs` the engine's, or null.
 */
export function computeAdvantages(
  batch: TrainingBatch,
  cfg: TrainConfig,
  oldLogProbs: Float32Array,
  rolloutLogProbs: Float32Array | null,
): Advantages {
  const metrics: Record<string, number> = {};
  const alg = cfg.algorithm;
  const dtype = cfg.lab.reward_dtype;
  const rc = alg.rollout_correction;
  let rolloutIsWeights: Float32Array | null = null;
  let responseMask = batch.mask;
  if (rolloutLogProbs && (rc.rollout_is !== null || rc.rollout_rs !== null)) {
    const r = computeRolloutCorrection(batch, oldLogProbs, rolloutLogProbs, {
      rolloutIs: rc.rollout_is,
      rolloutIsThreshold: rc.rollout_is_threshold,
      rolloutIsBatchNormalize: rc.rollout_is_batch_normalize,
      rolloutRs: rc.rollout_rs,
      rolloutRsThreshold: rc.rollout_rs_threshold,
    });
    rolloutIsWeights = r.rolloutIsWeights;
    responseMask = r.responseMask;
    Object.assign(metrics, r.metrics);
  }
  const rows: ResponseRows = { nRows: batch.nRows, offsets: batch.offsets, mask: responseMask };
  const uids = indexGroups(batch.dataIds);
  const rollouts = indexGroups(batch.rolloutIds);
  const aopts = { normAdvByStd: alg.norm_adv_by_std_in_grpo, gamma: alg.gamma, dtype };
  let advantages: Float32Array;
  let returns: Float32Array;
  if (alg.enable_rollout_level_advantage) {
    const r = computeRolloutLevelAdvantage(
      alg.adv_estimator,
      { rows, rowRewards: batch.reward, uids, rollouts },
      aopts,
    );
    advantages = r.advantages;
    returns = r.returns;
    Object.assign(metrics, r.metrics);
  } else {
    getAdvEstimator(alg.adv_estimator);
    const out = computeAdvantage(
      alg.adv_estimator,
      { rows, tokenLevelRewards: tokenLevelRewardsOf({ ...batch, mask: responseMask }), groups: uids },
      aopts,
    );
    advantages = out.advantages;
    returns = out.returns;
  }
  // verl compute_data_metrics (sequence score = row reward; response length counts every response token)
  const R = rounder(dtype);
  const score = Float64Array.from(batch.reward, (x) => R(x));
  const respLen = new Float64Array(batch.nRows);
  const promptLen = new Float64Array(batch.nRows);
  let clipped = 0;
  const ta = cfg.agentlightning.trace_aggregator;
  const maxResp =
    ta.level === 'trajectory' ? ta.trajectory_max_response_length : cfg.data.max_response_length;
  for (let r = 0; r < batch.nRows; r++) {
    respLen[r] = batch.offsets[r + 1] - batch.offsets[r];
    promptLen[r] = batch.promptOffsets[r + 1] - batch.promptOffsets[r];
    if (respLen[r] === maxResp) clipped++;
  }
  Object.assign(
    metrics,
    stats('critic/score', score),
    stats('critic/rewards', score),
    stats('critic/advantages', advantages, responseMask),
    stats('critic/returns', returns, responseMask),
    stats('response_length', respLen),
    stats('prompt_length', promptLen),
  );
  metrics['response_length/clip_ratio'] = batch.nRows ? clipped / batch.nRows : 0;
  let nGroups = 0;
  let nZero = 0;
  {
    const lo = new Float64Array(uids.nGroups).fill(Number.POSITIVE_INFINITY);
    const hi = new Float64Array(uids.nGroups).fill(Number.NEGATIVE_INFINITY);
    for (let r = 0; r < batch.nRows; r++) {
      const g = uids.group[r];
      lo[g] = Math.min(lo[g], score[r]);
      hi[g] = Math.max(hi[g], score[r]);
    }
    nGroups = uids.nGroups;
    for (let g = 0; g < nGroups; g++) if (hi[g] - lo[g] === 0) nZero++;
  }
  metrics['training/n_groups'] = nGroups;
  metrics['training/n_zero_adv_groups'] = nZero;
  const lossAdvantages = perRolloutMean(cfg)
    ? normalizeAdvantagesByRollout(rows, advantages, rollouts, batch.nRows, dtype)
    : advantages;
  return { advantages, returns, lossAdvantages, rolloutIsWeights, responseMask, metrics };
}

/** Per-row loss coefficients c_r of one mini-batch (verl agg_loss with the mini-batch's global sizes). */
export function miniBatchCoefficients(rows: ResponseRows, cfg: TrainConfig): Float64Array {
  if (perRolloutMean(cfg)) return new Float64Array(rows.nRows).fill(1);
  const a = cfg.actor_rollout_ref.actor;
  let tokens = 0;
  let width = 0;
  for (let r = 0; r < rows.nRows; r++) {
    let c = 0;
    for (let t = rows.offsets[r]; t < rows.offsets[r + 1]; t++) c += rows.mask[t];
    tokens += c;
    width = Math.max(width, rows.offsets[r + 1] - rows.offsets[r]);
  }
  return getAggMode(a.loss_agg_mode).rowCoefficients(rows, {
    dpSize: 1,
    batchNumTokens: tokens,
    globalBatchSize: rows.nRows,
    lossScaleFactor: a.loss_scale_factor,
    paddedWidth: width,
  });
}

/** KL-loss coefficients: agg_loss with loss_agg_mode over the same mini-batch (also for per_rollout_mean). */
function klCoefficients(rows: ResponseRows, cfg: TrainConfig): Float64Array {
  const a = cfg.actor_rollout_ref.actor;
  return miniBatchCoefficients(rows, {
    ...cfg,
    actor_rollout_ref: { ...cfg.actor_rollout_ref, actor: { ...a, policy_loss: { loss_mode: 'vanilla' } } },
  });
}

export interface MicroBatchInput {
  /** the micro-batch's rows (mask = the response mask after rejection) */
  rows: ResponseRows;
  /** per token: coefficient of the row in its mini-batch (miniBatchCoefficients) */
  rowCoef: Float64Array;
  /** KL-loss coefficients per row (when use_kl_loss) */
  klCoef?: Float64Array;
  advantages: Float32Array;
  oldLogProbs: Float32Array;
  logProbs: Float32Array;
  rolloutIsWeights: Float32Array | null;
  refLogProbs: Float32Array | null;
}

export interface MicroBatchResult {
  /** ∂L/∂logπ per response token (L minimised; the engine takes the negation) */
  grads: Float32Array;
  /** this micro-batch's share of the mini-batch loss */
  pgLoss: number;
  klLoss: number;
  /** token counts behind the masked means, to combine micro-batches */
  tokens: number;
  clipped: number;
  clippedLower: number;
  klSum: number;
}

/** The PPO loss of one micro-batch at the current log-probs: per-token gradient weights and metric sums. */
export function microBatchObjective(x: MicroBatchInput, cfg: TrainConfig): MicroBatchResult {
  const a = cfg.actor_rollout_ref.actor;
  const clip = {
    clipRatio: a.clip_ratio,
    clipRatioLow: a.clip_ratio_low,
    clipRatioHigh: a.clip_ratio_high,
    clipRatioC: a.clip_ratio_c,
  };
  const r = ppoTokenLosses(
    {
      rows: x.rows,
      oldLogProb: x.oldLogProbs,
      logProb: x.logProbs,
      advantages: x.advantages,
      rolloutIsWeights: x.rolloutIsWeights,
      advantagesDType: cfg.lab.reward_dtype,
    },
    clip,
  );
  const n = x.rows.offsets[x.rows.nRows];
  const grads = new Float32Array(n);
  let pgLoss = 0;
  let tokens = 0;
  for (let row = 0; row < x.rows.nRows; row++) {
    const c = x.rowCoef[row];
    for (let t = x.rows.offsets[row]; t < x.rows.offsets[row + 1]; t++) {
      if (!x.rows.mask[t]) continue;
      grads[t] = c * r.tokenGrads[t];
      pgLoss += c * r.tokenLosses[t];
      tokens++;
    }
  }
  let klLoss = 0;
  if (a.use_kl_loss && x.refLogProbs && x.klCoef) {
    const kl = klPenalty(x.logProbs, x.refLogProbs, a.kl_loss_type);
    for (let row = 0; row < x.rows.nRows; row++) {
      const c = x.klCoef[row];
      for (let t = x.rows.offsets[row]; t < x.rows.offsets[row + 1]; t++) {
        if (!x.rows.mask[t]) continue;
        grads[t] += a.kl_loss_coef * c * kl.gradLogprob[t];
        klLoss += c * kl.kl[t];
      }
    }
  }
  // ppoTokenLosses reports masked means; turn them back into sums so micro-batches combine exactly.
  const den = tokens + 1e-8;
  return {
    grads,
    pgLoss,
    klLoss,
    tokens,
    clipped: r.pgClipfrac * den,
    clippedLower: r.pgClipfracLower * den,
    klSum: r.ppoKl * den,
  };
}

export { klCoefficients };

/** SFT (verl sft_loss): −Σ m·logπ / (mask tokens of the batch): ∂L/∂logπ = −1/N on every trainable token. */
export function sftGrads(rows: ResponseRows, batchTokens: number): Float32Array {
  const n = rows.offsets[rows.nRows];
  const g = new Float32Array(n);
  for (let t = 0; t < n; t++) if (rows.mask[t]) g[t] = -1 / batchTokens;
  return g;
}

/** Share of rollouts (with a trace) whose calls merged into one row at trajectory level (1 − unmerged / traced). */
export function mergeRateOf(rollouts: Rollout[], cfg: TrainConfig): number {
  const ta = cfg.agentlightning.trace_aggregator;
  try {
    const b = buildTrainingBatch(rollouts, {
      level: 'trajectory',
      maxPromptLength: ta.trajectory_max_prompt_length,
      maxResponseLength: ta.trajectory_max_response_length,
      padTokenId: 0,
      rewardFillnaValue: cfg.agentlightning.reward_fillna_value,
    });
    const traced = b.metrics['training/n_rollouts_w_trace'];
    return traced ? 1 - (b.metrics['training/n_unmerged_rollouts'] ?? 0) / traced : Number.NaN;
  } catch {
    // no rows at all (every rollout failed before its first call)
    return Number.NaN;
  }
}

/**
 * The step's rollouts with the trainer's log-probs and entropies written onto each call's response ids (engine
 * token source: a row's mask-1 tokens are its calls' response ids in order; a token the row does not hold —
 * cut by the response limit, or in a dropped row — gets NaN).
 */
export function annotateTrainerLogProbs(
  rollouts: Rollout[],
  rows: StepRows,
  oldLogProbs: Float32Array,
  entropy: Float32Array,
): Rollout[] {
  const b = rows.batch;
  const out = rollouts.map((r) => ({ ...r, calls: r.calls.map((c) => ({ ...c })) }));
  for (let row = 0; row < b.nRows; row++) {
    const rollout = out[b.rowRollout[row]];
    if (!rollout) continue;
    const cursor = new Map<number, number>();
    for (let t = b.offsets[row]; t < b.offsets[row + 1]; t++) {
      if (!b.mask[t]) continue;
      const ci = b.tokenCall[t];
      const call = rollout.calls[ci];
      const ids = call?.responseTokenIds;
      if (!call || !ids) continue;
      if (!call.trainerLogProbs) {
        call.trainerLogProbs = new Float32Array(ids.length).fill(Number.NaN);
        call.trainerEntropy = new Float32Array(ids.length).fill(Number.NaN);
      }
      const j = cursor.get(ci) ?? 0;
      cursor.set(ci, j + 1);
      if (j >= ids.length || ids[j] !== b.responseIds[t]) continue;
      call.trainerLogProbs[j] = oldLogProbs[t];
      (call.trainerEntropy as Float32Array)[j] = entropy[t];
    }
  }
  return out;
}
