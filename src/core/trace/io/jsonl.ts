/**
 * The project's own trace format: JSON Lines, one rollout per line (docs/TRACE_FORMAT.md). Token ids are JSON
 * integer arrays; log-probs are JSON numbers with `null` where a value is absent (NaN in the typed array).
 * Float32 log-probs are written as the exact double of the float32, so export → import is lossless.
 */
import type { ModelCall, Rollout, RolloutGap, TokenAlternatives, VocabMismatch } from '../types';
import {
  bump,
  checkCallTokens,
  checkRollout,
  describe,
  type ImportCounters,
  type JsonObject,
  join,
  RecordInvalid,
  readArray,
  readBool,
  readEngine,
  readHttpStatus,
  readJsonObject,
  readLogProbs,
  readObject,
  readOptInt,
  readOptString,
  readRequest,
  readResponse,
  readReward,
  readState,
  readString,
  readTimings,
  readTokenIds,
  Slab,
} from '../validate';

export interface ParseOptions {
  /** called now and then with the characters parsed so far and the total (for a progress bar) */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Parses one JSONL record (already JSON-decoded) into a Rollout; throws RecordInvalid. This is THE validator of
 * the trace model: every importer builds its rollouts through `readCall` and `assembleRollout`, so whatever
 * any reader accepts, the JSONL writer can write and this reader reads back.
 */
export function readTraceRecord(v: unknown, counters: ImportCounters): Rollout {
  const o = readObject(v, '');
  const cp = 'calls';
  const rawCalls = readArray(o.calls, cp);
  const slabs = recordSlabs(rawCalls);
  const calls = rawCalls.map((c, i) => readCall(c, join(cp, i), counters, slabs));
  return assembleRollout(o, calls);
}

/** The rollout-level fields of a record (everything but `calls`), around calls already read by `readCall`. */
export function assembleRollout(o: JsonObject, calls: ModelCall[]): Rollout {
  const rp = 'rewards';
  const rewards = readArray(o.rewards ?? [], rp).map((r, i) => readReward(r, join(rp, i)));
  const fr = o.final_reward;
  let finalReward: number | null = null;
  if (fr !== null && fr !== undefined) {
    if (typeof fr !== 'number' || !Number.isFinite(fr))
      throw new RecordInvalid(
        'final_reward',
        `must be a finite number or null, got ${typeof fr === 'number' ? fr : describe(fr)}`,
      );
    finalReward = fr;
  }
  const rollout: Rollout = {
    rolloutId: readString(o.rollout_id, 'rollout_id'),
    dataId: readString(o.data_id, 'data_id'),
    isTrain: o.is_train === undefined ? true : readBool(o.is_train, 'is_train'),
    state: readState(o.state ?? 'succeeded', 'state'),
    calls,
    rewards,
    finalReward,
    metadata: readJsonObject(o.metadata ?? {}, 'metadata'),
  };
  const err = readOptString(o.error, 'error');
  if (err !== undefined) rollout.error = err;
  const step = readOptInt(o.step, 'step');
  if (step !== undefined) rollout.step = step;
  const si = readOptInt(o.sample_idx_in_step, 'sample_idx_in_step');
  if (si !== undefined) rollout.sampleIdxInStep = si;
  if (o.incomplete !== undefined && o.incomplete !== null) {
    const ip = 'incomplete';
    const gaps = readArray(o.incomplete, ip).map((g, i): RolloutGap => {
      const gp = join(ip, i);
      const go = readObject(g, gp);
      return {
        where: readString(go.where, join(gp, 'where')),
        message: readString(go.message, join(gp, 'message')),
      };
    });
    if (gaps.length) rollout.incomplete = gaps;
  }
  checkRollout(rollout);
  return rollout;
}

export interface RecordSlabs {
  ids: Slab<Int32Array>;
  logProbs: Slab<Float32Array>;
}

const arrayLength = (v: unknown) => (Array.isArray(v) ? v.length : 0);

/** One id slab and one log-prob slab per record, sized from its calls' arrays (see Slab). */
function recordSlabs(rawCalls: unknown[]): RecordSlabs {
  let nIds = 0;
  let nLp = 0;
  for (const c of rawCalls) {
    if (c === null || typeof c !== 'object') continue;
    const o = c as Record<string, unknown>;
    nIds += arrayLength(o.prompt_token_ids) + arrayLength(o.response_token_ids);
    nLp +=
      arrayLength(o.response_log_probs) +
      arrayLength(o.mismatched_log_probs) +
      arrayLength(o.trainer_log_probs) +
      arrayLength(o.trainer_entropy);
  }
  return {
    ids: new Slab(new Int32Array(nIds), (n) => new Int32Array(n)),
    logProbs: new Slab(new Float32Array(nLp), (n) => new Float32Array(n)),
  };
}

/**
 * One call of a record (`path` names it in errors). Token arrays may be JSON arrays or typed arrays that an
 * importer already read (see readTokenIds / readLogProbs).
 */
export function readCall(v: unknown, path: string, counters: ImportCounters, slabs?: RecordSlabs): ModelCall {
  const o = readObject(v, path);
  const call: ModelCall = {
    request: readRequest(o.request, join(path, 'request')),
    response: readResponse(o.response, join(path, 'response')),
    httpStatus: o.http_status === undefined ? 200 : readHttpStatus(o.http_status, join(path, 'http_status')),
  };
  if (o.prompt_token_ids !== undefined && o.prompt_token_ids !== null)
    call.promptTokenIds = readTokenIds(o.prompt_token_ids, join(path, 'prompt_token_ids'), slabs?.ids);
  if (o.response_token_ids !== undefined && o.response_token_ids !== null)
    call.responseTokenIds = readTokenIds(o.response_token_ids, join(path, 'response_token_ids'), slabs?.ids);
  if (call.responseTokenIds !== undefined && call.promptTokenIds === undefined)
    throw new RecordInvalid(join(path, 'prompt_token_ids'), 'is missing but response_token_ids is present');
  if (o.response_log_probs !== undefined && o.response_log_probs !== null) {
    const lp = readLogProbs(o.response_log_probs, join(path, 'response_log_probs'), slabs?.logProbs);
    call.responseLogProbs = lp.values;
    bump(counters, 'nonfinite_logprobs', lp.nonFinite);
  }
  checkCallTokens(call, path, 'strict', () => {}, counters);
  if (o.mismatched_log_probs !== undefined && o.mismatched_log_probs !== null) {
    const mp = join(path, 'mismatched_log_probs');
    const lp = readLogProbs(o.mismatched_log_probs, mp, slabs?.logProbs);
    if (call.responseLogProbs)
      throw new RecordInvalid(mp, 'is given together with response_log_probs; a call has one or the other');
    if (lp.values.length === call.responseTokenIds?.length)
      throw new RecordInvalid(mp, 'has as many values as response_token_ids; use response_log_probs');
    call.mismatchedLogProbs = lp.values;
  }
  if (o.response_top_k !== undefined && o.response_top_k !== null)
    call.responseTopK = readTopK(
      o.response_top_k,
      join(path, 'response_top_k'),
      call.responseTokenIds?.length,
    );
  for (const [key, field] of [
    ['trainer_log_probs', 'trainerLogProbs'],
    ['trainer_entropy', 'trainerEntropy'],
  ] as const) {
    if (o[key] === undefined || o[key] === null) continue;
    const tp = join(path, key);
    const lp = readLogProbs(o[key], tp, slabs?.logProbs);
    const nIds = call.responseTokenIds?.length;
    if (lp.values.length !== nIds)
      throw new RecordInvalid(
        tp,
        nIds === undefined
          ? `has ${lp.values.length} values but response_token_ids is missing`
          : `has ${lp.values.length} values but response_token_ids has ${nIds}`,
      );
    call[field] = lp.values;
  }
  if (o.vocab_mismatch !== undefined && o.vocab_mismatch !== null)
    call.vocabMismatch = readVocabMismatch(
      o.vocab_mismatch,
      join(path, 'vocab_mismatch'),
      call.responseTokenIds?.length,
    );
  const engine = readEngine(o.engine, join(path, 'engine'));
  if (engine) call.engine = engine;
  const timings = readTimings(o.timings, join(path, 'timings'));
  if (timings) call.timings = timings;
  const err = readOptString(o.error, join(path, 'error'));
  if (err !== undefined) call.error = err;
  return call;
}

/** Largest k a trace may record per position (a tooltip's worth, not a distribution). */
export const MAX_TOP_K = 64;

/** The `k` of a per-token field with k alternatives per position (`top_k`, `vocab_mismatch`). */
function readAlternativeCount(k: unknown, path: string): number {
  if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_TOP_K)
    throw new RecordInvalid(
      path,
      `must be an integer in [1, ${MAX_TOP_K}], got ${typeof k === 'number' ? k : describe(k)}`,
    );
  return k;
}

