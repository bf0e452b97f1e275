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
import type { ChatMessage, ModelCall, RewardEvent, Rollout, RolloutGap, TraceIssue } from '../types';
import {
  bump,
  describe,
  type ImportCounters,
  isObject,
  issueFrom,
  type Json,
  type JsonObject,
  join,
  MAX_TIME_MS,
  RecordInvalid,
  readArray,
  readBool,
  readIntIn,
  readJsonObject,
  readJsonValue,
  readLogProbs,
  readMessage,
  readNumber,
  readObject,
  readOptInt,
  readOptString,
  readString,
  readTokenIds,
} from '../validate';
import { MAX_GAPS } from './completedRollouts';
import { assembleRollout, readCall } from './jsonl';

interface RawEvent {
  event_type: string;
  rollout_id: string;
  attempt_id: string;
  /** seconds since the epoch; null when the event has none */
  timestamp: number | null;
  data: JsonObject;
}

function readEvent(v: unknown): RawEvent {
  const o = readObject(v, '');
  const timestamp =
    o.timestamp === undefined || o.timestamp === null ? null : readNumber(o.timestamp, 'timestamp');
  if (timestamp !== null && !(Math.abs(timestamp * 1000) <= MAX_TIME_MS))
    throw new RecordInvalid('timestamp', `is ${timestamp}, too large for a time in seconds`);
  return {
    event_type: readString(o.event_type, 'event_type'),
    rollout_id: readString(o.rollout_id, 'rollout_id'),
    attempt_id:
      o.attempt_id === undefined || o.attempt_id === null ? '0' : readString(o.attempt_id, 'attempt_id'),
    timestamp,
    data: readObject(o.data ?? {}, 'data'),
  };
}

/**
 * Log-probs of an OpenAI choice (`logprobs.content[].logprob`, or legacy `token_logprobs`) as a JSON list; a
 * missing or non-numeric value is null (absent), as upstream's gateway treats it.
 */
function choiceLogProbs(choice: JsonObject, path: string): unknown[] | undefined {
  const lp = choice.logprobs;
  if (lp === undefined || lp === null) return undefined;
  const lpPath = join(path, 'logprobs');
  const o = readObject(lp, lpPath);
  if (Array.isArray(o.content))
    return o.content.map((item, i) => {
      const ip = join(join(lpPath, 'content'), i);
      const it = readObject(item, ip);
      if (!('logprob' in it)) throw new RecordInvalid(ip, 'must be an object with a logprob');
      return typeof it.logprob === 'number' ? it.logprob : null;
    });
  if (Array.isArray(o.token_logprobs)) return o.token_logprobs.map((x) => (typeof x === 'number' ? x : null));
  if (o.content === null || o.content === undefined) return undefined;
  throw new RecordInvalid(join(lpPath, 'content'), `must be a list, got ${describe(o.content)}`);
}

/**
 * The engine fields of a call record, from `data.model`, `data.model_version` and `data.server`; none when the
 * event names no server at all.
 */
function serverEngine(data: JsonObject): JsonObject | undefined {
  const none = (v: unknown) => v === undefined || v === null;
  if (none(data.server) && none(data.model) && none(data.model_version)) return undefined;
  const srv = data.server === undefined || data.server === null ? {} : readObject(data.server, 'data.server');
  const model =
    readOptString(data.model, 'data.model') ?? readOptString(srv.model, 'data.server.model') ?? '';
  const engine = readOptString(srv.endpoint, 'data.server.endpoint') ?? 'agl-gateway';
  const version =
    readOptInt(data.model_version, 'data.model_version') ?? readOptInt(srv.version, 'data.server.version');
  const e: JsonObject = { engine, model };
  if (version !== undefined) e.policy_version = version;
  return e;
}

/** `data.http_status` or 200 */
function httpStatusOf(d: JsonObject): Json {
  return d.http_status === undefined || d.http_status === null ? 200 : d.http_status;
}

