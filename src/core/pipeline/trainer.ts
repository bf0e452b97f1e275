/**
 * What Agent Lightning 1.0's trainer does with a batch of rollouts, step by step as upstream orders it
 * (agentlightning/verl/trainer.py `_train_step`, rollout_adapter.py), on core's functions:
 *
 *  1. `RolloutAdapter.get_train_data_batch`: rows, masks, merges, truncation, bf16 rewards (buildTrainingBatch).
 *  2. uid = data_id; rows marked `is_drop` (prompt over max_prompt_length) leave the batch, before anything is
 *     counted or computed.
 *  3. Trimming to a multiple of the mini-batch (only when `ppoMiniBatchSize` is set): rows of zero-variance groups
 *     first, then random rows; upstream shuffles with Python's unseeded `random`, we with `trimSeed`. Nothing left:
 *     the step is skipped, as upstream skips it.
 *  4. `trainer.balance_batch`: rows reordered by sequence length (dp = 1: sorted, then small ones at both ends),
 *     which decides rollout-level representatives and mini-batch membership.
 *  5. old log-probs (the trainer's policy; given by the caller, else the engine's: ratio 1 everywhere).
 *  6. token_level_rewards = token_level_scores in the reward dtype (bf16 as the adapter makes them).
 *  7. rollout correction (`algorithm.rollout_correction`) when the batch has engine log-probs: IS weights, and
 *     rejection sampling, which changes the response mask the advantages and the loss use.
 *  8. advantages: rollout-level (compute_rollout_level_advantage) or per row (compute_advantage).
 *  9. per_rollout_mean: advantages ÷ max(1, T_rollout·N), N = rows trained, in the advantages' dtype.
 * 10. the actor's loss per mini-batch with verl 0.8.0's global batch info (dp_size 1, batch_num_tokens = the
 *     mini-batch's mask tokens, global_batch_size = its rows, loss_scale_factor).
 *
 * `computeTrainerView` runs all of it and reports every token's ∂L/∂logπ at ratio 1 under every loss mode: what
 * the page and `lab analyze` show. A trainer calls the pieces: `prepareTrainerBatch` (1–4), then, once it has
 * old log-probs for those rows, `computeTrainerAdvantages` (5–9), then step 10 from update.ts: `ppoMiniBatches`
 * (epochs × mini-batches) and `microBatchGradient` per micro-batch with its current log-probs
 * (`miniBatchGradient`: a whole mini-batch at once).
 */
import { type BuildOptions, type BuildResult, buildTrainingBatch } from '../aggregate/buildTrainingBatch';
import { selectRows } from '../aggregate/select';
import { computeAdvantage, getAdvEstimator, traceUnavailable } from '../algos/advantage';
import { rowTokenCounts } from '../algos/aggLoss';
import { type Grouping, indexGroups } from '../algos/groups';
import { getLossMode, type LossContext, listLossModes } from '../algos/lossModes';
import { type FloatDType, rounder } from '../algos/numeric';
import { computeRolloutCorrection, type RolloutCorrectionResult } from '../algos/rolloutCorrection';
import { computeRolloutLevelAdvantage, normalizeAdvantagesByRollout } from '../algos/rolloutLevel';
import type { ReferenceStack } from '../algos/stacks';
import { trimBatch } from '../algos/trim';
import type { ResponseRows, TrainingBatch } from '../batch/types';
import type { ChatTokenizer } from '../tokenize/tokenizer';
import type { Rollout } from '../trace/types';
import {
  getOptionSpec,
  referenceStackOf,
  resolveTrainerOptions,
  TrainerOptionError,
  type TrainerOptions,
} from './options';

/** Why a built row is not trained on. */
export const ROW_STATUS = { trained: 0, isDrop: 1, trimmed: 2 } as const;

export interface TrainerCounters {
  'training/n_sample_collected': number;
  'training/n_sample_dropped/marked': number;
  'training/n_sample_dropped/same_reward': number;
  'training/n_sample_dropped/random': number;
  'training/n_sample_trained': number;
}