/** Each flat, position-major array (named by its key, in order) has k values for each of the nTokens. */
function checkPerTokenLengths(
  path: string,
  arrays: Record<string, ArrayLike<number>>,
  nTokens: number,
  k: number,
  what: 'alternatives' | 'tokens',
): void {
  for (const [name, a] of Object.entries(arrays))
    if (a.length !== nTokens * k)
      throw new RecordInvalid(
        join(path, name),
        `has ${a.length} values; k = ${k} ${what} for each of the ${nTokens} response tokens make ${nTokens * k}`,
      );
}

/**
 * `{ k, ids, log_probs }`: k alternatives per response token, flat and position-major, each position's log-probs
 * finite, ≤ 0 (up to rounding) and in descending order.
 */
export function readTopK(v: unknown, path: string, nTokens: number | undefined): TokenAlternatives {
  const o = readObject(v, path);
  if (nTokens === undefined) throw new RecordInvalid(path, 'is present but response_token_ids is missing');
  const k = readAlternativeCount(o.k, join(path, 'k'));
  const ids = readTokenIds(o.ids, join(path, 'ids'));
  const lp = readLogProbs(o.log_probs, join(path, 'log_probs')).values;
  checkPerTokenLengths(path, { ids, log_probs: lp }, nTokens, k, 'alternatives');
  for (let i = 0; i < lp.length; i++) {
    const at = join(join(path, 'log_probs'), i);
    if (!Number.isFinite(lp[i]) || lp[i] > 1e-6)
      throw new RecordInvalid(
        at,
        `must be a finite log-prob ≤ 0, got ${Number.isNaN(lp[i]) ? 'a non-finite value' : lp[i]}`,
      );
    if (i % k > 0 && lp[i] > lp[i - 1])
      throw new RecordInvalid(
        at,
        `is ${lp[i]}, above the previous alternative's ${lp[i - 1]}: a position's alternatives are in descending order`,
      );
  }
  return { k, ids, logProbs: lp };
}

