/**
 * Agent Lightning v1.0 gateway events (agentlightning/schemas.py `Event`; agentlightning/server/routes/events.py):
 * what `GET /api/rollouts/{rid}/events` returns, a JSON list of
 *   {event_type, rollout_id, attempt_id, timestamp, data}
 * - full form: `model_request` data = {model, model_version, request (the chat-completions body), response
 *   (the engine's JSON: choices[0].message / token_ids / logprobs.content[].logprob, prompt_token_ids at top
 *   level for chat), server, latency_ms, http_status, status, retry_count, usage, finish_reason};
 *   `reward` data = {value, message?, source?, reason?};
 * - `format=triplet`: `model_request` data trimmed to {prompt_token_ids, response_token_ids,
 *   response_log_probs (null when missing or any value non-finite), server: {model, version}, http_status?,
 *   status?, error?}; `reward` data = {value, source?, reason?}.
 * Other event types pass through unchanged upstream; here they are counted and kept in rollout metadata.
 *
 * Accepted documents: a list of events (several rollouts may be mixed; they are grouped by rollout_id in order
 * of first appearance), the same as JSON Lines (one event per line), or our bundle
 *   {"rollouts": [{"rollout": <gateway Rollout>, "events": [...]}]}
 * which adds what events do not carry: the trainer's data_id (rollout.metadata.data_id; default: the rollout
 * id, i.e. every rollout its own group), step / sample order (metadata.batch_idx, sample_idx_in_batch), state.
 */
import type { ChatMessage, ModelCall, RewardEvent, Rollout, TraceBatch, TraceIssue } from '../types';
import {
  bump,
  checkCallTokens,
  type ImportCounters,
  isObject,
  issueFrom,
  type JsonObject,
  join,
  RecordInvalid,
  readArray,
  readMessage,
  readNumber,
  readObject,
  readRequest,
  readState,
  readString,
  readTokenIds,
} from '../validate';

interface RawEvent {
  event_type: string;
  rollout_id: string;
  attempt_id: string;
  timestamp: number;
  data: JsonObject;
}

function readEvent(v: unknown): RawEvent {
  const o = readObject(v, '');
  return {
    event_type: readString(o.event_type, 'event_type'),
    rollout_id: readString(o.rollout_id, 'rollout_id'),
    attempt_id:
      o.attempt_id === undefined || o.attempt_id === null ? '0' : readString(o.attempt_id, 'attempt_id'),
    timestamp: o.timestamp === undefined ? 0 : readNumber(o.timestamp, 'timestamp'),
    data: readObject(o.data ?? {}, 'data'),
  };
}

/** Log-probs of choice 0 as Float32Array; non-finite or non-numeric entries become NaN (counted). */
function choiceLogProbs(
  choice: JsonObject,
  path: string,
  counters: ImportCounters,
): Float32Array | undefined {
  const lp = choice.logprobs;
  if (!isObject(lp)) return undefined;
  let raw: unknown[];
  if (Array.isArray(lp.content)) {
    raw = lp.content.map((item, i) => {
      if (!isObject(item) || !('logprob' in item))
        throw new RecordInvalid(join(join(path, 'logprobs.content'), i), 'must be an object with a logprob');
      return item.logprob;
    });
  } else if (Array.isArray(lp.token_logprobs)) raw = lp.token_logprobs;
  else return undefined;
  const out = new Float32Array(raw.length);
  let bad = 0;
  for (let i = 0; i < raw.length; i++) {
    const x = raw[i];
    if (typeof x === 'number' && Number.isFinite(x)) out[i] = x;
    else {
      out[i] = Number.NaN;
      bad++;
    }
  }
  bump(counters, 'nonfinite_logprobs', bad);
  return out;
}

