/**
 * Effective weights: the gradient weight ∂L/∂logπ_t each token receives, i.e. what a loss mode and an
 * advantage estimator do to every token. From the loss definitions (see aggLoss.ts and policyLoss.ts):
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
import { computeAdvantage } from './advantage';
import { type AggOptions, getAggMode, LOSS_AGG_MODES, type LossAggMode } from './aggLoss';
import { type Grouping, groupingFromIds, indexGroups } from './groups';
import type { FloatDType } from './numeric';
import { type ClipOptions, ppoTokenLosses } from './policyLoss';
import { computeRolloutLevelAdvantage, normalizeAdvantagesByRollout, rolloutDivisors } from './rolloutLevel';

export type LossMode = LossAggMode | 'per_rollout_mean';
export const ALL_LOSS_MODES: LossMode[] = [...LOSS_AGG_MODES, 'per_rollout_mean'];

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
  /** advantages as computed by the estimator (before per-rollout normalisation) */
  advantages: Float32Array;
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

function advantagesFor(
  batch: TrainingBatch,
  opts: EffectiveWeightOptions,
  uids: Grouping,
  rollouts: Grouping,
) {
  const tokenLevelRewards = tokenLevelRewardsOf(batch);
  const aopts = {
    normAdvByStd: opts.normAdvByStd,
    epsilon: opts.epsilon,
    gamma: opts.gamma,
    dtype: opts.rewardDType,
  };
  if (opts.rolloutLevel)
    return computeRolloutLevelAdvantage(
      opts.advEstimator,
      { rows: batch, tokenLevelRewards, uids, rollouts },
      aopts,
    ).advantages;
  return computeAdvantage(opts.advEstimator, { rows: batch, tokenLevelRewards, groups: uids }, aopts)
    .advantages;
}

/** Per-row coefficient c_r of a loss mode (per_rollout_mean: dp / max(1, T_rollout·N)). */
export function rowCoefficients(
  batch: TrainingBatch,
  mode: LossMode,
  opts: EffectiveWeightOptions,
  rollouts: Grouping,
) {
  const dp = opts.dpSize ?? 1;
  if (mode === 'per_rollout_mean') {
    const div = rolloutDivisors(
      batch,
      rollouts,
      opts.numTrainedRows ?? batch.nRows,
      opts.rewardDType ?? 'float32',
    );
    for (let i = 0; i < div.length; i++) div[i] = dp / div[i];
    return div;
  }
  const agg: AggOptions = {
    dpSize: dp,
    lossScaleFactor: opts.lossScaleFactor,
    batchNumTokens: opts.batchNumTokens,
    globalBatchSize: opts.globalBatchSize,
  };
  return getAggMode(mode).rowCoefficients(batch, agg);
}

export function effectiveWeights(batch: TrainingBatch, opts: EffectiveWeightOptions): EffectiveWeights {
  const n = batch.offsets[batch.nRows];
  const uids = indexGroups(batch.dataIds);
  const rollouts = groupingFromIds(batch.rowRollout);
  const advantages = advantagesFor(batch, opts, uids, rollouts);
  const coef = rowCoefficients(batch, opts.lossAggMode, opts, rollouts);
  const w = opts.rolloutIsWeights ?? null;
  if (w && w.length !== n)
    throw new Error(`rolloutIsWeights has ${w.length} values but the batch holds ${n} tokens`);
  const weights = new Float32Array(n);
  const rowSums = new Float64Array(batch.nRows);
  const rolloutSums = new Float64Array(rollouts.nGroups);
  const groupSums = new Float64Array(uids.nGroups);
  const { offsets: off, mask } = batch;
  let recordedWeights: Float32Array | null = null;
  let grads: Float32Array | null = null;
  if (opts.oldLogProbs || opts.newLogProbs) {
    if (!opts.oldLogProbs || !opts.newLogProbs)
      throw new Error('give both oldLogProbs and newLogProbs, or neither');
    // per_rollout_mean's loss sees the normalised advantages; clipping decisions depend only on sign(A) and ρ,
    // so the un-normalised advantages give the same branch and c_r carries the normalisation.
    grads = ppoTokenLosses(
      {
        rows: batch,
        oldLogProb: opts.oldLogProbs,
        logProb: opts.newLogProbs,
        advantages,
        rolloutIsWeights: w,
      },
      opts,
    ).tokenGrads;
    recordedWeights = new Float32Array(n);
  }
  for (let i = 0; i < batch.nRows; i++) {
    const c = coef[i];
    let s = 0;
    for (let t = off[i]; t < off[i + 1]; t++) {
      if (!mask[t]) continue;
      const v = -advantages[t] * c * (w ? w[t] : 1);
      weights[t] = v;
      s += v;
      if (grads && recordedWeights) recordedWeights[t] = grads[t] * c;
    }
    rowSums[i] = s;
    rolloutSums[rollouts.group[i]] += s;
    groupSums[uids.group[i]] += s;
  }
  return { advantages, weights, recordedWeights, rowSums, rolloutSums, groupSums, groups: uids };
}

export interface AllLossModes {
  advantages: Float32Array;
  modes: Record<LossMode, { weights: Float32Array; rolloutTotals: Float64Array; total: number }>;
}

/** Every loss mode's per-token weights at ratio 1 and per-rollout totals, from one advantage computation. */
export function allLossModes(
  batch: TrainingBatch,
  opts: Omit<EffectiveWeightOptions, 'lossAggMode'>,
): AllLossModes {
  const full = { ...opts, lossAggMode: 'token-mean' as LossMode };
  const uids = indexGroups(batch.dataIds);
  const rollouts = groupingFromIds(batch.rowRollout);
  const advantages = advantagesFor(batch, full, uids, rollouts);
  const n = batch.offsets[batch.nRows];
  const k = ALL_LOSS_MODES.length;
  const coefs = ALL_LOSS_MODES.map((m) => rowCoefficients(batch, m, full, rollouts));
  const weights = ALL_LOSS_MODES.map(() => new Float32Array(n));
  const totals = ALL_LOSS_MODES.map(() => new Float64Array(rollouts.nGroups));
  const w = opts.rolloutIsWeights ?? null;
  const { offsets: off, mask } = batch;
  const c = new Float64Array(k);
  for (let i = 0; i < batch.nRows; i++) {
    for (let j = 0; j < k; j++) c[j] = coefs[j][i];
    let s = 0;
    for (let t = off[i]; t < off[i + 1]; t++) {
      if (!mask[t]) continue;
      const g = -advantages[t] * (w ? w[t] : 1);
      s += g;
      for (let j = 0; j < k; j++) weights[j][t] = g * c[j];
    }
    const r = rollouts.group[i];
    for (let j = 0; j < k; j++) totals[j][r] += s * c[j];
  }
  const modes = {} as AllLossModes['modes'];
  ALL_LOSS_MODES.forEach((m, j) => {
    let total = 0;
    for (const x of totals[j]) total += x;
    modes[m] = { weights: weights[j], rolloutTotals: totals[j], total };
  });
  return { advantages, modes };
}

export { normalizeAdvantagesByRollout };
