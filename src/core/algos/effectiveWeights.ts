/**
 * Effective weights on an already-built batch (no is_drop removal, trimming or balancing: for those, and for
 * everything the trainer does in its order, use core/pipeline's computeTrainerView): the gradient weight
 * ∂L/∂logπ_t each token receives, i.e. what a loss mode and an advantage estimator do to every token. From the loss definitions (see aggLoss.ts and policyLoss.ts):
 *
 *   L = Σ_t c_r(t) · m_t · ℓ_t,    ℓ_t = clipped(−A_t ρ_t) · w_IS,t,    ρ_t = exp(logπ_t − logπ_old,t)
 *   ∂L/∂logπ_t = c_r · m_t · ∂ℓ_t/∂logπ_t,   and at ρ = 1 (nothing clipped):  ∂ℓ_t/∂logπ_t = −A_t · w_IS,t
 *
 * with c_r from the aggregation mode (token-mean: dp/ΣM; seq-mean-token-sum: dp/G; seq-mean-token-mean:
 * dp/(G·T_r); seq-mean-token-sum-norm: 1/T) and, for Agent Lightning's per_rollout_mean, c = dp applied to
 * advantages already divided by max(1, T_rollout·N): weight = −dp·A_rollout/(T_rollout·N) per trainable token.
 * At recorded ratios (old/new log-probs given) the clipped branches contribute 0, as PPO's clip does.
 *
 * Rewards are placed where Agent Lightning's RolloutAdapter puts them: on the last response token of each row.
 */
import type { TrainingBatch } from '../batch/types';
import { computeAdvantage, getAdvEstimator } from './advantage';
import { rowTokenCounts } from './aggLoss';
import { type Grouping, groupingFromIds, indexGroups } from './groups';
import { getLossMode, listLossModes } from './lossModes';
import { fillMasked, maskWords } from './maskOps';
import { type FloatDType, rounder } from './numeric';
import { type ClipOptions, ppoTokenLosses } from './policyLoss';
import { computeRolloutLevelAdvantage, normalizeAdvantagesByRollout, rolloutDivisors } from './rolloutLevel';

/** A loss-mode registry name (lossModes.ts). */
export type LossMode = string;
/** Every registered loss mode, in registry order. */
export const ALL_LOSS_MODES: readonly LossMode[] = listLossModes().map((m) => m.name);

export interface EffectiveWeightOptions extends ClipOptions {
  advEstimator: string;
  normAdvByStd?: boolean;
  epsilon?: number;
  gamma?: number;
  /** Agent Lightning's rollout-level advantages (estimator on each rollout's first row, broadcast) */
  rolloutLevel: boolean;
  lossAggMode: LossMode;
  dpSize?: number;
  lossScaleFactor?: number | null;
  batchNumTokens?: number | null;
  globalBatchSize?: number | null;
  /** the padded response width (the adapter's max_response_length); default: the longest row */
  paddedWidth?: number;
  /** per_rollout_mean's N (upstream passes len(batch)); default nRows */
  numTrainedRows?: number;
  /** reward dtype (bf16 on Agent Lightning's path); default float32 */
  rewardDType?: FloatDType;
  /** recorded log-probs: old (behaviour/trainer-old) and new (current policy); both or neither */
  oldLogProbs?: Float32Array;
  newLogProbs?: Float32Array;
  rolloutIsWeights?: Float32Array | null;
}

export interface EffectiveWeights {
  /**
   * advantages as computed by the estimator (before per-rollout normalisation), per token; materialised from
   * `rowAdvantage` on first access when the estimator gives one scalar per row
   */
  readonly advantages: Float32Array;
  /** the advantage scalar of each row (outcome estimators and rollout level), else null */
  rowAdvantage: Float64Array | null;
  /** ∂L/∂logπ_t at ratio 1 */
  weights: Float32Array;
  /** ∂L/∂logπ_t at the recorded ratios, when old/new log-probs are given */
  recordedWeights: Float32Array | null;
  rowSums: Float64Array;
  /** indexed like batch.rowRollout */
  rolloutSums: Float64Array;
  /** per group (data id), in `groups.keys` order */
  groupSums: Float64Array;
  groups: Grouping;
}

/** token_level_rewards as the adapter builds them: the row reward on its last response token. */
export function tokenLevelRewardsOf(batch: TrainingBatch): Float32Array {
  const out = new Float32Array(batch.offsets[batch.nRows]);
  for (let i = 0; i < batch.nRows; i++)
    if (batch.offsets[i + 1] > batch.offsets[i]) out[batch.offsets[i + 1] - 1] = batch.reward[i];
  return out;
}

/**
 * Per-token advantages, or one scalar per row when the estimator is outcome-style (row level) or the mode is
 * rollout level: the fused loops below broadcast it themselves instead of materialising a per-token array.
 */