function serverEngine(data: JsonObject): ModelCall['engine'] {
  const srv = isObject(data.server) ? data.server : {};
  const model = typeof data.model === 'string' ? data.model : typeof srv.model === 'string' ? srv.model : '';
  const engine = typeof srv.endpoint === 'string' ? srv.endpoint : 'agl-gateway';
  const version =
    typeof data.model_version === 'number'
      ? data.model_version
      : typeof srv.version === 'number'
        ? srv.version
        : undefined;
  const e: NonNullable<ModelCall['engine']> = { engine, model };
  if (version !== undefined) e.policyVersion = version;
  return e;
}

/** A full `model_request` event → ModelCall. */
function fullCall(ev: RawEvent, counters: ImportCounters): ModelCall {
  const d = ev.data;
  const call: ModelCall = {
    request: readRequest(d.request ?? {}, 'data.request'),
    response: null,
    httpStatus: typeof d.http_status === 'number' ? d.http_status : 200,
    engine: serverEngine(d),
  };
  const resp = d.response;
  if (isObject(resp)) {
    const choices = Array.isArray(resp.choices) ? resp.choices : [];
    let prompt = resp.prompt_token_ids;
    const c0 = choices[0];
    if (c0 !== undefined) {
      const cp = 'data.response.choices[0]';
      const ch = readObject(c0, cp);
      if (
        (prompt === undefined || prompt === null || (Array.isArray(prompt) && prompt.length === 0)) &&
        ch.prompt_token_ids
      )
        prompt = ch.prompt_token_ids;
      if (ch.token_ids !== undefined && ch.token_ids !== null)
        call.responseTokenIds = readTokenIds(ch.token_ids, join(cp, 'token_ids'));
      const lp = choiceLogProbs(ch, cp, counters);
      if (lp) call.responseLogProbs = lp;
      if (ch.message !== undefined && ch.message !== null)
        call.response = {
          message: readMessage(ch.message, join(cp, 'message')),
          finishReason: typeof ch.finish_reason === 'string' ? ch.finish_reason : null,
        };
    }
    if (prompt !== undefined && prompt !== null)
      call.promptTokenIds = readTokenIds(prompt, 'data.response.prompt_token_ids');
    if (resp.error !== undefined)
      call.error = typeof resp.error === 'string' ? resp.error : JSON.stringify(resp.error);
  } else if (Array.isArray(resp)) {
    // Legacy: raw streamed chunks; ids are concatenated as the gateway's triplet view does.
    const ids: number[] = [];
    let text = '';
    let prompt: Int32Array | undefined;
    resp.forEach((chunk, k) => {
      const cp = join('data.response', k);
      const ch = readObject(chunk, cp);
      if (!prompt && Array.isArray(ch.prompt_token_ids) && ch.prompt_token_ids.length)
        prompt = readTokenIds(ch.prompt_token_ids, join(cp, 'prompt_token_ids'));
      const c0 = Array.isArray(ch.choices) ? ch.choices[0] : undefined;
      if (isObject(c0)) {
        if (Array.isArray(c0.token_ids))
          ids.push(...readTokenIds(c0.token_ids, join(cp, 'choices[0].token_ids')));
        if (isObject(c0.delta) && typeof c0.delta.content === 'string') text += c0.delta.content;
      }
    });
    if (prompt) call.promptTokenIds = prompt;
    call.responseTokenIds = Int32Array.from(ids);
    call.response = { message: { role: 'assistant', content: text }, finishReason: null };
  }
  if (d.status === 'error' && call.error === undefined) call.error = 'error';
  return call;
}