/** Steps 1–4: the rows the trainer trains on, in the order it holds them. */
export interface TrainerBatch {
  options: TrainerOptions;
  /** the adapter's output: every row, in adapter order */
  build: BuildResult;
  /** per adapter row: ROW_STATUS */
  rowStatus: Uint8Array;
  /** the trained rows as a batch of their own, in the trainer's order (after balance_batch) */
  batch: TrainingBatch;
  /** per trained row: its adapter row */
  sourceRow: Int32Array;
  /** per trained row: its mini-batch (consecutive rows; one mini-batch unless ppoMiniBatchSize is set) */
  miniBatch: Int32Array;
  nMiniBatches: number;
  /** per trained row: the reward as upstream holds it (bf16 from the adapter, or the float32 reward) */
  rewards: Float32Array;
  counters: TrainerCounters;
  /** nothing left to train on: upstream skips the step */
  skipped: boolean;
}

function checkEstimator(o: TrainerOptions): void {
  const est = getAdvEstimator(o.advEstimator);
  const why = traceUnavailable(est);
  if (why) throw new TrainerOptionError(getOptionSpec('advEstimator'), why);
}

/** The float32 reward of each row (the final reward, or reward_fillna_value), before the adapter's bf16 cast. */
function rawRewards(rollouts: Rollout[], batch: TrainingBatch, fillna: number): Float32Array {
  const out = new Float32Array(batch.nRows);
  for (let r = 0; r < batch.nRows; r++) out[r] = rollouts[batch.rowRollout[r]].finalReward ?? fillna;
  return out;
}

/**
 * balance_batch with one data-parallel rank (ray_trainer._balance_batch): one partition of every row, sorted by
 * (workload, index) with workload = 24576·seqlen + seqlen², then the even positions followed by the odd ones in
 * reverse (small rows at both ends).
 */
export function balanceOrder(seqlens: ArrayLike<number>): Int32Array {
  const idx = Array.from({ length: seqlens.length }, (_, i) => i);
  const work = (i: number) => 24576 * seqlens[i] + seqlens[i] * seqlens[i];
  idx.sort((a, b) => work(a) - work(b) || a - b);
  const even = idx.filter((_, k) => k % 2 === 0);
  const odd = idx.filter((_, k) => k % 2 === 1).reverse();
  return Int32Array.from([...even, ...odd]);
}

/** Steps 1–4 on already-built rows. */
export function prepareTrainerBatch(
  rollouts: Rollout[],
  build: BuildResult,
  options: TrainerOptions,
): TrainerBatch {
  const o = options;
  const all = build.batch;
  const rowStatus = new Uint8Array(all.nRows);
  let kept: number[] = [];
  for (let r = 0; r < all.nRows; r++) {
    if (all.isDrop[r]) rowStatus[r] = ROW_STATUS.isDrop;
    else kept.push(r);
  }
  const nCollected = all.nRows;
  const nMarked = nCollected - kept.length;
  const raw = rawRewards(rollouts, all, o.rewardFillnaValue);
  const rewardOf = (r: number) => (o.rewardDtype === 'bfloat16' ? all.reward[r] : raw[r]);
  let sameReward = 0;
  let random = 0;
  if (o.ppoMiniBatchSize !== null && kept.length > 0) {
    // _same_reward_uid_indices reads token_level_scores.sum(-1): the adapter's bf16 rewards
    const t = trimBatch(
      kept.map((r) => all.dataIds[r]),
      kept.map((r) => all.reward[r]),
      { miniBatchSize: o.ppoMiniBatchSize, maxPpoUpdateTimes: o.maxPpoUpdateTimes, seed: o.trimSeed },
    );
    const keepSet = new Set(Array.from(t.keep, (k) => kept[k]));
    for (const r of kept) if (!keepSet.has(r)) rowStatus[r] = ROW_STATUS.trimmed;
    sameReward = t.counters['training/n_sample_dropped/same_reward'];
    random = t.counters['training/n_sample_dropped/random'];
    kept = kept.filter((r) => keepSet.has(r));
  }
  let order = Int32Array.from(kept);
  if (o.balanceBatch && kept.length > 1) {
    const seq = kept.map(
      (r) => all.promptOffsets[r + 1] - all.promptOffsets[r] + all.offsets[r + 1] - all.offsets[r],
    );
    order = Int32Array.from(balanceOrder(seq), (k) => kept[k]);
  }
  const batch = selectRows(all, order);
  const rewards = Float32Array.from(order, (r) => rewardOf(r));
  const mb = o.ppoMiniBatchSize ?? Math.max(1, batch.nRows);
  const miniBatch = Int32Array.from({ length: batch.nRows }, (_, i) => Math.floor(i / mb));
  return {
    options: o,
    build,
    rowStatus,
    batch,
    sourceRow: order,
    miniBatch,
    nMiniBatches: batch.nRows ? miniBatch[batch.nRows - 1] + 1 : 0,
    rewards,
    counters: {
      'training/n_sample_collected': nCollected,
      'training/n_sample_dropped/marked': nMarked,
      'training/n_sample_dropped/same_reward': sameReward,
      'training/n_sample_dropped/random': random,
      'training/n_sample_trained': batch.nRows,
    },
    skipped: batch.nRows === 0,
  };
}

