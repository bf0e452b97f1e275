/**
 * Completed rollouts as Agent Lightning's trainer holds them before sample building (`CompletedRollout` with
 * `Triplet`s, agentlightning/verl/agl_rollout_manager.py), in the JSON shape of the golden `agl_trajectory`
 * inputs: `{"rollouts": [{rollout_id, data_id, step, sample_idx_in_step, final_reward, triplets: [{
 * prompt_token_ids, response_token_ids, response_log_probs}]}]}`. A triplet carries ids only, so its call has
 * an empty request and a null response message.
 */
import type { ModelCall, Rollout, RolloutGap, TraceIssue } from '../types';
import {
  bump,
  describe,
  type ImportCounters,
  issueFrom,
  type JsonObject,
  join,
  RecordInvalid,
  readArray,
  readLogProbs,
  readObject,
  readTokenIds,
} from '../validate';
import { assembleRollout, readCall } from './jsonl';

/** Unreadable parts of one rollout that are listed one by one; the rest are counted. */
export const MAX_GAPS = 100;

/**
 * Reads one completed rollout; `where` names it in issues ("rollouts[3]"). A bad triplet costs only itself: it
 * is reported, and the rollout is kept without it and marked incomplete.
 */
export function readCompletedRollout(
  v: unknown,
  where: string,
  counters: ImportCounters,
  issues: TraceIssue[],
): Rollout {
  const o = readObject(v, '');
  const fr = o.final_reward;
  // Upstream `_as_reward_value`: numbers count, booleans and anything else mean "no reward".
  if (fr !== null && fr !== undefined && (typeof fr !== 'number' || !Number.isFinite(fr)))
    throw new RecordInvalid(
      'final_reward',
      `must be a finite number or null, got ${typeof fr === 'number' ? fr : describe(fr)}`,
    );
  const calls: ModelCall[] = [];
  const gaps: RolloutGap[] = [];
  let bad = 0;
  if (o.triplets !== null && o.triplets !== undefined) {
    readArray(o.triplets, 'triplets').forEach((t, i) => {
      const path = join('triplets', i);
      try {
        const to = readObject(t, path);
        const rec: Record<string, unknown> = {
          request: { messages: [], sampling: {} },
          response: null,
          prompt_token_ids: readTokenIds(to.prompt_token_ids, join(path, 'prompt_token_ids')),
          response_token_ids: readTokenIds(to.response_token_ids, join(path, 'response_token_ids')),
        };
        if (to.response_log_probs !== null && to.response_log_probs !== undefined) {
          const lp = readLogProbs(to.response_log_probs, join(path, 'response_log_probs')).values;
          const nIds = (rec.response_token_ids as Int32Array).length;
          if (lp.length === nIds) rec.response_log_probs = lp;
          else {
            // As upstream's trainer treats it: the call's aligned log-probs are absent (see TRACE_FORMAT.md).
            issues.push({
              where,
              field: join(path, 'response_log_probs'),
              message: `has ${lp.length} values but response_token_ids has ${nIds}; the call's log-probs are treated as absent`,
              severity: 'warning',
            });
            rec.mismatched_log_probs = lp;
            bump(counters, 'logprobs_wrong_length_calls');
          }
        }
        calls.push(readCall(rec, path, counters));
      } catch (e) {
        // a rollout of a million broken triplets is reported in full only for the first MAX_GAPS
        if (++bad > MAX_GAPS) return;
        const issue = issueFrom(e, where);
        gaps.push({ where: `${where}.${issue.field ?? path}`, message: issue.message });
        issue.message += `; the rollout is kept without triplets[${i}] and marked incomplete`;
        issues.push(issue);
      }
    });
    if (bad > MAX_GAPS) {
      const message = `and ${bad - MAX_GAPS} more triplets could not be read`;
      gaps.push({ where: `${where}.triplets`, message });
      issues.push({
        where,
        field: 'triplets',
        message: `${message}; the rollout is kept without them`,
        severity: 'error',
      });
    }
  }
  const fields = {
    rollout_id: o.rollout_id,
    data_id: o.data_id,
    step: o.step ?? 0,
    sample_idx_in_step: o.sample_idx_in_step ?? 0,
    final_reward: fr === undefined ? null : fr,
    rewards: fr === null || fr === undefined ? [] : [{ value: fr }],
    metadata: {},
  } as JsonObject;
  const r = assembleRollout(fields, calls);
  if (gaps.length) r.incomplete = gaps;
  return r;
}

/** Reads `{"rollouts": [...]}` (already JSON-decoded); a bad rollout is reported and skipped. */
export function readCompletedRollouts(doc: unknown): {
  rollouts: Rollout[];
  issues: TraceIssue[];
  counters: ImportCounters;
} {
  const rollouts: Rollout[] = [];
  const issues: TraceIssue[] = [];
  const counters: ImportCounters = {};
  const top = readObject(doc, 'document');
  readArray(top.rollouts, 'rollouts').forEach((v, i) => {
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