/**
 * `{ kl, tv, k, ids, rollout_log_probs, trainer_log_probs }`: per response token the full-vocabulary KL (finite,
 * ≥ 0 up to rounding) and total variation (in [0, 1]), and the k most disagreeing tokens (flat, position-major)
 * with both engines' finite log-probs ≤ 0.
 */
export function readVocabMismatch(v: unknown, path: string, nTokens: number | undefined): VocabMismatch {
  const o = readObject(v, path);
  if (nTokens === undefined) throw new RecordInvalid(path, 'is present but response_token_ids is missing');
  const k = readAlternativeCount(o.k, join(path, 'k'));
  const kl = readLogProbs(o.kl, join(path, 'kl')).values;
  const tv = readLogProbs(o.tv, join(path, 'tv')).values;
  const ids = readTokenIds(o.ids, join(path, 'ids'));
  const rolloutLogProbs = readLogProbs(o.rollout_log_probs, join(path, 'rollout_log_probs')).values;
  const trainerLogProbs = readLogProbs(o.trainer_log_probs, join(path, 'trainer_log_probs')).values;
  for (const [name, a] of [
    ['kl', kl],
    ['tv', tv],
  ] as const) {
    if (a.length !== nTokens)
      throw new RecordInvalid(
        join(path, name),
        `has ${a.length} values but response_token_ids has ${nTokens}`,
      );
    for (let i = 0; i < a.length; i++)
      if (!Number.isFinite(a[i]) || a[i] < -1e-6 || (name === 'tv' && a[i] > 1 + 1e-6))
        throw new RecordInvalid(
          join(join(path, name), i),
          `must be a finite ${name === 'kl' ? 'divergence ≥ 0' : 'distance in [0, 1]'}, got ${Number.isNaN(a[i]) ? 'a non-finite value' : a[i]}`,
        );
  }
  checkPerTokenLengths(
    path,
    { ids, rollout_log_probs: rolloutLogProbs, trainer_log_probs: trainerLogProbs },
    nTokens,
    k,
    'tokens',
  );
  for (const [name, a] of [
    ['rollout_log_probs', rolloutLogProbs],
    ['trainer_log_probs', trainerLogProbs],
  ] as const)
    for (let i = 0; i < a.length; i++)
      if (!Number.isFinite(a[i]) || a[i] > 1e-6)
        throw new RecordInvalid(
          join(join(path, name), i),
          `must be a finite log-prob ≤ 0, got ${Number.isNaN(a[i]) ? 'a non-finite value' : a[i]}`,
        );
  return { kl, tv, k, ids, rolloutLogProbs, trainerLogProbs };
}