function errorText(v: unknown, path: string): string {
  return typeof v === 'string' ? v : JSON.stringify(readJsonValue(v, path));
}

/**
 * A full `model_request` event → the JSONL call record it stands for (token arrays already read, with the
 * event's own paths in errors). `readCall` then validates the record like any JSONL call.
 */
function fullCallRecord(d: JsonObject): JsonObject & Record<string, unknown> {
  const rec: Record<string, unknown> = {
    request: d.request ?? {},
    response: null,
    http_status: httpStatusOf(d),
    engine: serverEngine(d),
  };
  const resp = d.response;
  if (isObject(resp)) {
    const rp = 'data.response';
    const choices =
      resp.choices === undefined || resp.choices === null ? [] : readArray(resp.choices, join(rp, 'choices'));
    let prompt = resp.prompt_token_ids;
    let promptPath = join(rp, 'prompt_token_ids');
    const c0 = choices[0];
    if (c0 !== undefined) {
      const cp = `${rp}.choices[0]`;
      const ch = readObject(c0, cp);
      if (
        (prompt === undefined || prompt === null || (Array.isArray(prompt) && prompt.length === 0)) &&
        ch.prompt_token_ids !== undefined &&
        ch.prompt_token_ids !== null
      ) {
        prompt = ch.prompt_token_ids;
        promptPath = join(cp, 'prompt_token_ids');
      }
      if (ch.token_ids !== undefined && ch.token_ids !== null)
        rec.response_token_ids = readTokenIds(ch.token_ids, join(cp, 'token_ids'));
      const lp = choiceLogProbs(ch, cp);
      if (lp) rec.response_log_probs = readLogProbs(lp, join(cp, 'logprobs.content')).values;
      if (ch.message !== undefined && ch.message !== null)
        rec.response = {
          message: readMessage(ch.message, join(cp, 'message')),
          finish_reason: readOptString(ch.finish_reason, join(cp, 'finish_reason')) ?? null,
        };
    }
    if (prompt !== undefined && prompt !== null) rec.prompt_token_ids = readTokenIds(prompt, promptPath);
    else if (rec.response_token_ids !== undefined)
      throw new RecordInvalid(promptPath, 'is missing but the response has token ids');
    if (resp.error !== undefined && resp.error !== null) rec.error = errorText(resp.error, join(rp, 'error'));
  } else if (Array.isArray(resp)) {
    // Legacy: raw streamed chunks; ids are concatenated as the gateway's triplet view does.
    const parts: Int32Array[] = [];
    let n = 0;
    let text = '';
    let prompt: Int32Array | undefined;
    resp.forEach((chunk, k) => {
      const cp = join('data.response', k);
      const ch = readObject(chunk, cp);
      if (!prompt && Array.isArray(ch.prompt_token_ids) && ch.prompt_token_ids.length)
        prompt = readTokenIds(ch.prompt_token_ids, join(cp, 'prompt_token_ids'));
      const c0 = Array.isArray(ch.choices) ? ch.choices[0] : undefined;
      if (isObject(c0)) {
        if (Array.isArray(c0.token_ids)) {
          const ids = readTokenIds(c0.token_ids, join(cp, 'choices[0].token_ids'));
          parts.push(ids);
          n += ids.length;
        }
        if (isObject(c0.delta) && typeof c0.delta.content === 'string') text += c0.delta.content;
      }
    });
    const ids = new Int32Array(n);
    let at = 0;
    for (const p of parts) {
      ids.set(p, at);
      at += p.length;
    }
    if (!prompt && n > 0)
      throw new RecordInvalid(
        'data.response[0].prompt_token_ids',
        'is missing but the chunks have token ids',
      );
    if (prompt) rec.prompt_token_ids = prompt;
    rec.response_token_ids = ids;
    rec.response = { message: { role: 'assistant', content: text }, finish_reason: null };
  } else if (resp !== undefined && resp !== null)
    throw new RecordInvalid('data.response', `must be an object or a list of chunks, got ${describe(resp)}`);
  if (d.status === 'error' && rec.error === undefined) rec.error = 'error';
  return rec as JsonObject & Record<string, unknown>;
}

