/**
 * Why a rollout gives the trainer nothing: for each rollout that yields no training rows, or rows that carry
 * no gradient, the rule that dropped it and where (which call, which option, which group). The rules are the
 * trainer's own, in the order it applies them:
 * - `no_calls`: the adapter skips a rollout without triplets;
 * - `every_call_dropped`: every call was removed before sample building (AglRolloutManager / gateway rules:
 *   failed call, HTTP ≥ 400, no response ids, an identical prompt later in the rollout), each call's reason
 *   listed; `empty_response` when the reason of every call is an empty response; `no_token_ids` when every
 *   call is text only (a text-only file read without a tokenizer);
 * - `truncation`: every row was cut to no trainable token by `data.max_response_length`
 *   (n_skipped_empty_rows), or its prompt exceeded `data.max_prompt_length` (is_drop: not trained);
 * - `trimmed`: the rows were trimmed off to a multiple of the mini-batch;
 * - `zero_variance_group`: every rollout of its group has the same reward, so a group-relative advantage
 *   (GRPO, RLOO, …) is exactly 0 on every token;
 * - `zero_advantage`: the advantage is 0 on every trained token for another reason (a singleton with reward 0);
 * - `no_reward`: the rollout reported no reward; the trainer used `reward_fillna_value` (listed with the rule
 *   that then gave it no gradient, or alone when it still trained on the filler).
 * The page's trace view and `lab analyze` show these.
 */
import { type BuildOptions, selectCalls } from '../aggregate/buildTrainingBatch';
import type { ChatTokenizer } from '../tokenize/tokenizer';
import type { ModelCall, Rollout } from '../trace/types';
import type { TrainerOptions } from './options';
import { buildOptionsOf, ROW_STATUS, type TrainerView } from './trainer';

export type NoRowsRule =
  | 'no_calls'
  | 'every_call_dropped'
  | 'empty_response'
  | 'no_token_ids'
  | 'truncation'
  | 'trimmed'
  | 'zero_variance_group'
  | 'zero_advantage'
  | 'no_reward';

export interface NoRowsReason {
  rule: NoRowsRule;
  /** where the rule applied: "calls[2]", "data.max_prompt_length = 4096", "group task-3" */
  where: string;
  detail: string;
}

export interface NoRowsEntry {
  /** index into the rollouts given */
  rollout: number;
  rolloutId: string;
  dataId: string;
  /** training rows the adapter built for it, and how many of those the trainer trains on */
  rows: number;
  trainedRows: number;
  /** false: the rollout moves the policy (it is listed only for `no_reward`) */
  noGradient: boolean;
  reasons: NoRowsReason[];
}

/** Why one call is not a triplet (AglRolloutManager._build_completed_rollout and the gateway's triplet view). */
function callDrop(c: ModelCall, laterSamePrompt: boolean): { rule: NoRowsRule; detail: string } | null {
  if (c.error !== undefined) return { rule: 'every_call_dropped', detail: `failed call: ${c.error}` };
  if (c.httpStatus >= 400) return { rule: 'every_call_dropped', detail: `failed call: HTTP ${c.httpStatus}` };
  if (!c.responseTokenIds) {
    if (c.response !== null && !c.promptTokenIds)
      return {
        rule: 'no_token_ids',
        detail: 'text only: the call has no token ids (no tokenizer gave it any)',
      };
    return { rule: 'every_call_dropped', detail: 'no response ids' };
  }
  if (c.responseTokenIds.length === 0) return { rule: 'empty_response', detail: 'empty response (0 ids)' };
  if (laterSamePrompt)
    return {
      rule: 'every_call_dropped',
      detail: 'a later call has the identical prompt ids (the gateway keeps the last)',
    };
  return null;
}