function advantagesFor(
  batch: TrainingBatch,
  opts: EffectiveWeightOptions,
  uids: Grouping,
  counts: Int32Array,
): { perToken: Float32Array | null; perRow: Float64Array | null } {
  const aopts = {
    normAdvByStd: opts.normAdvByStd,
    epsilon: opts.epsilon,
    gamma: opts.gamma,
    dtype: opts.rewardDType,
  };
  if (opts.rolloutLevel) {
    // by rollout id: errors name the rollout, and rollouts without rows are simply absent
    const byId = indexGroups(batch.rolloutIds);
    const r = computeRolloutLevelAdvantage(
      opts.advEstimator,
      { rows: batch, rowRewards: batch.reward, uids, rollouts: byId },
      { ...aopts, broadcast: false },
    );
    const perRow = new Float64Array(batch.nRows);
    for (let i = 0; i < batch.nRows; i++) perRow[i] = r.rolloutAdvantage[byId.group[i]];
    return { perToken: null, perRow };
  }
  const est = getAdvEstimator(opts.advEstimator);
  if (est.rowScalars) {
    // token_level_rewards.sum(-1) of the adapter layout is the row reward (0 for a row without tokens)
    const R = rounder(opts.rewardDType ?? 'float32');
    const scores = new Float64Array(batch.nRows);
    for (let i = 0; i < batch.nRows; i++)
      scores[i] = batch.offsets[i + 1] > batch.offsets[i] ? R(batch.reward[i]) : 0;
    return { perToken: null, perRow: est.rowScalars({ scores, groups: uids, lengths: () => counts }, aopts) };
  }
  const tokenLevelRewards = tokenLevelRewardsOf(batch);
  return {
    perToken: computeAdvantage(opts.advEstimator, { rows: batch, tokenLevelRewards, groups: uids }, aopts)
      .advantages,
    perRow: null,
  };
}

/** Per-row coefficient c_r of a loss mode (per_rollout_mean: dp / max(1, T_rollout·N)), on the raw advantages. */
export function rowCoefficients(
  batch: TrainingBatch,
  mode: LossMode,
  opts: EffectiveWeightOptions,
  rollouts: Grouping,
  rowCounts?: Int32Array,
) {
  const dp = opts.dpSize ?? 1;
  const m = getLossMode(mode);
  const counts = rowCounts ?? rowTokenCounts(batch);
  const c = m.rowCoefficients({
    rows: batch,
    rowCounts: counts,
    dpSize: dp,
    lossScaleFactor: opts.lossScaleFactor,
    batchNumTokens: opts.batchNumTokens,
    globalBatchSize: opts.globalBatchSize,
    paddedWidth: opts.paddedWidth,
  });
  if (m.normalizesAdvantages) {
    // the loss sees A / max(1, T_rollout·N): fold the divisor into the coefficient of the raw advantages
    const div = rolloutDivisors(
      batch,
      rollouts,
      opts.numTrainedRows ?? batch.nRows,
      opts.rewardDType ?? 'float32',
      counts,
    );
    for (let i = 0; i < c.length; i++) c[i] /= div[i];
  }
  return c;
}

export function effectiveWeights(batch: TrainingBatch, opts: EffectiveWeightOptions): EffectiveWeights {
  const n = batch.offsets[batch.nRows];
  const uids = indexGroups(batch.dataIds);
  const rollouts = groupingFromIds(batch.rowRollout);
  const counts = rowTokenCounts(batch);
  const mw = maskWords(batch.mask);
  const adv = advantagesFor(batch, opts, uids, counts);
  const coef = rowCoefficients(batch, opts.lossAggMode, opts, rollouts, counts);
  const w = opts.rolloutIsWeights ?? null;
  if (w && w.length !== n)
    throw new Error(`rolloutIsWeights has ${w.length} values but the batch holds ${n} tokens`);
  const rowAdvantage = adv.perRow;
  let perToken = adv.perToken;
  const { offsets: off, mask } = batch;
  const materialise = (): Float32Array => {
    if (perToken) return perToken;
    const a = new Float32Array(n);
    const ra = rowAdvantage as Float64Array;
    for (let i = 0; i < batch.nRows; i++) for (let t = off[i]; t < off[i + 1]; t++) a[t] = ra[i] * mask[t];
    perToken = a;
    return a;
  };
  const weights = new Float32Array(n);
  const rowSums = new Float64Array(batch.nRows);
  const rolloutSums = new Float64Array(rollouts.nGroups);
  const groupSums = new Float64Array(uids.nGroups);
  for (let i = 0; i < batch.nRows; i++) {
    const c = coef[i];
    const e = off[i + 1];
    let s = 0;
    if (rowAdvantage) {
      // one advantage per row (outcome estimator or rollout level), broadcast × mask
      const v = -rowAdvantage[i] * c;
      if (w)
        for (let t = off[i]; t < e; t++) {
          const x = v * mask[t] * w[t];
          weights[t] = x;
          s += x;
        }
      else {
        fillMasked(weights, v, mw, off[i], e);
        s = v * counts[i];
      }
    } else {
      const a = perToken as Float32Array;
      for (let t = off[i]; t < e; t++) {
        if (!mask[t]) continue;
        const x = -a[t] * c * (w ? w[t] : 1);
        weights[t] = x;
        s += x;
      }
    }
    rowSums[i] = s;
    rolloutSums[rollouts.group[i]] += s;
    groupSums[uids.group[i]] += s;
  }
  let recordedWeights: Float32Array | null = null;
  if (opts.oldLogProbs || opts.newLogProbs) {
    if (!opts.oldLogProbs || !opts.newLogProbs)
      throw new Error('give both oldLogProbs and newLogProbs, or neither');
    // per_rollout_mean's loss sees the normalised advantages; clipping decisions depend only on sign(A) and ρ,
    // so the un-normalised advantages pick the same branch and c_r carries the normalisation.
    const grads = ppoTokenLosses(
      {
        rows: batch,
        oldLogProb: opts.oldLogProbs,
        logProb: opts.newLogProbs,
        advantages: materialise(),
        rolloutIsWeights: w,
      },
      opts,
    ).tokenGrads;
    recordedWeights = new Float32Array(n);
    for (let i = 0; i < batch.nRows; i++)
      for (let t = off[i]; t < off[i + 1]; t++) recordedWeights[t] = mask[t] ? grads[t] * coef[i] : 0;
  }
  return {
    get advantages() {
      return materialise();
    },
    rowAdvantage,
    weights,
    recordedWeights,
    rowSums,
    rolloutSums,
    groupSums,
    groups: uids,
  };
}