/** A `format=triplet` `model_request` event → ModelCall (ids only; no messages). */
function tripletCall(ev: RawEvent, counters: ImportCounters): ModelCall {
  const d = ev.data;
  const call: ModelCall = {
    request: { messages: [], sampling: {} },
    response: null,
    httpStatus: typeof d.http_status === 'number' ? d.http_status : 200,
    engine: serverEngine(d),
    promptTokenIds: readTokenIds(d.prompt_token_ids ?? [], 'data.prompt_token_ids'),
    responseTokenIds: readTokenIds(d.response_token_ids ?? [], 'data.response_token_ids'),
  };
  if (Array.isArray(d.response_log_probs)) {
    const out = new Float32Array(d.response_log_probs.length);
    let bad = 0;
    d.response_log_probs.forEach((x, i) => {
      if (typeof x === 'number' && Number.isFinite(x)) out[i] = x;
      else {
        out[i] = Number.NaN;
        bad++;
      }
    });
    bump(counters, 'nonfinite_logprobs', bad);
    call.responseLogProbs = out;
  } else if (d.response_log_probs !== undefined && d.response_log_probs !== null)
    throw new RecordInvalid('data.response_log_probs', 'must be a list of numbers or null');
  if (d.status === 'error') call.error = d.error !== undefined ? JSON.stringify(d.error) : 'error';
  return call;
}

interface Group {
  rolloutId: string;
  events: { ev: RawEvent; where: string }[];
  header?: JsonObject;
  headerWhere?: string;
}