/** Steps 5–9: advantages as the estimator gives them and as each loss sees them. */
export interface TrainerAdvantages {
  /** the response mask the advantages and the loss use (after rejection sampling), per trained token */
  responseMask: Uint8Array;
  /** rows over that mask (shares offsets with the trained batch) */
  rows: ResponseRows;
  /** the estimator's advantages × mask, per trained token */
  advantages: Float32Array;
  /** the estimator's returns, per trained token (outcome estimators return their advantages; verl's critic/returns) */
  returns: Float32Array;
  /** one scalar per row when the estimator is outcome-style or rollout level, else null */
  rowAdvantage: Float64Array | null;
  /** ÷ max(1, T_rollout·N): what per_rollout_mean's loss sees */
  normalizedAdvantages: Float32Array;
  /** the advantages' dtype upstream */
  dtype: FloatDType;
  /** truncated IS weights per trained token, or null */
  rolloutIsWeights: Float32Array | null;
  /** the old log-probs used (given, else the engine's, else 0), per trained token */
  oldLogProbs: Float32Array;
  /** rollouts of the trained rows, keyed by rollout id */
  rollouts: Grouping;
  metrics: Record<string, number>;
}

/**
 * Rollout correction (step 7) already computed on a trainer batch with the engine's log-probs as the old ones and
 * options of one `correctionKey`: reused while both stay the same (the page's worker keeps it across estimator
 * toggles).
 */
export interface CorrectionMemo {
  tb: TrainerBatch | null;
  key: string;
  result: RolloutCorrectionResult | null;
}

/** The options rollout correction (step 7) reads. */
export function correctionKey(o: TrainerOptions): string {
  return JSON.stringify([
    o.rolloutIs,
    o.rolloutIsThreshold,
    o.rolloutIsBatchNormalize,
    o.rolloutRs,
    o.rolloutRsThreshold,
    o.referenceStack,
  ]);
}

