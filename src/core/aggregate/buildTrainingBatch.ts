/**
 * Sample building: rollouts → training rows, with the semantics of Agent Lightning v1.0
 * `agentlightning/verl/rollout_adapter.py:RolloutAdapter.get_train_data_batch` (trace_aggregator_level
 * `transition` | `trajectory`), in ragged CSR layout instead of padded tensors.
 *
 * Upstream rules reproduced here:
 * - rollouts are ordered by (step, sample_idx_in_step) (a stable sort); a rollout without calls is skipped;
 * - transition: one row per call; trajectory: walk the calls with ctx = prompt_0 + response_0; if the next
 *   prompt starts with ctx, its extra tokens (observations) join the response with mask 0 and log-prob 0.0,
 *   then its response with mask 1, and ctx = prompt_k + response_k; otherwise the row closes (a merge failure)
 *   and a new row starts at that call;
 * - a prompt longer than max_prompt_length keeps its FIRST max_prompt_length ids and sets is_drop;
 *   a response longer than max_response_length keeps its first ids (counted in n_truncated_sample);
 * - a row with no mask-1 token after truncation is skipped (n_skipped_empty_rows);
 * - a row keeps log-probs only if every merged call had them with matching length; the batch has
 *   rollout_log_probs only if every row does;
 * - the reward (final_reward, or reward_fillna_value) is rounded to bfloat16 and sits on the last response
 *   token, even when that token is an observation;
 * - no rows at all raises RuntimeError.
 *
 * The prefix test compares the new prompt with the previous call's prompt + response once per call
 * (O(prompt length)); nothing allocates per token.
 */
import type { TrainingBatch } from '../batch/types';
import { tokenizeCall } from '../tokenize/retokenize';
import type { ChatTokenizer } from '../tokenize/tokenizer';
import type { ModelCall, Rollout } from '../trace/types';
import { toBf16 } from './bf16';
import { Growable } from './growable';
import { classifyMergeFailure, type MergeFailure } from './mergeFailure';

export type TraceAggregatorLevel = 'transition' | 'trajectory';

export interface BuildOptions {
  /** `agentlightning.trace_aggregator.level` */
  level: TraceAggregatorLevel;
  /** `data.max_prompt_length` (trajectory_max_prompt_length) */
  maxPromptLength: number;
  /** `data.max_response_length` (trajectory_max_response_length) */
  maxResponseLength: number;
  /** the pad id of the padded view (`padTrainingBatch` in pad.ts); the CSR rows themselves are unpadded */
  padTokenId: number;
  /** reward used for rollouts that reported none (upstream `reward_fillna_value`) */
  rewardFillnaValue: number;
  /** 'engine' (recorded ids, the default and what upstream trains on) or 'retokenize' (needs `tokenizer`) */
  tokenSource?: 'engine' | 'retokenize';
  /** decodes merge-failure contexts and classifies them by text; required for tokenSource 'retokenize' */
  tokenizer?: ChatTokenizer;
  /**
   * Which calls become triplets. 'agl-manager' (default) does what the gateway's triplet view and
   * AglRolloutManager do before the adapter: keep the last call per identical prompt ids, then drop calls
   * that failed (status error / HTTP ≥ 400) or have no response ids. 'all': every call with token ids, as the
   * adapter sees the triplets it is given (completed-rollout inputs are already filtered).
   */
  callFilter?: 'agl-manager' | 'all';
}

/** Upstream exception class a build failure corresponds to (the golden runner reports it). */
export class SampleBuildError extends Error {
  constructor(
    readonly upstreamClass: 'ValueError' | 'RuntimeError',
    message: string,
  ) {
    super(message);
  }
}

export interface BuildCounters {
  /** `training/n_unmerged_rollouts`: rollouts that produced more than one row (null at transition level) */
  nUnmerged: number | null;
  /** `training/n_truncated_sample` */
  nTrunc: number;
  /** `training/n_skipped_empty_rows` */
  nSkippedEmpty: number;
  /** `training/n_trace_merge_mismatch_rows` (upstream caps the list at 100; null at transition level) */
  nMergeMismatchRows: number | null;
}