export interface AllLossModes {
  /** per-token advantages (materialised on first access at rollout level) */
  readonly advantages: Float32Array;
  /** every registered loss mode, by name */
  modes: Record<LossMode, { weights: Float32Array; rolloutTotals: Float64Array; total: number }>;
}

/** Every loss mode's per-token weights at ratio 1 and per-rollout totals, from one advantage computation. */
export function allLossModes(
  batch: TrainingBatch,
  opts: Omit<EffectiveWeightOptions, 'lossAggMode'>,
): AllLossModes {
  const full = { ...opts, lossAggMode: ALL_LOSS_MODES[0] };
  const uids = indexGroups(batch.dataIds);
  const rollouts = groupingFromIds(batch.rowRollout);
  const counts = rowTokenCounts(batch);
  const mw = maskWords(batch.mask);
  const adv = advantagesFor(batch, full, uids, counts);
  const n = batch.offsets[batch.nRows];
  const coefs = ALL_LOSS_MODES.map((m) => rowCoefficients(batch, m, full, rollouts, counts));
  const ws = ALL_LOSS_MODES.map(() => new Float32Array(n));
  const totals = ALL_LOSS_MODES.map(() => new Float64Array(rollouts.nGroups));
  const isw = opts.rolloutIsWeights ?? null;
  if (isw && isw.length !== n)
    throw new Error(`rolloutIsWeights has ${isw.length} values but the batch holds ${n} tokens`);
  const { offsets: off, mask } = batch;
  const perRow = adv.perRow;
  const K = coefs.length;
  for (let i = 0; i < batch.nRows; i++) {
    const e = off[i + 1];
    let s = 0;
    if (perRow && !isw) {
      // one advantage per row: −A is constant over the row; no branch per token
      const g = -perRow[i];
      for (let k = 0; k < K; k++) fillMasked(ws[k], g * coefs[k][i], mw, off[i], e);
      s = g * counts[i];
    } else {
      const ra = perRow ? -perRow[i] : 0;
      const pt = adv.perToken;
      for (let t = off[i]; t < e; t++) {
        if (!mask[t]) continue;
        const g = (pt ? -pt[t] : ra) * (isw ? isw[t] : 1);
        s += g;
        for (let k = 0; k < K; k++) ws[k][t] = g * coefs[k][i];
      }
    }
    const r = rollouts.group[i];
    for (let k = 0; k < K; k++) totals[k][r] += s * coefs[k][i];
  }
  const modes = {} as AllLossModes['modes'];
  ALL_LOSS_MODES.forEach((m, j) => {
    let total = 0;
    for (const x of totals[j]) total += x;
    modes[m] = { weights: ws[j], rolloutTotals: totals[j], total };
  });
  let perToken = adv.perToken;
  return {
    get advantages() {
      if (!perToken) {
        const a = new Float32Array(n);
        const pr = perRow as Float64Array;
        for (let i = 0; i < batch.nRows; i++) {
          const v = pr[i];
          for (let t = off[i]; t < off[i + 1]; t++) a[t] = v * mask[t];
        }
        perToken = a;
      }
      return perToken;
    },
    modes,
  };
}

export { normalizeAdvantagesByRollout };
