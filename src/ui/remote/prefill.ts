/**
 * "Run this on the cluster": a template's parameters pre-filled from the Advantages configuration in the URL
 * (estimator, std normalisation, rollout-level flag, loss mode, aggregation level, clip ratios, length limits).
 * A value the template does not accept (an estimator it does not offer, a length beyond the policy's context)
 * keeps the template's default; the caller shows which fields were taken.
 */
import { checkParam, defaultParams, type ParamValues } from '../../server/protocol/params';
import type { JobTemplate } from '../../server/protocol/templates';
import type { ViewState } from '../store';

export function paramsFromView(
  v: Pick<
    ViewState,
    | 'advEstimator'
    | 'normAdvByStdInGrpo'
    | 'enableRolloutLevelAdvantage'
    | 'lossMode'
    | 'traceAggregatorLevel'
    | 'clipRatioLow'
    | 'clipRatioHigh'
    | 'maxPromptLength'
    | 'maxResponseLength'
  >,
  t: JobTemplate,
): { params: ParamValues; taken: string[] } {
  const params = defaultParams(t.params);
  const wanted: Record<string, unknown> = {
    adv_estimator: v.advEstimator,
    norm_adv_by_std_in_grpo: v.normAdvByStdInGrpo,
    enable_rollout_level_advantage: v.enableRolloutLevelAdvantage,
    trace_aggregator_level: v.traceAggregatorLevel,
    clip_ratio_low: v.clipRatioLow,
    clip_ratio_high: v.clipRatioHigh,
    max_prompt_length: v.maxPromptLength,
    max_response_length: v.maxResponseLength,
  };
  // the page's loss mode is either a verl aggregation mode or Agent Lightning's per_rollout_mean policy loss
  if (v.lossMode === 'per_rollout_mean') wanted.policy_loss_mode = 'per_rollout_mean';
  else {
    wanted.loss_agg_mode = v.lossMode;
    wanted.policy_loss_mode = 'vanilla';
  }
  const taken: string[] = [];
  for (const spec of t.params) {
    if (!(spec.name in wanted)) continue;
    try {
      params[spec.name] = checkParam(spec, wanted[spec.name]);
      taken.push(spec.name);
    } catch {
      // not accepted by this template: its default stays
    }
  }
  try {
    t.crossCheck?.(params);
  } catch {
    const defaults = defaultParams(t.params);
    for (const k of ['max_prompt_length', 'max_response_length']) {
      params[k] = defaults[k];
      const i = taken.indexOf(k);
      if (i >= 0) taken.splice(i, 1);
    }
  }
  return { params, taken };
}