export function computeTrainerAdvantages(
  tb: TrainerBatch,
  extra: { oldLogProbs?: Float32Array; correction?: CorrectionMemo } = {},
): TrainerAdvantages {
  const o = tb.options;
  checkEstimator(o);
  const batch = tb.batch;
  const n = batch.offsets[batch.nRows];
  const metrics: Record<string, number> = {};
  if (extra.oldLogProbs && extra.oldLogProbs.length !== n)
    throw new Error(
      `oldLogProbs has ${extra.oldLogProbs.length} values but the trained rows hold ${n} tokens`,
    );
  const oldLogProbs = extra.oldLogProbs ?? batch.responseLogProbs?.slice() ?? new Float32Array(n);
  let mask = batch.mask;
  let rolloutIsWeights: Float32Array | null = null;
  if (batch.responseLogProbs && n > 0) {
    // a memo holds only results with the engine's log-probs as the old ones
    const memo = extra.oldLogProbs ? undefined : extra.correction;
    const key = memo ? correctionKey(o) : '';
    const rc =
      memo?.result && memo.tb === tb && memo.key === key
        ? memo.result
        : computeRolloutCorrection(batch, oldLogProbs, batch.responseLogProbs, {
            rolloutIs: o.rolloutIs,
            rolloutIsThreshold: o.rolloutIsThreshold,
            rolloutIsBatchNormalize: o.rolloutIsBatchNormalize,
            rolloutRs: o.rolloutRs,
            rolloutRsThreshold: o.rolloutRsThreshold,
            stack: o.referenceStack,
          });
    if (memo) Object.assign(memo, { tb, key, result: rc });
    mask = rc.responseMask;
    rolloutIsWeights = rc.rolloutIsWeights;
    Object.assign(metrics, rc.metrics);
  } else if (o.rolloutIs !== null || o.rolloutRs !== null)
    metrics['rollout_corr/skipped_no_rollout_log_probs'] = 1;
  const rows: ResponseRows = { nRows: batch.nRows, offsets: batch.offsets, mask };
  const dtype = o.rewardDtype;
  const R = rounder(dtype);
  const uids = indexGroups(batch.dataIds);
  const rollouts = indexGroups(batch.rolloutIds);
  const aopts = { normAdvByStd: o.normAdvByStdInGrpo, gamma: o.gamma, dtype, stack: o.referenceStack };
  const rewards = tb.rewards;
  let advantages: Float32Array;
  let returns: Float32Array | null = null;
  let rowAdvantage: Float64Array | null = null;
  let advDType: FloatDType = dtype;
  const est = getAdvEstimator(o.advEstimator);
  const tokenRewards = (): Float32Array => {
    // the reward on each row's last response token (even when that token is an observation)
    const out = new Float32Array(n);
    for (let i = 0; i < batch.nRows; i++)
      if (batch.offsets[i + 1] > batch.offsets[i]) out[batch.offsets[i + 1] - 1] = R(rewards[i]);
    return out;
  };
  if (batch.nRows === 0) advantages = new Float32Array(0);
  else if (o.enableRolloutLevelAdvantage) {
    const r = computeRolloutLevelAdvantage(
      o.advEstimator,
      { rows, rowRewards: rewards, uids, rollouts },
      { ...aopts, broadcast: !est.rowScalars },
    );
    Object.assign(metrics, r.metrics);
    rowAdvantage = new Float64Array(batch.nRows);
    for (let i = 0; i < batch.nRows; i++) rowAdvantage[i] = r.rolloutAdvantage[rollouts.group[i]];
    advantages = est.rowScalars ? broadcast(rows, rowAdvantage) : r.advantages;
    if (!est.rowScalars) returns = r.returns;
  } else if (est.rowScalars) {
    const counts = rowTokenCounts(rows);
    const scores = new Float64Array(batch.nRows);
    for (let i = 0; i < batch.nRows; i++)
      scores[i] = batch.offsets[i + 1] > batch.offsets[i] ? R(rewards[i]) : 0;
    rowAdvantage = est.rowScalars({ scores, groups: uids, lengths: () => counts }, aopts);
    advantages = broadcast(rows, rowAdvantage);
  } else {
    const out = computeAdvantage(
      o.advEstimator,
      { rows, tokenLevelRewards: tokenRewards(), groups: uids },
      aopts,
    );
    advantages = out.advantages;
    returns = out.returns;
    advDType = out.dtype;
  }
  const normalizedAdvantages =
    batch.nRows === 0
      ? new Float32Array(0)
      : normalizeAdvantagesByRollout(rows, advantages, rollouts, batch.nRows, advDType);
  return {
    responseMask: mask,
    rows,
    advantages,
    returns: returns ?? advantages,
    rowAdvantage,
    normalizedAdvantages,
    dtype: advDType,
    rolloutIsWeights,
    oldLogProbs,
    rollouts,
    metrics,
  };
}

function broadcast(rows: ResponseRows, perRow: Float64Array): Float32Array {
  const out = new Float32Array(rows.offsets[rows.nRows]);
  for (let i = 0; i < rows.nRows; i++) {
    const v = perRow[i];
    for (let t = rows.offsets[i]; t < rows.offsets[i + 1]; t++) out[t] = rows.mask[t] ? v : 0;
  }
  return out;
}

/** Rows [start, end) of the trained batch as the verl 0.8.0 engine's loss context (global batch info). */
function miniBatchContext(
  adv: TrainerAdvantages,
  o: TrainerOptions,
  start: number,
  end: number,
): LossContext {
  const off = adv.rows.offsets;
  const rows: ResponseRows = {
    nRows: end - start,
    offsets: off.subarray(start, end + 1),
    mask: adv.rows.mask,
  };
  const rowCounts = rowTokenCounts(rows);
  let tokens = 0;
  for (let i = 0; i < rowCounts.length; i++) tokens += rowCounts[i];
  return {
    rows,
    rowCounts,
    dpSize: 1,
    batchNumTokens: tokens,
    globalBatchSize: end - start,
    lossScaleFactor: o.lossScaleFactor,
    paddedWidth: o.maxResponseLength,
    advantagesDType: adv.dtype,
    stack: o.referenceStack,
  };
}

