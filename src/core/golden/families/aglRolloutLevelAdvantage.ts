import { indexGroups } from '../../algos/groups';
import { bf16, type FloatDType } from '../../algos/numeric';
import { getPolicyLoss } from '../../algos/policyLoss';
import { computeRolloutLevelAdvantage, normalizeAdvantagesByRollout } from '../../algos/rolloutLevel';
import { registerFamily } from '../registry';
import { globalBatchInfo } from './policyLoss';
import { nested, optNum, rowsFromMask, sameShape, strings } from './tensors';

/**
 * Agent Lightning's order (golden family `agl_rollout_level_advantage`): rollout-level advantages →
 * normalize_advantages_by_rollout → the per_rollout_mean policy loss.
 */
registerFamily(
  'agl_rollout_level_advantage',
  (c, { stack }) => {
    const p = c.params;
    const rows = rowsFromMask(c.input.response_mask, 'response_mask');
    const dtype: FloatDType = p.reward_dtype === 'bfloat16' ? 'bfloat16' : 'float32';
    if (p.reward_dtype !== undefined && p.reward_dtype !== 'float32' && p.reward_dtype !== 'bfloat16')
      throw new Error(`reward_dtype must be float32 or bfloat16, got ${JSON.stringify(p.reward_dtype)}`);
    const rewards = sameShape(rows, c.input.token_level_rewards, 'token_level_rewards');
    if (dtype === 'bfloat16') for (let i = 0; i < rewards.length; i++) rewards[i] = bf16(rewards[i]);
    const rollouts = indexGroups(strings(c.input.rollout_id, 'rollout_id'));
    const uids = indexGroups(strings(c.input.uid, 'uid'));
    const adv = computeRolloutLevelAdvantage(
      String(p.adv_estimator),
      { rows, tokenLevelRewards: rewards, uids, rollouts },
      {
        normAdvByStd: p.norm_adv_by_std_in_grpo !== false,
        gamma: optNum(p.gamma) ?? 1,
        dtype,
        stack,
      },
    );
    const numTrainedRows = optNum(p.num_trained_rows) ?? rows.nRows;
    const normalized = normalizeAdvantagesByRollout(rows, adv.advantages, rollouts, numTrainedRows, dtype);
    const loss = getPolicyLoss(String(p.loss_mode ?? 'per_rollout_mean'), stack).compute(
      {
        rows,
        oldLogProb: sameShape(rows, c.input.old_log_prob, 'old_log_prob'),
        logProb: sameShape(rows, c.input.log_prob, 'log_prob'),
        advantages: normalized,
        advantagesDType: dtype,
        rolloutIsWeights:
          c.input.rollout_is_weights == null
            ? null
            : sameShape(rows, c.input.rollout_is_weights, 'rollout_is_weights'),
      },
      {
        lossAggMode: String(p.loss_agg_mode ?? 'token-mean'),
        clipRatio: optNum(p.clip_ratio) ?? 0.2,
        clipRatioLow: optNum(p.clip_ratio_low),
        clipRatioHigh: optNum(p.clip_ratio_high),
        clipRatioC: optNum(p.clip_ratio_c) ?? 3,
        paddedWidth: rows.T,
        stack,
        ...globalBatchInfo(p.global_batch_info),
      },
    );
    return {
      advantages: nested(adv.advantages, rows.nRows, rows.T),
      returns: nested(adv.returns, rows.nRows, rows.T),
      advantages_dtype: dtype,
      normalized_advantages: nested(normalized, rows.nRows, rows.T),
      pg_loss: loss.pgLoss,
      pg_clipfrac: loss.pgClipfrac,
      ppo_kl: loss.ppoKl,
      pg_clipfrac_lower: loss.pgClipfracLower,
      rollout_level_advantage_metrics: adv.metrics,
    };
  },
  ['rollout_level_advantage_metrics'],
);