function idsToJson(a: Int32Array | undefined): number[] | undefined {
  return a === undefined ? undefined : Array.from(a);
}

function logProbsToJson(a: Float32Array | undefined): (number | null)[] | undefined {
  if (a === undefined) return undefined;
  const out: (number | null)[] = new Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Number.isNaN(a[i]) ? null : a[i];
  return out;
}

/** The JSON object of one rollout in our format (key order fixed; undefined fields left out). */
export function rolloutToRecord(r: Rollout): Record<string, unknown> {
  return {
    rollout_id: r.rolloutId,
    data_id: r.dataId,
    is_train: r.isTrain,
    state: r.state,
    error: r.error,
    step: r.step,
    sample_idx_in_step: r.sampleIdxInStep,
    final_reward: r.finalReward,
    rewards: r.rewards.map((w) => ({ value: w.value, call_index: w.callIndex, timestamp_ms: w.timestampMs })),
    metadata: r.metadata,
    incomplete: r.incomplete,
    calls: r.calls.map((c) => ({
      request: {
        model: c.request.model,
        messages: c.request.messages,
        tools: c.request.tools,
        sampling: c.request.sampling,
      },
      response: c.response ? { message: c.response.message, finish_reason: c.response.finishReason } : null,
      prompt_token_ids: idsToJson(c.promptTokenIds),
      response_token_ids: idsToJson(c.responseTokenIds),
      response_log_probs: logProbsToJson(c.responseLogProbs),
      mismatched_log_probs: logProbsToJson(c.mismatchedLogProbs),
      response_top_k: c.responseTopK
        ? {
            k: c.responseTopK.k,
            ids: idsToJson(c.responseTopK.ids),
            log_probs: Array.from(c.responseTopK.logProbs),
          }
        : undefined,
      trainer_log_probs: logProbsToJson(c.trainerLogProbs),
      trainer_entropy: logProbsToJson(c.trainerEntropy),
      vocab_mismatch: c.vocabMismatch
        ? {
            kl: Array.from(c.vocabMismatch.kl),
            tv: Array.from(c.vocabMismatch.tv),
            k: c.vocabMismatch.k,
            ids: idsToJson(c.vocabMismatch.ids),
            rollout_log_probs: Array.from(c.vocabMismatch.rolloutLogProbs),
            trainer_log_probs: Array.from(c.vocabMismatch.trainerLogProbs),
          }
        : undefined,
      engine: c.engine
        ? { engine: c.engine.engine, model: c.engine.model, policy_version: c.engine.policyVersion }
        : undefined,
      timings: c.timings ? { start_ms: c.timings.startMs, end_ms: c.timings.endMs } : undefined,
      http_status: c.httpStatus,
      error: c.error,
    })),
  };
}

/** One rollout as a JSONL line (with its newline). */
export function rolloutToJsonlLine(r: Rollout): string {
  return JSON.stringify(rolloutToRecord(r)) + '\n';
}

/** Serialises rollouts as JSONL (one line each, trailing newline); write large traces line by line instead. */
export function toJsonlTrace(rollouts: Rollout[]): string {
  let out = '';
  for (const r of rollouts) out += rolloutToJsonlLine(r);
  return out;
}
