/**
 * The Trace and Advantages views' trainer options that reproduce what a training run did with its batch: a
 * kept step trace opened from the Train tab is shown under the run's own estimator, loss, aggregation level,
 * limits and rollout correction (the loop's config keys are the same upstream keys core's options name).
 */
import { DEFAULT_TRAINER_OPTIONS, type TrainerOptions } from '../../core/pipeline/options';
import type { TrainConfig } from '../../train/config';

export function explorerOptionsOf(c: TrainConfig): TrainerOptions {
  const a = c.actor_rollout_ref.actor;
  const ta = c.agentlightning.trace_aggregator;
  const rc = c.algorithm.rollout_correction;
  const trajectory = ta.level === 'trajectory';
  return {
    ...DEFAULT_TRAINER_OPTIONS,
    tokenSource: c.lab.token_source,
    traceAggregatorLevel: ta.level,
    // the loop's limits per level (objective.ts buildStepRows)
    maxPromptLength: trajectory ? ta.trajectory_max_prompt_length : c.data.max_prompt_length,
    maxResponseLength: trajectory ? ta.trajectory_max_response_length : c.data.max_response_length,
    rewardFillnaValue: c.agentlightning.reward_fillna_value,
    advEstimator: c.algorithm.adv_estimator,
    normAdvByStdInGrpo: c.algorithm.norm_adv_by_std_in_grpo,
    gamma: c.algorithm.gamma,
    enableRolloutLevelAdvantage: c.algorithm.enable_rollout_level_advantage,
    rewardDtype: c.lab.reward_dtype,
    // the page's loss mode is a verl aggregation mode or Agent Lightning's per_rollout_mean policy loss
    lossMode: a.policy_loss.loss_mode === 'per_rollout_mean' ? 'per_rollout_mean' : a.loss_agg_mode,
    lossScaleFactor: a.loss_scale_factor,
    clipRatio: a.clip_ratio,
    clipRatioLow: a.clip_ratio_low ?? a.clip_ratio,
    clipRatioHigh: a.clip_ratio_high ?? a.clip_ratio,
    clipRatioC: a.clip_ratio_c,
    ppoMiniBatchSize: a.ppo_mini_batch_size * c.actor_rollout_ref.rollout.n,
    maxPpoUpdateTimes: c.agentlightning.max_ppo_update_times,
    rolloutIs: rc.rollout_is,
    rolloutIsThreshold: rc.rollout_is_threshold,
    rolloutIsBatchNormalize: rc.rollout_is_batch_normalize,
    rolloutRs: rc.rollout_rs,
    rolloutRsThreshold: rc.rollout_rs_threshold,
  };
}