/** Rows [start, end) of each mini-batch. */
export function miniBatchRanges(tb: TrainerBatch): [number, number][] {
  const out: [number, number][] = [];
  let s = 0;
  for (let i = 1; i <= tb.batch.nRows; i++)
    if (i === tb.batch.nRows || tb.miniBatch[i] !== tb.miniBatch[s]) {
      out.push([s, i]);
      s = i;
    }
  return out;
}

/** Per trained row: the loss mode's coefficient c_r in its mini-batch (∂L/∂ℓ_t for its valid tokens). */
export function lossCoefficients(tb: TrainerBatch, adv: TrainerAdvantages, lossMode: string): Float64Array {
  const mode = getLossMode(lossMode);
  const out = new Float64Array(tb.batch.nRows);
  for (const [a, b] of miniBatchRanges(tb))
    out.set(mode.rowCoefficients(miniBatchContext(adv, tb.options, a, b)), a);
  return out;
}

/** The advantages a loss mode's loss sees (normalised for per_rollout_mean). */
export function advantagesFor(adv: TrainerAdvantages, lossMode: string): Float32Array {
  return getLossMode(lossMode).normalizesAdvantages ? adv.normalizedAdvantages : adv.advantages;
}

// ---------- the whole view ----------

export interface ModeView {
  name: string;
  /** where the setting lives upstream */
  key: string;
  label: string;
  formula: string;
  /** ∂L/∂logπ per token of `batch` at ratio 1 (0 on untrained rows and masked tokens) */
  weights: Float32Array;
  /** the advantages this mode's loss sees, per token of `batch` */
  advantages: Float32Array;
  /** per row of `batch` */
  rowSums: Float64Array;
  /** per source rollout (index into the rollouts given) */
  rolloutSums: Float64Array;
  total: number;
  absTotal: number;
}

export interface TrainerView {
  options: TrainerOptions;
  /** the reference stack the options chose */
  reference: ReferenceStack;
  /** the adapter's rows (all of them, in adapter order), merge failures, counters and metrics */
  build: BuildResult;
  /** = build.batch: every row the adapter built; per-token arrays below are aligned with it */
  batch: TrainingBatch;
  /** per row: ROW_STATUS (trained, is_drop, trimmed) */
  rowStatus: Uint8Array;
  /** per row: its position in the trainer's order, or -1 */
  trainPosition: Int32Array;
  /** per row: its mini-batch, or -1 */
  miniBatch: Int32Array;
  skipped: boolean;
  counters: TrainerCounters;
  /** adapter metrics, trainer counters, rollout-level and rollout-correction metrics */
  metrics: Record<string, number>;
  /** response mask as trained (0 on untrained rows, rejection sampling applied) */
  responseMask: Uint8Array;
  rolloutIsWeights: Float32Array | null;
  /** the estimator's advantages per token */
  advantages: Float32Array;
  advantagesDType: FloatDType;
  /** every loss mode, in registry order */
  modes: ModeView[];
  /** the options' loss mode */
  selected: ModeView;
  /** per group (data id) of the trained rows, first-appearance order in `batch`, under the selected mode */
  groups: { keys: string[]; sums: Float64Array; negative: Float64Array; positive: Float64Array };
}

/** Scatters per-trained-token values back to the adapter's rows (0 elsewhere). */
function scatter<T extends Float32Array | Uint8Array>(
  tb: TrainerBatch,
  values: T,
  make: (n: number) => T,
): T {
  const all = tb.build.batch;
  const out = make(all.offsets[all.nRows]);
  const b = tb.batch;
  for (let i = 0; i < b.nRows; i++)
    out.set(values.subarray(b.offsets[i], b.offsets[i + 1]), all.offsets[tb.sourceRow[i]]);
  return out;
}

