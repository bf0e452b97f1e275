/**
 * Completed rollouts as Agent Lightning's trainer holds them before sample building (`CompletedRollout` with
 * `Triplet`s, agentlightning/verl/agl_rollout_manager.py), in the JSON shape of the golden `agl_trajectory`
 * inputs: `{"rollouts": [{rollout_id, data_id, step, sample_idx_in_step, final_reward, triplets: [{
 * prompt_token_ids, response_token_ids, response_log_probs}]}]}`. A triplet carries ids only, so its call has
 * an empty request and a null response message.
 */
import type { ModelCall, Rollout, TraceBatch, TraceIssue } from '../types';
import {
  bump,
  checkCallTokens,
  type ImportCounters,
  issueFrom,
  join,
  RecordInvalid,
  readArray,
  readInt,
  readLogProbs,
  readObject,
  readString,
  readTokenIds,
} from '../validate';

/** Reads one completed rollout; `where` names it in issues ("rollouts[3]"). */
export function readCompletedRollout(
  v: unknown,
  where: string,
  counters: ImportCounters,
  issues: TraceIssue[],
): Rollout {
  const o = readObject(v, '');
  const fr = o.final_reward;
  let finalReward: number | null = null;
  // Upstream `_as_reward_value`: numbers count, booleans and anything else mean "no reward".
  if (fr !== null && fr !== undefined) {
    if (typeof fr !== 'number' || !Number.isFinite(fr))
      throw new RecordInvalid('final_reward', `must be a finite number or null, got ${JSON.stringify(fr)}`);
    finalReward = fr;
  }
  const calls: ModelCall[] = [];
  if (o.triplets !== null && o.triplets !== undefined) {
    readArray(o.triplets, 'triplets').forEach((t, i) => {
      const path = join('triplets', i);
      const to = readObject(t, path);
      const call: ModelCall = {
        request: { messages: [], sampling: {} },
        response: null,
        httpStatus: 200,
        promptTokenIds: readTokenIds(to.prompt_token_ids, join(path, 'prompt_token_ids')),
        responseTokenIds: readTokenIds(to.response_token_ids, join(path, 'response_token_ids')),
      };
      if (to.response_log_probs !== null && to.response_log_probs !== undefined) {
        const lp = readLogProbs(to.response_log_probs, join(path, 'response_log_probs'));
        call.responseLogProbs = lp.values;
        bump(counters, 'nonfinite_logprobs', lp.nonFinite);
      }
      checkCallTokens(
        call,
        path,
        'lenient',
        (field, message) => issues.push({ where, field, message, severity: 'warning' }),
        counters,
      );
      calls.push(call);
    });
  }
  return {
    rolloutId: readString(o.rollout_id, 'rollout_id'),
    dataId: readString(o.data_id, 'data_id'),
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: finalReward === null ? [] : [{ value: finalReward }],
    finalReward,
    step: readInt(o.step ?? 0, 'step'),
    sampleIdxInStep: readInt(o.sample_idx_in_step ?? 0, 'sample_idx_in_step'),
    metadata: {},
  };
}

/** Reads `{"rollouts": [...]}` (already JSON-decoded); a bad rollout is reported and skipped. */
export function readCompletedRollouts(doc: unknown): TraceBatch {
  const rollouts: Rollout[] = [];
  const issues: TraceIssue[] = [];
  const counters: ImportCounters = {};
  const top = readObject(doc, 'document');
  const list = readArray(top.rollouts, 'rollouts');
  list.forEach((v, i) => {
    const where = `rollouts[${i}]`;
    try {
      rollouts.push(readCompletedRollout(v, where, counters, issues));
    } catch (e) {
      issues.push(issueFrom(e, where));
    }
  });
  counters.records_skipped = issues.filter((i) => i.severity !== 'warning').length;
  return { rollouts, issues, counters };
}