export interface BuildResult {
  batch: TrainingBatch;
  /** per row: 1 when the row kept its log-probs */
  rowHasLogProbs: Uint8Array;
  /** per response token (aligned with batch.mask): the bf16 reward on each row's last token, 0 elsewhere */
  tokenLevelScores: Float32Array;
  counters: BuildCounters;
  /** the metrics dict upstream returns (same keys) */
  metrics: Record<string, number>;
  /** every merge failure (uncapped), classified */
  mergeFailures: MergeFailure[];
  padTokenId: number;
}

/** Upstream keeps at most this many mismatch rows (`_TRACE_MERGE_MISMATCH_WANDB_LIMIT`). */
const MISMATCH_ROWS_LIMIT = 100;

export interface CallIds {
  p: Int32Array;
  r: Int32Array;
  /** the call's log-prob list as upstream's adapter sees it (any length), or null (None) */
  lp: Float32Array | null;
  /** index in rollout.calls */
  idx: number;
}

/**
 * A cheap key for the dedupe map: length, both ends and a strided sample of the ids. Equal arrays get equal
 * keys; different arrays that collide are told apart by `sameIds`, so the sample only has to be selective,
 * and the full pass over every prompt is left to the prefix test.
 */
function hashIds(a: Int32Array): number {
  const n = a.length;
  let h = 0x811c9dc5 ^ n;
  const ends = Math.min(n, 32);
  for (let i = 0; i < ends; i++) h = Math.imul(h ^ a[i], 0x01000193);
  for (let i = Math.max(ends, n - 32); i < n; i++) h = Math.imul(h ^ a[i], 0x01000193);
  const stride = Math.max(1, n >> 6);
  for (let i = ends; i < n - 32; i += stride) h = Math.imul(h ^ a[i], 0x01000193);
  return h >>> 0;
}