export interface TrainerViewInput {
  rollouts: Rollout[];
  options?: Partial<TrainerOptions>;
  tokenizer?: ChatTokenizer;
  /** rows already built with the same sample-building options (the page caches them) */
  build?: BuildResult;
  /** steps 1–4 already done on `build` with the same `prepareKey` options (the page caches them) */
  prepared?: TrainerBatch;
  /** step 7's last result, reused when it was computed on `prepared` with the same `correctionKey`; updated */
  correction?: CorrectionMemo;
  /** the trainer's old log-probs per trained token (see prepareTrainerBatch); default: the engine's */
  oldLogProbs?: Float32Array;
}

/** The sample-building settings of the options (step 1). */
export function buildOptionsOf(o: TrainerOptions, tokenizer?: ChatTokenizer): BuildOptions {
  return {
    level: o.traceAggregatorLevel,
    maxPromptLength: o.maxPromptLength,
    maxResponseLength: o.maxResponseLength,
    padTokenId: 0,
    rewardFillnaValue: o.rewardFillnaValue,
    tokenSource: o.tokenSource,
    tokenizer,
  };
}

/** Sample building (step 1) with the options' settings. */
export function buildRows(rollouts: Rollout[], o: TrainerOptions, tokenizer?: ChatTokenizer): BuildResult {
  if (o.tokenSource === 'retokenize' && !tokenizer)
    throw new TrainerOptionError(getOptionSpec('tokenSource'), "'retokenize' needs a tokenizer");
  return buildTrainingBatch(rollouts, buildOptionsOf(o, tokenizer));
}

/** The sample-building part of the options: rows can be reused while it stays the same. */
export function buildKey(o: TrainerOptions): string {
  return JSON.stringify([
    o.traceAggregatorLevel,
    o.tokenSource,
    o.maxPromptLength,
    o.maxResponseLength,
    o.rewardFillnaValue,
  ]);
}

/** The options steps 2–4 read (prepareTrainerBatch): its result can be reused while they and the rows stay the same. */
export function prepareKey(o: TrainerOptions): string {
  return JSON.stringify([
    o.rewardFillnaValue,
    o.rewardDtype,
    o.ppoMiniBatchSize,
    o.maxPpoUpdateTimes,
    o.trimSeed,
    o.balanceBatch,
  ]);
}

/**
 * What the trainer does with these rollouts: steps 1–10 with the given options (upstream names and defaults,
 * see options.ts), every loss mode's per-token ∂L/∂logπ at ratio 1. The page's worker and `lab analyze` both
 * call this.
 */
export function computeTrainerView(input: TrainerViewInput): TrainerView {
  const o = resolveTrainerOptions(input.options);
  checkEstimator(o);
  const build = input.build ?? buildRows(input.rollouts, o, input.tokenizer);
  const tb =
    input.prepared && input.prepared.build === build
      ? input.prepared
      : prepareTrainerBatch(input.rollouts, build, o);
  const all = build.batch;
  const nTok = all.offsets[all.nRows];
  const adv = computeTrainerAdvantages(tb, { oldLogProbs: input.oldLogProbs, correction: input.correction });
  const trainPosition = new Int32Array(all.nRows).fill(-1);
  const miniBatch = new Int32Array(all.nRows).fill(-1);
  tb.sourceRow.forEach((r, i) => {
    trainPosition[r] = i;
    miniBatch[r] = tb.miniBatch[i];
  });
  const responseMask = scatter(tb, adv.responseMask, (m) => new Uint8Array(m));
  const isw = adv.rolloutIsWeights ? scatter(tb, adv.rolloutIsWeights, (m) => new Float32Array(m)) : null;
  const advantages = scatter(tb, adv.advantages, (m) => new Float32Array(m));
  const normalized = scatter(tb, adv.normalizedAdvantages, (m) => new Float32Array(m));
  const nR = input.rollouts.length;
  const modes: ModeView[] = listLossModes(o.referenceStack).map((mode) => {
    const coefTrained = lossCoefficients(tb, adv, mode.name);
    const coef = new Float64Array(all.nRows);
    tb.sourceRow.forEach((r, i) => {
      coef[r] = coefTrained[i];
    });
    const a = mode.normalizesAdvantages ? normalized : advantages;
    const weights = new Float32Array(nTok);
    const rowSums = new Float64Array(all.nRows);
    const rolloutSums = new Float64Array(nR);
    let total = 0;
    let absTotal = 0;
    for (let r = 0; r < all.nRows; r++) {
      const c = coef[r];
      if (c === 0 || trainPosition[r] < 0) continue;
      let s = 0;
      for (let t = all.offsets[r]; t < all.offsets[r + 1]; t++) {
        if (!responseMask[t]) continue;
        // ∂ℓ/∂logπ at ratio 1 is −A·w_IS (nothing clipped)
        const w = -a[t] * c * (isw ? isw[t] : 1);
        weights[t] = w;
        s += w;
        absTotal += Math.abs(w);
      }
      rowSums[r] = s;
      rolloutSums[all.rowRollout[r]] += s;
      total += s;
    }
    return {
      name: mode.name,
      key: mode.key,
      label: mode.label,
      formula: mode.formula,
      weights,
      advantages: a,
      rowSums,
      rolloutSums,
      total,
      absTotal,
    };
  });
  const selected = selectedMode(modes, o.lossMode);
  const groups = groupTotals(all, trainPosition, selected);
  return {
    options: o,
    reference: referenceStackOf(o),
    build,
    batch: all,
    rowStatus: tb.rowStatus,
    trainPosition,
    miniBatch,
    skipped: tb.skipped,
    counters: tb.counters,
    metrics: { ...build.metrics, ...tb.counters, ...adv.metrics },
    responseMask,
    rolloutIsWeights: isw,
    advantages,
    advantagesDType: adv.dtype,
    modes,
    selected,
    groups,
  };
}

