/**
 * The `agl_trajectory` golden family (golden README §6): Agent Lightning's
 * `RolloutAdapter.get_train_data_batch` run on completed rollouts. Turns one case's `{params, input}` into the
 * `expected` shape by running our sample builder, so the golden runner can compare it with upstream.
 * Where upstream raises, this throws an Error whose message starts with the upstream exception class.
 */
import {
  buildTrainingBatch,
  SampleBuildError,
  type TraceAggregatorLevel,
} from '../aggregate/buildTrainingBatch';
import { padTrainingBatch } from '../aggregate/pad';
import { readCompletedRollouts } from '../trace/io/completedRollouts';
import { formatIssue } from '../trace/types';

export interface AglTrajectoryParams {
  trace_aggregator_level: string;
  max_prompt_length: number;
  max_response_length: number;
  pad_token_id: number;
  reward_fillna_value: number;
  global_steps?: number;
}

export interface AglTrajectoryRow {
  rollout_id: string;
  data_id: string;
  turn_index: number | null;
  prompt_ids: number[];
  response_ids: number[];
  response_mask: number[];
  response_log_probs: number[] | null;
  token_level_scores: number[];
  reward: number;
  is_drop: boolean;
  position_ids: number[];
}

export interface AglTrajectoryExpected {
  n_rows: number;
  rows: AglTrajectoryRow[];
  batch_keys: string[];
  has_response_mask_key: boolean;
  has_rollout_log_probs_key: boolean;
  counters: {
    unmerged_count: number | null;
    n_trunc: number;
    n_skipped_empty: number;
    n_merge_mismatch_rows: number | null;
  };
  metrics: Record<string, number>;
}

function sum(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i];
  return s;
}

export function runAglTrajectoryCase(c: { params: unknown; input: unknown }): AglTrajectoryExpected {
  const p = c.params as AglTrajectoryParams;
  const imported = readCompletedRollouts(c.input);
  const fatal = imported.issues.filter((i) => i.severity !== 'warning');
  // Upstream validates the rollouts with pydantic; a malformed one is a ValidationError there.
  if (fatal.length) throw new Error(`ValidationError: ${fatal.map(formatIssue).join('; ')}`);
  let res: ReturnType<typeof buildTrainingBatch>;
  try {
    res = buildTrainingBatch(imported.rollouts, {
      level: p.trace_aggregator_level as TraceAggregatorLevel,
      maxPromptLength: p.max_prompt_length,
      maxResponseLength: p.max_response_length,
      padTokenId: p.pad_token_id,
      rewardFillnaValue: p.reward_fillna_value,
      callFilter: 'all',
    });
  } catch (e) {
    if (e instanceof SampleBuildError) throw new Error(`${e.upstreamClass}: ${e.message}`);
    throw e;
  }
  const { batch, counters, metrics } = res;
  // Read the row fields from the padded tensors, as upstream's batch holds them, and unpad them again.
  const P = p.max_prompt_length;
  const R = p.max_response_length;
  const padded = padTrainingBatch(res, { maxPromptLength: P, maxResponseLength: R });
  const level = p.trace_aggregator_level;
  const hasLp = padded.rolloutLogProbs !== null;
  const rows: AglTrajectoryRow[] = [];
  for (let r = 0; r < batch.nRows; r++) {
    const T = P + R;
    const attn = padded.attentionMask.subarray(r * T, (r + 1) * T);
    const pos = padded.positionIds.subarray(r * T, (r + 1) * T);
    const promptLen = sum(attn.subarray(0, P));
    const respLen = sum(attn.subarray(P));
    const resp = (a: Int32Array | Uint8Array | Float32Array): number[] =>
      Array.from(a.subarray(r * R, r * R + respLen));
    rows.push({
      rollout_id: batch.rolloutIds[r],
      data_id: batch.dataIds[r],
      turn_index: level === 'transition' ? batch.turnIndex[r] : null,
      prompt_ids: Array.from(padded.prompts.subarray(r * P + (P - promptLen), (r + 1) * P)),
      response_ids: resp(padded.responses),
      // At transition level upstream emits no response_mask; verl derives it from attention_mask (all ones).
      response_mask:
        level === 'transition' ? Array.from(attn.subarray(P, P + respLen)) : resp(padded.responseMask),
      response_log_probs: padded.rolloutLogProbs ? resp(padded.rolloutLogProbs) : null,
      token_level_scores: resp(padded.tokenLevelScores),
      reward: sum(padded.tokenLevelScores.subarray(r * R, (r + 1) * R)),
      is_drop: padded.isDropMask[r] === 1,
      position_ids: Array.from(pos).filter((_, t) => attn[t] === 1),
    });
  }
  const keys = [
    'attention_mask',
    'input_ids',
    'is_drop_mask',
    'position_ids',
    'prompts',
    'responses',
    'token_level_scores',
  ];
  if (level === 'trajectory') keys.push('response_mask');
  if (hasLp) keys.push('rollout_log_probs');
  keys.sort();
  return {
    n_rows: batch.nRows,
    rows,
    batch_keys: keys,
    has_response_mask_key: level === 'trajectory',
    has_rollout_log_probs_key: hasLp,
    counters: {
      unmerged_count: counters.nUnmerged,
      n_trunc: counters.nTrunc,
      n_skipped_empty: counters.nSkippedEmpty,
      n_merge_mismatch_rows: counters.nMergeMismatchRows,
    },
    metrics,
  };
}