function sameIds(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const EMPTY = new Int32Array(0);

/**
 * The log-prob list of a call as upstream's adapter receives it: the aligned list, or the recorded list of the
 * wrong length (the adapter still uses it when truncation makes the lengths agree), or null. Under
 * 'agl-manager' the gateway's rule applies first: one non-finite value makes the whole list None
 * (routes/events.py `_extract_choice_log_probs`); completed triplets ('all') pass their values through.
 */
function callLogProbs(c: ModelCall, gatewayRule: boolean): Float32Array | null {
  const lp = c.responseLogProbs ?? c.mismatchedLogProbs;
  if (!lp) return null;
  if (gatewayRule) for (let i = 0; i < lp.length; i++) if (!Number.isFinite(lp[i])) return null;
  return lp;
}

/** The calls of a rollout that become triplets, with the ids of the chosen token source. */
export function selectCalls(rollout: Rollout, opts: BuildOptions): CallIds[] {
  const filter = opts.callFilter ?? 'agl-manager';
  let indices: number[] = rollout.calls.map((_, i) => i);
  if (filter === 'agl-manager') {
    // Gateway `format=triplet`: keep only the last call per identical prompt ids (order preserved).
    const lastByHash = new Map<number, number[]>();
    const keep = new Uint8Array(rollout.calls.length);
    rollout.calls.forEach((c, i) => {
      const p = c.promptTokenIds ?? EMPTY;
      const h = hashIds(p);
      const bucket = lastByHash.get(h);
      if (!bucket) {
        lastByHash.set(h, [i]);
        keep[i] = 1;
        return;
      }
      const j = bucket.findIndex((k) => sameIds(rollout.calls[k].promptTokenIds ?? EMPTY, p));
      if (j >= 0) {
        keep[bucket[j]] = 0;
        bucket[j] = i;
      } else bucket.push(i);
      keep[i] = 1;
    });
    // AglRolloutManager._build_completed_rollout: skip failed calls and calls without response ids.
    indices = indices.filter((i) => {
      const c = rollout.calls[i];
      return (
        keep[i] === 1 && c.error === undefined && c.httpStatus < 400 && (c.responseTokenIds?.length ?? 0) > 0
      );
    });
  }
  const out: CallIds[] = [];
  for (const i of indices) {
    const ids = callIds(rollout.calls[i], opts);
    if (ids) out.push({ ...ids, idx: i });
  }
  return out;
}

function callIds(c: ModelCall, opts: BuildOptions): Omit<CallIds, 'idx'> | null {
  const gatewayRule = (opts.callFilter ?? 'agl-manager') === 'agl-manager';
  if ((opts.tokenSource ?? 'engine') === 'engine') {
    if (!c.promptTokenIds || !c.responseTokenIds) return null;
    return { p: c.promptTokenIds, r: c.responseTokenIds, lp: callLogProbs(c, gatewayRule) };
  }
  if (!opts.tokenizer) throw new Error("tokenSource 'retokenize' needs a tokenizer");
  const t = tokenizeCall(opts.tokenizer, c, 'retokenize');
  if (!t) return null;
  // Engine log-probs belong to the sampled ids; they only carry over when retokenization reproduced them.
  const lp =
    c.responseTokenIds && sameIds(c.responseTokenIds, t.responseIds) ? callLogProbs(c, gatewayRule) : null;
  return { p: t.promptIds, r: t.responseIds, lp };
}

function sortedOrder(rollouts: Rollout[]): number[] {
  const order = rollouts.map((_, i) => i);
  // Array.prototype.sort is stable, like Python's sorted().
  order.sort(
    (a, b) =>
      (rollouts[a].step ?? 0) - (rollouts[b].step ?? 0) ||
      (rollouts[a].sampleIdxInStep ?? 0) - (rollouts[b].sampleIdxInStep ?? 0),
  );
  return order;
}

export function buildTrainingBatch(rollouts: Rollout[], opts: BuildOptions): BuildResult {
  const level = opts.level;
  if (level !== 'transition' && level !== 'trajectory')
    throw new SampleBuildError('ValueError', `Unknown trace_aggregator_level: ${String(level)}`);
  const maxP = opts.maxPromptLength;
  const maxR = opts.maxResponseLength;

  // First pass: pick each rollout's calls and size the buffers, so the merge itself never reallocates.
  const order = sortedOrder(rollouts);
  const selected = order.map((ri) => selectCalls(rollouts[ri], opts));
  let respBound = 0;
  let promptBound = 0;
  let rowBound = 0;
  for (const calls of selected) {
    for (let k = 0; k < calls.length; k++) {
      const c = calls[k];
      respBound += c.r.length;
      if (level === 'transition' || k === 0) {
        promptBound += Math.min(c.p.length, maxP);
        rowBound++;
      } else {
        const prev = calls[k - 1];
        respBound += Math.max(0, c.p.length - prev.p.length - prev.r.length);
      }
    }
  }
  const respIds = new Growable(Int32Array, Math.max(respBound, 16));
  const mask = new Growable(Uint8Array, Math.max(respBound, 16));
  const logProbs = new Growable(Float32Array, Math.max(respBound, 16));
  const tokenCall = new Growable(Int32Array, Math.max(respBound, 16));
  const promptIds = new Growable(Int32Array, Math.max(promptBound, 16));
  const offsets = new Growable(Int32Array, rowBound + 1);
  const promptOffsets = new Growable(Int32Array, rowBound + 1);
  offsets.push(0);
  promptOffsets.push(0);
  const rowRollout = new Growable(Int32Array, Math.max(rowBound, 1));
  const turnIndex = new Growable(Int32Array, Math.max(rowBound, 1));
  const firstCall = new Growable(Int32Array, Math.max(rowBound, 1));
  const nCalls = new Growable(Int32Array, Math.max(rowBound, 1));
  const isDrop = new Growable(Uint8Array, Math.max(rowBound, 1));
  const rowReward = new Growable(Float32Array, Math.max(rowBound, 1));
  const rowHasLp = new Growable(Uint8Array, Math.max(rowBound, 1));
  const rolloutIds: string[] = [];
  const dataIds: string[] = [];
  const mergeFailures: MergeFailure[] = [];

  let nTrunc = 0;
  let nSkippedEmpty = 0;
  let nUnmerged = 0;
  let rewardSum = 0;
  let nWithReward = 0;
  let nWithTrace = 0;
  let nTurns = 0;
  let turnLenSum = 0;
  let turnLenMax = Number.NEGATIVE_INFINITY;
  let turnLenMin = Number.POSITIVE_INFINITY;

  const countTurn = (len: number) => {
    nTurns++;
    turnLenSum += len;
    if (len > turnLenMax) turnLenMax = len;
    if (len < turnLenMin) turnLenMin = len;
  };

  /** Closes the row whose response tokens start at `start`; returns whether it was kept. */
  const closeRow = (
    start: number,
    prompt: Int32Array,
    ri: number,
    turn: number,
    first: number,
    count: number,
    lpOk: boolean,
    reward: number,
  ): boolean => {
    let len = respIds.length - start;
    if (len > maxR) {
      len = maxR;
      respIds.length = mask.length = tokenCall.length = start + maxR;
      nTrunc++;
    }
    let train = 0;
    const m = mask.data;
    for (let i = start; i < start + len; i++) train += m[i];
    if (train === 0) {
      respIds.length = mask.length = tokenCall.length = logProbs.length = start;
      nSkippedEmpty++;
      return false;
    }
    // Upstream truncates the log-prob list like the ids, then keeps it only if the lengths agree. An aligned
    // list was written straight into logProbs; a list of another length waits in rowLp.
    const keepLp = lpOk && Math.min(lpDirect ? logProbs.length - start : rowLp.length, maxR) === len;
    logProbs.length = start;
    if (keepLp && !lpDirect) logProbs.append(rowLp.data.subarray(0, len));
    else if (keepLp) logProbs.length = start + len;
    else logProbs.fill(Number.NaN, len);
    const drop = prompt.length > maxP;
    promptIds.append(drop ? prompt.subarray(0, maxP) : prompt);
    promptOffsets.push(promptIds.length);
    offsets.push(respIds.length);
    rowRollout.push(ri);
    turnIndex.push(turn);
    firstCall.push(first);
    nCalls.push(count);
    isDrop.push(drop ? 1 : 0);
    rowReward.push(reward);
    rowHasLp.push(keepLp ? 1 : 0);
    rolloutIds.push(rollouts[ri].rolloutId);
    dataIds.push(rollouts[ri].dataId);
    return true;
  };

  /**
   * The running row's log-prob list, built as upstream builds `current_response_log_probs`: straight into
   * logProbs when the row's first list is aligned with its ids (later lists must be, or the list dies), else
   * in the scratch rowLp.
   */
  const rowLp = new Growable(Float32Array, 1024);
  let lpDirect = true;
  const lpAppend = (v: Float32Array) => (lpDirect ? logProbs : rowLp).append(v);
  const lpZeros = (n: number) => (lpDirect ? logProbs : rowLp).fill(0, n);

  const appendResponse = (c: CallIds) => {
    respIds.append(c.r);
    mask.fill(1, c.r.length);
    tokenCall.fill(c.idx, c.r.length);
  };

  /** Starts a row's log-prob list with the call's list (used as is, whatever its length); false = None. */
  const startLp = (c: CallIds): boolean => {
    rowLp.length = 0;
    lpDirect = true;
    if (c.lp === null) return false;
    lpDirect = c.lp.length === c.r.length;
    lpAppend(c.lp);
    return true;
  };

  for (let oi = 0; oi < order.length; oi++) {
    const ri = order[oi];
    const rollout = rollouts[ri];
    const fr = rollout.finalReward;
    const reward = fr ?? opts.rewardFillnaValue;
    rewardSum += reward;
    if (fr !== null && fr !== undefined) nWithReward++;
    const bfReward = toBf16(reward);
    const calls = selected[oi];
    if (calls.length === 0) continue;
    nWithTrace++;

    if (level === 'transition') {
      calls.forEach((c, t) => {
        countTurn(c.r.length);
        const start = respIds.length;
        appendResponse(c);
        closeRow(start, c.p, ri, t, c.idx, 1, startLp(c), bfReward);
      });
      continue;
    }

    let c0 = calls[0];
    countTurn(c0.r.length);
    let start = respIds.length;
    let rowPrompt = c0.p;
    let rowFirst = c0.idx;
    let rowCount = 1;
    let lpOk = startLp(c0);
    appendResponse(c0);
    let prevP = c0.p;
    let prevR = c0.r;
    let groups = 0;
    for (let k = 1; k < calls.length; k++) {
      const c = calls[k];
      countTurn(c.r.length);
      const ctxLen = prevP.length + prevR.length;
      const extends_ = c.p.length >= ctxLen && firstDiffIsEnd(c.p, prevP, prevR);
      if (extends_) {
        const obs = c.p.length - ctxLen;
        if (obs > 0) {
          respIds.append(c.p.subarray(ctxLen));
          mask.fill(0, obs);
          tokenCall.fill(c.idx, obs);
          if (lpOk) lpZeros(obs);
        }
        // A merged call keeps the list alive only with a list of exactly its response length.
        if (lpOk) {
          if (c.lp === null || c.lp.length !== c.r.length) lpOk = false;
          else lpAppend(c.lp);
        }
        appendResponse(c);
        rowCount++;
      } else {
        const cls = classifyMergeFailure(c.p, prevP, prevR, opts.tokenizer);
        mergeFailures.push({
          rolloutIndex: ri,
          rolloutId: rollout.rolloutId,
          dataId: rollout.dataId,
          callIndex: c.idx,
          prevCallIndex: c0.idx,
          contextLength: ctxLen,
          prevPromptLength: prevP.length,
          promptLength: c.p.length,
          ...cls,
        });
        closeRow(start, rowPrompt, ri, -1, rowFirst, rowCount, lpOk, bfReward);
        groups++;
        start = respIds.length;
        rowPrompt = c.p;
        rowFirst = c.idx;
        rowCount = 1;
        lpOk = startLp(c);
        appendResponse(c);
      }
      c0 = c;
      prevP = c.p;
      prevR = c.r;
    }
    closeRow(start, rowPrompt, ri, -1, rowFirst, rowCount, lpOk, bfReward);
    groups++;
    if (groups > 1) nUnmerged++;
  }

  const nRows = rowRollout.length;
  if (nRows === 0)
    throw new SampleBuildError('RuntimeError', 'get_train_data_batch emitted zero training rows.');

  const off = offsets.toArray();
  const hasLp = rowHasLp.toArray();
  const allLp = hasLp.every((x) => x === 1);
  const scores = new Float32Array(respIds.length);
  const rewards = rowReward.toArray();
  for (let r = 0; r < nRows; r++) scores[off[r + 1] - 1] = rewards[r];
  const lpArr = allLp ? logProbs.toArray() : null;

  const batch: TrainingBatch = {
    nRows,
    offsets: off,
    mask: mask.toArray(),
    rowRollout: rowRollout.toArray(),
    rolloutIds,
    dataIds,
    turnIndex: turnIndex.toArray(),
    firstCall: firstCall.toArray(),
    nCalls: nCalls.toArray(),
    isDrop: isDrop.toArray(),
    promptOffsets: promptOffsets.toArray(),
    promptIds: promptIds.toArray(),
    responseIds: respIds.toArray(),
    tokenCall: tokenCall.toArray(),
    responseLogProbs: lpArr,
    reward: rewards,
  };

  const nMismatch = Math.min(mergeFailures.length, MISMATCH_ROWS_LIMIT);
  const metrics: Record<string, number> = {
    'training/reward': order.length ? rewardSum / order.length : 0,
    'training/n_sample': nRows,
    'training/n_rollouts': order.length,
    'training/n_rollouts_w_trace': nWithTrace,
    'training/n_rollouts_w_reward': nWithReward,
    'training/n_truncated_sample': nTrunc,
    'training/n_skipped_empty_rows': nSkippedEmpty,
    'training/n_turns': nTurns,
    'response_length/training/avg_by_turn': turnLenSum / nTurns,
    'response_length/training/max_by_turn': turnLenMax,
    'response_length/training/min_by_turn': turnLenMin,
  };
  if (level === 'trajectory') {
    metrics['training/n_unmerged_rollouts'] = nUnmerged;
    metrics['training/n_trace_merge_mismatch_rows'] = nMismatch;
  }
  return {
    batch,
    rowHasLogProbs: hasLp,
    tokenLevelScores: scores,
    counters: {
      nUnmerged: level === 'trajectory' ? nUnmerged : null,
      nTrunc,
      nSkippedEmpty,
      nMergeMismatchRows: level === 'trajectory' ? nMismatch : null,
    },
    metrics,
    mergeFailures,
    padTokenId: opts.padTokenId,
  };
}

/** prompt starts with prevP ++ prevR (the caller checked the length). */
function firstDiffIsEnd(prompt: Int32Array, prevP: Int32Array, prevR: Int32Array): boolean {
  const np = prevP.length;
  for (let i = 0; i < np; i++) if (prompt[i] !== prevP[i]) return false;
  const nr = prevR.length;
  for (let i = 0; i < nr; i++) if (prompt[np + i] !== prevR[i]) return false;
  return true;
}