/** Upstream `_as_reward_value`: numbers count; booleans and anything else are "no reward". */
function rewardValue(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function buildRollout(g: Group, counters: ImportCounters, issues: TraceIssue[]): Rollout {
  const calls: ModelCall[] = [];
  const rewards: RewardEvent[] = [];
  const other: JsonObject[] = [];
  let finalReward: number | null = null;
  for (const { ev, where } of g.events) {
    try {
      if (ev.event_type === 'model_request') {
        const isFull = 'request' in ev.data || 'response' in ev.data;
        const call = isFull ? fullCall(ev, counters) : tripletCall(ev, counters);
        if (ev.timestamp) {
          const end = ev.timestamp * 1000;
          const lat = typeof ev.data.latency_ms === 'number' ? ev.data.latency_ms : 0;
          call.timings = { startMs: end - lat, endMs: end };
        }
        checkCallTokens(
          call,
          'data',
          'lenient',
          (field, message) => issues.push({ where, field, message, severity: 'warning' }),
          counters,
        );
        calls.push(call);
        bump(counters, isFull ? 'model_request_events' : 'triplet_events');
      } else if (ev.event_type === 'reward') {
        // The trainer's final reward is the value of the LAST reward event (AglRolloutManager).
        finalReward = rewardValue(ev.data.value);
        if (finalReward !== null) {
          const r: RewardEvent = { value: finalReward };
          if (ev.timestamp) r.timestampMs = ev.timestamp * 1000;
          rewards.push(r);
        } else
          issues.push({
            where,
            field: 'data.value',
            message: 'is not a number; no reward',
            severity: 'warning',
          });
      } else {
        other.push({
          event_type: ev.event_type,
          attempt_id: ev.attempt_id,
          timestamp: ev.timestamp,
          data: ev.data,
        });
        bump(counters, 'other_events');
      }
    } catch (e) {
      // A bad event spoils its rollout: the calls would be out of order without it.
      const issue = issueFrom(e, where);
      throw new RecordInvalid(issue.field ?? 'event', `${issue.message} (in ${where})`);
    }
  }
  const h = g.header ?? {};
  const meta = isObject(h.metadata) ? h.metadata : {};
  const status = isObject(h.status) ? h.status : {};
  const rollout: Rollout = {
    rolloutId: g.rolloutId,
    dataId: typeof meta.data_id === 'string' ? meta.data_id : g.rolloutId,
    isTrain: typeof h.is_train === 'boolean' ? h.is_train : true,
    state: status.state === undefined ? 'succeeded' : readState(status.state, 'rollout.status.state'),
    calls,
    rewards,
    finalReward,
    metadata: { ...meta },
  };
  if (typeof status.error_message === 'string') rollout.error = status.error_message;
  if (typeof meta.batch_idx === 'number') rollout.step = meta.batch_idx;
  if (typeof meta.sample_idx_in_batch === 'number') rollout.sampleIdxInStep = meta.sample_idx_in_batch;
  for (const k of ['data_id', 'batch_idx', 'sample_idx_in_batch']) delete rollout.metadata[k];
  if (other.length) rollout.metadata.agl_other_events = other;
  return rollout;
}

function finish(
  groups: Group[],
  issues: TraceIssue[],
  counters: ImportCounters,
  badEvents: Set<string>,
): TraceBatch {
  const rollouts: Rollout[] = [];
  for (const g of groups) {
    const where = g.headerWhere ?? `rollout ${g.rolloutId}`;
    if (badEvents.has(g.rolloutId)) continue;
    try {
      rollouts.push(buildRollout(g, counters, issues));
    } catch (e) {
      issues.push(issueFrom(e, where));
    }
  }
  counters.records_skipped = issues.filter((i) => i.severity !== 'warning').length;
  return { rollouts, issues, counters };
}

function groupEvents(
  items: { v: unknown; where: string }[],
  groups: Group[],
  byId: Map<string, Group>,
  issues: TraceIssue[],
  badEvents: Set<string>,
): void {
  for (const { v, where } of items) {
    let ev: RawEvent;
    try {
      ev = readEvent(v);
    } catch (e) {
      const issue = issueFrom(e, where);
      // Without a rollout id the event cannot be attributed; with one, its rollout is incomplete.
      const rid = isObject(v) && typeof v.rollout_id === 'string' ? v.rollout_id : undefined;
      if (rid !== undefined) {
        issue.message += `; rollout ${rid} is skipped`;
        badEvents.add(rid);
      }
      issues.push(issue);
      continue;
    }
    let g = byId.get(ev.rollout_id);
    if (!g) {
      g = { rolloutId: ev.rollout_id, events: [] };
      byId.set(ev.rollout_id, g);
      groups.push(g);
    }
    g.events.push({ ev, where });
  }
}

/** Reads a decoded events document: a list of events, or the bundle `{"rollouts": [{rollout, events}]}`. */
export function readAglEvents(doc: unknown): TraceBatch {
  const issues: TraceIssue[] = [];
  const counters: ImportCounters = {};
  const groups: Group[] = [];
  const byId = new Map<string, Group>();
  const bad = new Set<string>();
  if (Array.isArray(doc)) {
    groupEvents(
      doc.map((v, i) => ({ v, where: `events[${i}]` })),
      groups,
      byId,
      issues,
      bad,
    );
    return finish(groups, issues, counters, bad);
  }
  const top = readObject(doc, 'document');
  readArray(top.rollouts, 'rollouts').forEach((entry, i) => {
    const where = `rollouts[${i}]`;
    try {
      const o = readObject(entry, '');
      const header = readObject(o.rollout, 'rollout');
      const rid = readString(header.rollout_id, 'rollout.rollout_id');
      const events = readArray(o.events, 'events');
      const g: Group = { rolloutId: rid, events: [], header, headerWhere: where };
      const sub: Group[] = [];
      const subById = new Map<string, Group>([[rid, g]]);
      groupEvents(
        events.map((v, k) => ({ v, where: `${where}.events[${k}]` })),
        sub,
        subById,
        issues,
        bad,
      );
      if (sub.length)
        throw new RecordInvalid(`events`, `hold events of other rollouts (${sub[0].rolloutId})`);
      groups.push(g);
    } catch (e) {
      issues.push(issueFrom(e, where));
    }
  });
  return finish(groups, issues, counters, bad);
}

/** Reads events as JSON Lines (one event per line); a malformed line is reported and skipped. */
export function readAglEventLines(text: string): TraceBatch {
  const issues: TraceIssue[] = [];
  const items: { v: unknown; where: string }[] = [];
  let lineNo = 0;
  for (const raw of text.split('\n')) {
    lineNo++;
    const line = raw.trim();
    if (!line) continue;
    try {
      items.push({ v: JSON.parse(line), where: `line ${lineNo}` });
    } catch (e) {
      issues.push({
        where: `line ${lineNo}`,
        message: `is not valid JSON (${(e as Error).message})`,
        severity: 'error',
      });
    }
  }
  const groups: Group[] = [];
  const bad = new Set<string>();
  groupEvents(items, groups, new Map(), issues, bad);
  return finish(groups, issues, {}, bad);
}

function messageJson(m: ChatMessage): Record<string, unknown> {
  return { ...m };
}

/**
 * Full-form events of one rollout, as the gateway would have recorded them: one `model_request` per call
 * (the chat-completions request and an OpenAI-shaped response with `prompt_token_ids`, `choices[0].token_ids`
 * and `choices[0].logprobs.content[].logprob`), and the reward events (after the call they belong to).
 */
export function rolloutToAglEvents(r: Rollout): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [];
  const rewardsAfter = new Map<number, RewardEvent[]>();
  const tail: RewardEvent[] = [];
  for (const w of r.rewards) {
    if (w.callIndex === undefined) tail.push(w);
    else rewardsAfter.set(w.callIndex, [...(rewardsAfter.get(w.callIndex) ?? []), w]);
  }
  const rewardEvent = (w: RewardEvent) => ({
    event_type: 'reward',
    rollout_id: r.rolloutId,
    attempt_id: '0',
    timestamp: (w.timestampMs ?? 0) / 1000,
    data: { value: w.value },
  });
  r.calls.forEach((c, i) => {
    const choice: Record<string, unknown> = { index: 0, finish_reason: c.response?.finishReason ?? null };
    if (c.response) choice.message = messageJson(c.response.message);
    if (c.responseTokenIds) choice.token_ids = Array.from(c.responseTokenIds);
    if (c.responseLogProbs)
      choice.logprobs = {
        content: Array.from(c.responseLogProbs, (x) => ({ logprob: Number.isNaN(x) ? null : x })),
      };
    const response: Record<string, unknown> = { object: 'chat.completion', choices: [choice] };
    if (c.promptTokenIds) response.prompt_token_ids = Array.from(c.promptTokenIds);
    if (c.error !== undefined) response.error = c.error;
    const request: Record<string, unknown> = {
      messages: c.request.messages.map(messageJson),
      ...c.request.sampling,
    };
    if (c.request.model !== undefined) request.model = c.request.model;
    if (c.request.tools) request.tools = c.request.tools;
    const endMs = c.timings?.endMs ?? 0;
    events.push({
      event_type: 'model_request',
      rollout_id: r.rolloutId,
      attempt_id: '0',
      timestamp: endMs / 1000,
      data: {
        model: c.engine?.model ?? c.request.model ?? '',
        model_version: c.engine?.policyVersion ?? null,
        request,
        response,
        server: {
          model: c.engine?.model ?? null,
          endpoint: c.engine?.engine ?? null,
          version: c.engine?.policyVersion ?? null,
        },
        latency_ms: c.timings ? c.timings.endMs - c.timings.startMs : null,
        http_status: c.httpStatus,
        status: c.httpStatus < 400 && c.error === undefined ? 'ok' : 'error',
        retry_count: 0,
        usage: null,
        finish_reason: c.response?.finishReason ?? null,
      },
    });
    for (const w of rewardsAfter.get(i) ?? []) events.push(rewardEvent(w));
  });
  for (const w of tail) events.push(rewardEvent(w));
  return events;
}

/** Our bundle: each rollout with a gateway-shaped `rollout` header and its full-form events. */
export function toAglEventsBundle(rollouts: Rollout[]): { rollouts: Record<string, unknown>[] } {
  return {
    rollouts: rollouts.map((r) => {
      const metadata: Record<string, unknown> = { ...r.metadata, data_id: r.dataId };
      delete metadata.agl_other_events;
      if (r.step !== undefined) metadata.batch_idx = r.step;
      if (r.sampleIdxInStep !== undefined) metadata.sample_idx_in_batch = r.sampleIdxInStep;
      return {
        rollout: {
          rollout_id: r.rolloutId,
          is_train: r.isTrain,
          metadata,
          status: { state: r.state, error_message: r.error ?? null },
        },
        events: rolloutToAglEvents(r),
      };
    }),
  };
}