function selectedMode(modes: ModeView[], lossMode: string): ModeView {
  const m = modes.find((x) => x.name === lossMode);
  if (!m)
    throw new TrainerOptionError(
      getOptionSpec('lossAggMode'),
      `no loss mode ${JSON.stringify(lossMode)} on this stack`,
    );
  return m;
}

/** Per group (data id) of the trained rows, first-appearance order in `all`: the selected mode's sums. */
function groupTotals(
  all: TrainingBatch,
  trainPosition: Int32Array,
  selected: ModeView,
): TrainerView['groups'] {
  const keys: string[] = [];
  const gid = new Map<string, number>();
  const rowGroup = new Int32Array(all.nRows).fill(-1);
  for (let r = 0; r < all.nRows; r++) {
    if (trainPosition[r] < 0) continue;
    let g = gid.get(all.dataIds[r]);
    if (g === undefined) {
      g = keys.length;
      gid.set(all.dataIds[r], g);
      keys.push(all.dataIds[r]);
    }
    rowGroup[r] = g;
  }
  const sums = new Float64Array(keys.length);
  const negative = new Float64Array(keys.length);
  const positive = new Float64Array(keys.length);
  const w = selected.weights;
  for (let r = 0; r < all.nRows; r++) {
    const g = rowGroup[r];
    if (g < 0) continue;
    sums[g] += selected.rowSums[r];
    let neg = negative[g];
    let pos = positive[g];
    for (let t = all.offsets[r]; t < all.offsets[r + 1]; t++) {
      const x = w[t];
      if (x < 0) neg += x;
      else pos += x;
    }
    negative[g] = neg;
    positive[g] = pos;
  }
  return { keys, sums, negative, positive };
}

/** The options except those that choose the loss mode: views that agree on it differ only in `selected` and `groups`. */
export function lossModeFreeKey(o: TrainerOptions): string {
  const { lossAggMode: _a, policyLossMode: _p, lossMode: _m, ...rest } = o;
  return JSON.stringify(rest);
}

/**
 * The view `computeTrainerView` gives for `options` when `view` was computed with the same options but another
 * loss mode (loss_agg_mode, policy_loss.loss_mode): every mode is computed either way, so the loss mode only picks
 * the selected one and the group totals under it.
 */
export function withLossMode(view: TrainerView, options: Partial<TrainerOptions>): TrainerView {
  const o = resolveTrainerOptions(options);
  if (lossModeFreeKey(view.options) !== lossModeFreeKey(o))
    throw new Error('withLossMode: the options differ from the view options in more than the loss mode');
  const selected = selectedMode(view.modes, o.lossMode);
  return {
    ...view,
    options: o,
    selected,
    groups: groupTotals(view.batch, view.trainPosition, selected),
  };
}