/** A `format=triplet` `model_request` event → its call record (ids only; no messages). */
function tripletCallRecord(d: JsonObject): Record<string, unknown> {
  const rec: Record<string, unknown> = {
    request: { messages: [], sampling: {} },
    response: null,
    http_status: httpStatusOf(d),
    engine: serverEngine(d),
    prompt_token_ids: readTokenIds(d.prompt_token_ids ?? [], 'data.prompt_token_ids'),
    response_token_ids: readTokenIds(d.response_token_ids ?? [], 'data.response_token_ids'),
  };
  if (Array.isArray(d.response_log_probs))
    rec.response_log_probs = readLogProbs(
      d.response_log_probs.map((x) => (typeof x === 'number' ? x : null)),
      'data.response_log_probs',
    ).values;
  else if (d.response_log_probs !== undefined && d.response_log_probs !== null)
    throw new RecordInvalid('data.response_log_probs', 'must be a list of numbers or null');
  if (d.status === 'error')
    rec.error = d.error !== undefined && d.error !== null ? errorText(d.error, 'data.error') : 'error';
  return rec;
}

/** Upstream `_as_reward_value`: numbers count; booleans and anything else are "no reward". */
function rewardValue(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

interface Group {
  /** the rollout id, or the entry's place for a bundle entry (two entries may give the same id) */
  key: string;
  rolloutId: string;
  calls: ModelCall[];
  rewards: { value: number; timestamp_ms?: number; call_index?: number }[];
  finalReward: number | null;
  other: JsonObject[];
  gaps: RolloutGap[];
  /** unreadable parts beyond the MAX_GAPS listed */
  moreGaps: number;
  /** the bundle's gateway Rollout header, when the rollout came from a bundle */
  header?: JsonObject;
  where: string;
}

const ROLLOUT_ID_FIELD = /"rollout_id"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/** The rollout id an unreadable event line names, if the text still shows one. */
export function recoverRolloutId(text: string): string | null {
  const m = ROLLOUT_ID_FIELD.exec(text.slice(0, 4096));
  if (!m) return null;
  try {
    return JSON.parse(`"${m[1]}"`) as string;
  } catch {
    return null;
  }
}

/**
 * Builds rollouts from Agent Lightning events one event at a time, so a file need never be held whole. A bad
 * event costs only itself: it is reported (place, field, reason), and its rollout is kept without it and
 * marked incomplete. An event that cannot be attributed (unreadable line, no rollout id) marks the rollouts
 * whose events surround it, since it may have been one of theirs.
 */
export class AglEventAssembler {
  private readonly groups = new Map<string, Group>();
  /** per position in event order: the rollout id, or an unattributed place (index into `unattributed`) */
  private readonly order: (string | number)[] = [];
  private readonly unattributed: { where: string; issue: TraceIssue }[] = [];

  constructor(
    private readonly counters: ImportCounters,
    private readonly report: (issue: TraceIssue) => void,
  ) {}

  private group(rid: string, where: string, key = rid): Group {
    let g = this.groups.get(key);
    if (!g) {
      g = {
        key,
        rolloutId: rid,
        calls: [],
        rewards: [],
        finalReward: null,
        other: [],
        gaps: [],
        moreGaps: 0,
        where,
      };
      this.groups.set(key, g);
    }
    return g;
  }

  private gap(g: Group, where: string, message: string): void {
    if (g.gaps.length < MAX_GAPS) g.gaps.push({ where, message });
    else g.moreGaps++;
  }

  /**
   * A place in the event stream that could not be read as an event; `rolloutId` when its text still names
   * one, `field` when one field is to blame.
   */
  unreadable(where: string, message: string, rolloutId: string | null, field?: string, into?: Group): void {
    const issue: TraceIssue = { where, message, severity: 'error' };
    if (field !== undefined) issue.field = field;
    const detail = field !== undefined ? `${field} ${message}` : message;
    if (into || rolloutId !== null) {
      const g = into ?? this.group(rolloutId as string, `rollout ${rolloutId}`);
      issue.message += `; rollout ${g.rolloutId} is kept without it and marked incomplete`;
      this.gap(g, where, detail);
      this.order.push(g.key);
    } else {
      this.order.push(this.unattributed.length);
      this.unattributed.push({ where, issue });
    }
    this.report(issue);
  }

  /** One decoded event at `where`; `into` restricts it to one rollout (a bundle entry's events). */
  event(v: unknown, where: string, into?: Group): void {
    let ev: RawEvent;
    try {
      ev = readEvent(v);
    } catch (e) {
      const issue = issueFrom(e, where);
      const rid = isObject(v) && typeof v.rollout_id === 'string' ? v.rollout_id : null;
      this.unreadable(where, issue.message, rid, issue.field, into);
      return;
    }
    if (into && ev.rollout_id !== into.rolloutId) {
      const message = `names rollout ${JSON.stringify(ev.rollout_id)}, not this entry's rollout`;
      this.report({
        where,
        field: 'rollout_id',
        message: `${message}; rollout ${into.rolloutId} is kept without it and marked incomplete`,
        severity: 'error',
      });
      this.gap(into, where, `rollout_id ${message}`);
      return;
    }
    const g = into ?? this.group(ev.rollout_id, `rollout ${ev.rollout_id}`);
    this.order.push(g.key);
    try {
      this.apply(g, ev, where);
    } catch (e) {
      const issue = issueFrom(e, where);
      issue.message += `; rollout ${g.rolloutId} is kept without this event and marked incomplete`;
      this.report(issue);
      this.gap(g, where, formatDetail(issueFrom(e, where)));
    }
  }

  private apply(g: Group, ev: RawEvent, where: string): void {
    const d = ev.data;
    if (ev.event_type === 'model_request') {
      const isFull = 'request' in d || 'response' in d;
      const rec = isFull ? fullCallRecord(d) : tripletCallRecord(d);
      if (ev.timestamp !== null) {
        const end = ev.timestamp * 1000;
        const lat =
          d.latency_ms === undefined || d.latency_ms === null
            ? 0
            : readNumber(d.latency_ms, 'data.latency_ms');
        if (!(Math.abs(end - lat) <= MAX_TIME_MS))
          throw new RecordInvalid(
            'data.latency_ms',
            `is ${lat}: the call would start before any time a clock can show`,
          );
        rec.timings = { start_ms: end - lat, end_ms: end };
      }
      // Agent Lightning inputs: log-probs of the wrong length make the call's log-probs absent, as upstream's
      // trainer treats them; the list is kept as mismatched_log_probs (see docs/TRACE_FORMAT.md).
      const ids = rec.response_token_ids as Int32Array | undefined;
      const lp = rec.response_log_probs as Float32Array | undefined;
      if (lp !== undefined && lp.length !== ids?.length) {
        const field = 'data.response_log_probs';
        const msg =
          ids === undefined
            ? `has ${lp.length} values but the response has no token ids`
            : `has ${lp.length} values but the response has ${ids.length} token ids`;
        this.report({
          where,
          field,
          message: `${msg}; the call's log-probs are treated as absent`,
          severity: 'warning',
        });
        rec.response_log_probs = undefined;
        if (ids !== undefined) rec.mismatched_log_probs = lp;
        bump(this.counters, 'logprobs_wrong_length_calls');
      }
      const call = readCall(rec, 'data', this.counters);
      g.calls.push(call);
      bump(this.counters, isFull ? 'model_request_events' : 'triplet_events');
    } else if (ev.event_type === 'reward') {
      // The trainer's final reward is the value of the LAST reward event (AglRolloutManager).
      const value = rewardValue(d.value);
      if (value !== null && d.final_only === true) {
        // our writer's way to keep a final reward that is not the last reward event's value
        g.finalReward = value;
        return;
      }
      if (value !== null) {
        const r: { value: number; timestamp_ms?: number; call_index?: number } = { value };
        if (ev.timestamp !== null) r.timestamp_ms = ev.timestamp * 1000;
        if (d.call_index !== undefined && d.call_index !== null) {
          const ci = readIntIn(d.call_index, 'data.call_index', 0, Number.MAX_SAFE_INTEGER);
          // a call before it may have been unreadable: the reward stays, without the index it cannot keep
          if (ci < g.calls.length) r.call_index = ci;
          else
            this.report({
              where,
              field: 'data.call_index',
              message: `is ${ci} but ${g.calls.length} calls of rollout ${g.rolloutId} were read before it; the reward is kept without it`,
              severity: 'warning',
            });
        }
        g.rewards.push(r);
      }
      g.finalReward = value;
      if (value === null)
        this.report({
          where,
          field: 'data.value',
          message: `is ${describe(d.value)}, not a number; no reward`,
          severity: 'warning',
        });
    } else {
      g.other.push({
        event_type: ev.event_type,
        attempt_id: ev.attempt_id,
        timestamp: ev.timestamp,
        data: readJsonObject(d, 'data'),
      });
      bump(this.counters, 'other_events');
    }
  }

  /** One entry `{rollout, events}` of our bundle. A bad header skips the entry; bad events only themselves. */
  bundleEntry(v: unknown, where: string): void {
    let g: Group;
    let events: unknown[];
    try {
      const o = readObject(v, '');
      const header = readObject(o.rollout, 'rollout');
      const rid = readString(header.rollout_id, 'rollout.rollout_id');
      events = readArray(o.events, 'events');
      // each entry is its own rollout, like a line of JSONL, even when an earlier one has the same id
      g = this.group(rid, where, `\u0000${where}`);
      g.header = header;
    } catch (e) {
      this.report(issueFrom(e, where));
      return;
    }
    events.forEach((ev, k) => {
      this.event(ev, `${where}.events[${k}]`, g);
    });
  }

  /** The rollouts, in order of first appearance. */
  finish(): Rollout[] {
    // An event nobody can claim may be missing from the rollouts whose events surround it.
    this.order.forEach((x, pos) => {
      if (typeof x === 'string') return;
      const { where, issue } = this.unattributed[x];
      const near = new Set<string>();
      for (let p = pos - 1; p >= 0; p--)
        if (typeof this.order[p] === 'string') {
          near.add(this.order[p] as string);
          break;
        }
      for (let p = pos + 1; p < this.order.length; p++)
        if (typeof this.order[p] === 'string') {
          near.add(this.order[p] as string);
          break;
        }
      if (near.size === 0) return;
      const ids = [...near];
      issue.message += `; it lies among the events of ${ids.map((id) => `rollout ${id}`).join(' and ')}, kept and marked incomplete`;
      for (const id of ids)
        this.gap(
          this.groups.get(id) as Group,
          where,
          `an unreadable event here may have belonged to this rollout`,
        );
    });
    const out: Rollout[] = [];
    for (const g of this.groups.values()) {
      try {
        out.push(this.build(g));
      } catch (e) {
        this.report(issueFrom(e, g.where));
      }
    }
    return out;
  }

  private build(g: Group): Rollout {
    const h = g.header ?? {};
    const meta =
      h.metadata === undefined || h.metadata === null ? {} : readJsonObject(h.metadata, 'rollout.metadata');
    const status = h.status === undefined || h.status === null ? {} : readObject(h.status, 'rollout.status');
    const metadata: JsonObject = { ...meta };
    for (const k of ['data_id', 'batch_idx', 'sample_idx_in_batch']) delete metadata[k];
    if (g.other.length)
      metadata.agl_other_events = [
        ...(Array.isArray(metadata.agl_other_events) ? metadata.agl_other_events : []),
        ...g.other,
      ];
    const headerGaps =
      h.incomplete === undefined || h.incomplete === null
        ? []
        : readArray(h.incomplete, 'rollout.incomplete');
    const fields: Record<string, unknown> = {
      rollout_id: g.rolloutId,
      data_id: readOptString(meta.data_id, 'rollout.metadata.data_id') ?? g.rolloutId,
      is_train:
        h.is_train === undefined || h.is_train === null ? true : readBool(h.is_train, 'rollout.is_train'),
      state: status.state ?? 'succeeded',
      error: readOptString(status.error_message, 'rollout.status.error_message'),
      step: readOptInt(meta.batch_idx, 'rollout.metadata.batch_idx'),
      sample_idx_in_step: readOptInt(meta.sample_idx_in_batch, 'rollout.metadata.sample_idx_in_batch'),
      final_reward: g.finalReward,
      rewards: g.rewards,
      metadata,
      incomplete: [
        ...headerGaps,
        ...g.gaps,
        ...(g.moreGaps
          ? [{ where: g.where, message: `and ${g.moreGaps} more parts could not be read` }]
          : []),
      ],
    };
    return assembleRollout(fields as JsonObject, g.calls);
  }
}

/** An issue's field and message as one phrase ("data.value must be …"). */
function formatDetail(i: TraceIssue): string {
  return i.field ? `${i.field} ${i.message}` : i.message;
}

/** Reads a decoded events document: a list of events, or the bundle `{"rollouts": [{rollout, events}]}`. */
export function readAglEvents(doc: unknown): {
  rollouts: Rollout[];
  issues: TraceIssue[];
  counters: ImportCounters;
} {
  const issues: TraceIssue[] = [];
  const counters: ImportCounters = {};
  const asm = new AglEventAssembler(counters, (i) => issues.push(i));
  if (Array.isArray(doc))
    doc.forEach((v, i) => {
      asm.event(v, `events[${i}]`);
    });
  else {
    const top = readObject(doc, 'document');
    readArray(top.rollouts, 'rollouts').forEach((entry, i) => {
      asm.bundleEntry(entry, `rollouts[${i}]`);
    });
  }
  const rollouts = asm.finish();
  counters.records_skipped = issues.filter((i) => i.severity !== 'warning').length;
  return { rollouts, issues, counters };
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
  // Each reward goes after the call it names; one that names none, before the next one that does (or at the
  // end). The stream keeps the rewards' order, which the reader restores (the last one is the final reward).
  const rewardsAfter = new Map<number, RewardEvent[]>();
  const tail: RewardEvent[] = [];
  const last = r.calls.length - 1;
  const pos = new Array<number>(r.rewards.length);
  let next = last;
  for (let j = r.rewards.length - 1; j >= 0; j--) {
    const ci = r.rewards[j].callIndex;
    pos[j] = ci ?? next;
    if (ci !== undefined) next = ci;
  }
  for (let j = 0; j < r.rewards.length; j++) {
    if (j > 0 && pos[j] < pos[j - 1]) pos[j] = pos[j - 1];
    if (pos[j] < 0) tail.push(r.rewards[j]);
    else rewardsAfter.set(pos[j], [...(rewardsAfter.get(pos[j]) ?? []), r.rewards[j]]);
  }
  const rewardEvent = (w: RewardEvent) => ({
    event_type: 'reward',
    rollout_id: r.rolloutId,
    attempt_id: '0',
    // an absent time is written as null (upstream always has one)
    timestamp: w.timestampMs === undefined ? null : w.timestampMs / 1000,
    // call_index is not an upstream field: it keeps which call a reward belongs to across a round trip
    data: w.callIndex === undefined ? { value: w.value } : { value: w.value, call_index: w.callIndex },
  });
  r.calls.forEach((c, i) => {
    const choice: Record<string, unknown> = { index: 0, finish_reason: c.response?.finishReason ?? null };
    if (c.response) choice.message = messageJson(c.response.message);
    if (c.responseTokenIds) choice.token_ids = Array.from(c.responseTokenIds);
    // a list of the wrong length is written as the source had it: it reads back as mismatched again
    const lp = c.responseLogProbs ?? c.mismatchedLogProbs;
    if (lp) choice.logprobs = { content: Array.from(lp, (x) => ({ logprob: Number.isNaN(x) ? null : x })) };
    const response: Record<string, unknown> = { object: 'chat.completion', choices: [choice] };
    if (c.promptTokenIds) response.prompt_token_ids = Array.from(c.promptTokenIds);
    if (c.error !== undefined) response.error = c.error;
    const request: Record<string, unknown> = {
      messages: c.request.messages.map(messageJson),
      ...c.request.sampling,
    };
    if (c.request.model !== undefined) request.model = c.request.model;
    if (c.request.tools) request.tools = c.request.tools;
    const endMs = c.timings ? c.timings.endMs : null;
    events.push({
      event_type: 'model_request',
      rollout_id: r.rolloutId,
      attempt_id: '0',
      timestamp: endMs === null ? null : endMs / 1000,
      data: {
        // where the call was served; a call without engine info (ids-only triplets) writes none
        ...(c.engine
          ? {
              model: c.engine.model,
              model_version: c.engine.policyVersion ?? null,
              server: {
                model: c.engine.model,
                endpoint: c.engine.engine,
                version: c.engine.policyVersion ?? null,
              },
            }
          : {}),
        request,
        response,
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
  // The final reward is the last reward event's value; one that is not is written as its own last event.
  const lastValue = r.rewards.length ? r.rewards[r.rewards.length - 1].value : null;
  if (r.finalReward !== lastValue)
    events.push({
      event_type: 'reward',
      rollout_id: r.rolloutId,
      attempt_id: '0',
      timestamp: null,
      data: r.finalReward === null ? { value: null } : { value: r.finalReward, final_only: true },
    });
  return events;
}

/** Our bundle: each rollout with a gateway-shaped `rollout` header and its full-form events. */
export function toAglEventsBundle(rollouts: Rollout[]): { rollouts: Record<string, unknown>[] } {
  return { rollouts: rollouts.map(bundleEntry) };
}

/** The bundle as text pieces (`{"rollouts":[`, one entry per piece, `]}` and a newline), for large traces. */
export function* aglEventsBundleChunks(rollouts: Iterable<Rollout>): Generator<string> {
  yield '{"rollouts":[';
  let first = true;
  for (const r of rollouts) {
    yield (first ? '' : ',') + JSON.stringify(bundleEntry(r));
    first = false;
  }
  yield ']}\n';
}

function bundleEntry(r: Rollout): Record<string, unknown> {
  {
    // Other events stay in the header's metadata (their place among the calls is not known).
    const metadata: Record<string, unknown> = { ...r.metadata, data_id: r.dataId };
    delete metadata.batch_idx;
    delete metadata.sample_idx_in_batch;
    if (r.step !== undefined) metadata.batch_idx = r.step;
    if (r.sampleIdxInStep !== undefined) metadata.sample_idx_in_batch = r.sampleIdxInStep;
    return {
      rollout: {
        rollout_id: r.rolloutId,
        is_train: r.isTrain,
        metadata,
        status: { state: r.state, error_message: r.error ?? null },
        // not a gateway field: which parts of the source could not be read (see Rollout.incomplete)
        ...(r.incomplete?.length ? { incomplete: r.incomplete } : {}),
      },
      events: rolloutToAglEvents(r),
    };
  }
}
