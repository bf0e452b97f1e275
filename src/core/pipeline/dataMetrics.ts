/**
 * The data metrics Agent Lightning's `_train_step` logs once advantages are computed (before the per-rollout
 * normalisation), on the trained rows:
 *
 * - verl 0.8.0 `compute_data_metrics` (trainer/ppo/metric_utils.py, `use_critic=False`): `critic/score|rewards`
 *   (the row's summed token-level scores, i.e. its reward in the reward dtype, over rows with a response),
 *   `critic/advantages|returns` (over response-mask tokens), `response_length/*` and `prompt_length/*` (every
 *   response / prompt token of a row; clip_ratio = the share of rows at the padded width, max_response_length /
 *   max_prompt_length), `response_length_non_aborted/*`, `response/aborted_ratio`;
 * - Agent Lightning's `_grpo_group_metrics`: `training/n_groups`, `training/n_zero_adv_groups` (groups whose
 *   scores are all equal), and `critic/n_transition_after_dropping`.
 *
 * Torch reduces a bfloat16 tensor in float32 and rounds the result once (numeric.ts): means and sums of scores
 * follow that in the reward dtype.
 */
import { indexGroups } from '../algos/groups';
import { rounder } from '../algos/numeric';
import type { TrainerAdvantages, TrainerBatch } from './trainer';

function stats(prefix: string, values: ArrayLike<number>, round: (x: number) => number = Math.fround) {
  let s = 0;
  let mx = Number.NEGATIVE_INFINITY;
  let mn = Number.POSITIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    s += values[i];
    if (values[i] > mx) mx = values[i];
    if (values[i] < mn) mn = values[i];
  }
  const n = values.length;
  return {
    [`${prefix}/mean`]: n ? round(Math.fround(s) / n) : Number.NaN,
    [`${prefix}/max`]: n ? mx : Number.NaN,
    [`${prefix}/min`]: n ? mn : Number.NaN,
  };
}

function masked(values: Float32Array, mask: Uint8Array): Float32Array {
  let n = 0;
  for (let t = 0; t < mask.length; t++) n += mask[t];
  const out = new Float32Array(n);
  let k = 0;
  for (let t = 0; t < mask.length; t++) if (mask[t]) out[k++] = values[t];
  return out;
}

/** verl's and Agent Lightning's data metrics of the trained rows (see the module comment). */
export function trainerDataMetrics(tb: TrainerBatch, adv: TrainerAdvantages): Record<string, number> {
  const b = tb.batch;
  const o = tb.options;
  const R = rounder(o.rewardDtype);
  const score = Float32Array.from(tb.rewards, (x) => R(x));
  const respLen = new Float32Array(b.nRows);
  const promptLen = new Float32Array(b.nRows);
  for (let r = 0; r < b.nRows; r++) {
    respLen[r] = b.offsets[r + 1] - b.offsets[r];
    promptLen[r] = b.promptOffsets[r + 1] - b.promptOffsets[r];
  }
  const live = Array.from({ length: b.nRows }, (_, r) => r).filter((r) => respLen[r] > 0);
  const liveScore = Float32Array.from(live, (r) => score[r]);
  const liveLen = Float32Array.from(live, (r) => respLen[r]);
  const share = (xs: Float32Array, width: number) =>
    xs.length ? xs.filter((x) => x === width).length / xs.length : Number.NaN;
  const m: Record<string, number> = {
    ...stats('critic/score', liveScore, R),
    ...stats('critic/rewards', liveScore, R),
    ...stats('critic/advantages', masked(adv.advantages, adv.responseMask)),
    ...stats('critic/returns', masked(adv.returns, adv.responseMask)),
    ...stats('response_length', respLen),
    'response_length/clip_ratio': share(respLen, o.maxResponseLength),
    ...stats('response_length_non_aborted', liveLen),
    'response_length_non_aborted/clip_ratio': share(liveLen, o.maxResponseLength),
    'response/aborted_ratio': b.nRows ? (b.nRows - live.length) / b.nRows : Number.NaN,
    ...stats('prompt_length', promptLen),
    'prompt_length/clip_ratio': share(promptLen, o.maxPromptLength),
  };
  const groups = indexGroups(b.dataIds);
  const lo = new Float64Array(groups.nGroups).fill(Number.POSITIVE_INFINITY);
  const hi = new Float64Array(groups.nGroups).fill(Number.NEGATIVE_INFINITY);
  for (let r = 0; r < b.nRows; r++) {
    const g = groups.group[r];
    lo[g] = Math.min(lo[g], score[r]);
    hi[g] = Math.max(hi[g], score[r]);
  }
  let zero = 0;
  for (let g = 0; g < groups.nGroups; g++) if (hi[g] - lo[g] === 0) zero++;
  m['training/n_groups'] = groups.nGroups;
  m['training/n_zero_adv_groups'] = zero;
  m['critic/n_transition_after_dropping'] = b.nRows;
  return m;
}