function sameIds(a: Int32Array | undefined, b: Int32Array | undefined): boolean {
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The reasons a rollout has no rows, from its calls alone (the sample-building rules before any row). */
function dropReasons(r: Rollout, opts: BuildOptions): NoRowsReason[] {
  if (r.calls.length === 0)
    return [{ rule: 'no_calls', where: 'calls', detail: 'the rollout has no calls: the adapter skips it' }];
  const gateway = (opts.callFilter ?? 'agl-manager') === 'agl-manager';
  const selected = selectCalls(r, opts);
  if (selected.length > 0) {
    const anyResponse = selected.some((c) => c.r.length > 0);
    return [
      anyResponse
        ? {
            rule: 'truncation',
            where: `data.max_response_length = ${opts.maxResponseLength}`,
            detail:
              'every row was cut to no trainable token (observations fill the first ids): n_skipped_empty_rows',
          }
        : { rule: 'empty_response', where: 'calls', detail: 'every kept call has an empty response' },
    ];
  }
  const drops = r.calls.map((c, i) => {
    const later = gateway && r.calls.slice(i + 1).some((d) => sameIds(d.promptTokenIds, c.promptTokenIds));
    const d = gateway ? callDrop(c, later) : null;
    if (d) return d;
    if (!c.promptTokenIds || !c.responseTokenIds)
      return c.response !== null
        ? {
            rule: 'no_token_ids' as const,
            detail: 'text only: the call has no token ids (no tokenizer gave it any)',
          }
        : { rule: 'every_call_dropped' as const, detail: 'no token ids' };
    return { rule: 'every_call_dropped' as const, detail: 'not selected' };
  });
  const all = (rule: NoRowsRule) => drops.every((d) => d.rule === rule);
  if (all('empty_response'))
    return [
      {
        rule: 'empty_response',
        where: 'calls',
        detail: `every call (${drops.length}) has an empty response`,
      },
    ];
  if (all('no_token_ids'))
    return [
      {
        rule: 'no_token_ids',
        where: 'calls',
        detail: `every call (${drops.length}) is text only: give a tokenizer to import it with ids`,
      },
    ];
  return drops.map((d, i) => ({ rule: 'every_call_dropped', where: `calls[${i}]`, detail: d.detail }));
}

/**
 * Every rollout that yields no training rows, or none that move the policy, or that reported no reward, with
 * the rules that did it. `view` is the trainer view of these rollouts under `options`, or null when the
 * trainer built no rows at all (then every rollout is explained from its calls).
 */
export function whyNoRows(
  rollouts: Rollout[],
  options: TrainerOptions,
  view: TrainerView | null,
  tokenizer?: ChatTokenizer,
): NoRowsEntry[] {
  const opts = buildOptionsOf(options, tokenizer);
  const n = rollouts.length;
  const rowsOf: number[][] = rollouts.map(() => []);
  if (view) for (let r = 0; r < view.batch.nRows; r++) rowsOf[view.batch.rowRollout[r]]?.push(r);
  // rewards of the trained rows' rollouts per group (the groups the advantage is computed over)
  const groupRewards = new Map<string, Set<number>>();
  const groupSize = new Map<string, Set<number>>();
  if (view) {
    const b = view.batch;
    for (let r = 0; r < b.nRows; r++) {
      if (view.trainPosition[r] < 0) continue;
      const g = b.dataIds[r];
      if (!groupRewards.has(g)) {
        groupRewards.set(g, new Set());
        groupSize.set(g, new Set());
      }
      groupRewards.get(g)?.add(b.reward[r]);
      groupSize.get(g)?.add(b.rowRollout[r]);
    }
  }
  const out: NoRowsEntry[] = [];
  for (let ri = 0; ri < n; ri++) {
    const r = rollouts[ri];
    const rows = rowsOf[ri];
    const reasons: NoRowsReason[] = [];
    let trained = 0;
    let noGradient = true;
    if (!view || rows.length === 0) reasons.push(...dropReasons(r, opts));
    else {
      const b = view.batch;
      const trainedRows = rows.filter((x) => view.trainPosition[x] >= 0);
      trained = trainedRows.length;
      if (trained === 0) {
        for (const x of rows) {
          const st = view.rowStatus[x];
          const promptLen = b.promptOffsets[x + 1] - b.promptOffsets[x];
          if (st === ROW_STATUS.isDrop)
            reasons.push({
              rule: 'truncation',
              where: `data.max_prompt_length = ${options.maxPromptLength}`,
              detail: `row ${x} (from calls[${b.firstCall[x]}]): the prompt is longer than max_prompt_length, cut to ${promptLen} ids and marked is_drop: not trained`,
            });
          else if (st === ROW_STATUS.trimmed)
            reasons.push({
              rule: 'trimmed',
              where: 'actor_rollout_ref.actor.ppo_mini_batch_size',
              detail: `row ${x} was trimmed off to a multiple of the mini-batch`,
            });
        }
      } else {
        let nonzero = false;
        for (const x of trainedRows)
          for (let t = b.offsets[x]; t < b.offsets[x + 1] && !nonzero; t++)
            if (view.responseMask[t] && view.advantages[t] !== 0) nonzero = true;
        if (nonzero) noGradient = false;
        else {
          const g = r.dataId;
          const rewards = groupRewards.get(g);
          const size = groupSize.get(g)?.size ?? 1;
          if (size > 1 && rewards && rewards.size === 1) {
            const value = [...rewards][0];
            reasons.push({
              rule: 'zero_variance_group',
              where: `group ${g}`,
              detail: `all ${size} rollouts of the group have reward ${value}: the group-relative advantage (R − mean) is exactly 0 on every token (${options.advEstimator})`,
            });
          } else
            reasons.push({
              rule: 'zero_advantage',
              where: `group ${g}`,
              detail: `the ${options.advEstimator} advantage is 0 on every trained token${size === 1 ? ' (a group of one)' : ''}`,
            });
        }
      }
    }
    if (r.finalReward === null)
      reasons.unshift({
        rule: 'no_reward',
        where: 'final_reward',
        detail: `the rollout reported no reward: reward_fillna_value = ${options.rewardFillnaValue} was used`,
      });
    if (reasons.length === 0) continue;
    out.push({
      rollout: ri,
      rolloutId: r.rolloutId,
      dataId: r.dataId,
      rows: rows.length,
      trainedRows: trained,
      noGradient,
      reasons,
    });
  }
  return out;
}

/** One line for an entry: `ro-3 (group task-1): zero_variance_group at group task-1: …`. */
export function formatNoRows(e: NoRowsEntry): string {
  const head = `${e.rolloutId} (group ${e.dataId}; ${e.rows} rows, ${e.trainedRows} trained)`;
  return `${head}: ${e.reasons.map((x) => `${x.rule} at ${x.where}: ${x.detail}`).join('; ')}`;
}
