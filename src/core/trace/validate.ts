/**
 * Runtime validation of untrusted JSON into the trace model. Every reader takes the index path of the value it
 * reads, so an error names exactly where the record is wrong ("calls[3].response_log_probs has 16 values but
 * response_token_ids has 17"). A reader throws `RecordInvalid` for the first fatal problem of a record; the
 * importers catch it per record, report it as a TraceIssue and keep going, so every valid record survives.
 */
import type {
  CallTimings,
  ChatMessage,
  EngineInfo,
  ModelCall,
  ModelRequest,
  ModelResponse,
  RewardEvent,
  Rollout,
  RolloutState,
  SamplingParams,
  ToolCall,
  ToolDefinition,
  TraceIssue,
} from './types';

/** A fatal problem in one record: `field` is the index path inside the record. */
export class RecordInvalid extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
  ) {
    // No stack trace: this is data, not a bug, and a file of a million bad records must not pay for a
    // million captured stacks.
    const E = Error as { stackTraceLimit?: number };
    const limit = E.stackTraceLimit;
    E.stackTraceLimit = 0;
    super(`${field} ${detail}`);
    E.stackTraceLimit = limit;
  }
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export function describe(v: unknown): string {
  if (v === undefined) return 'nothing (missing)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `a string ("${v.length > 24 ? v.slice(0, 24) + '…' : v}")`;
  return `${typeof v === 'object' ? 'an object' : `a ${typeof v}`}`;
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function readObject(v: unknown, path: string): JsonObject {
  if (!isObject(v)) throw new RecordInvalid(path || 'record', `must be an object, got ${describe(v)}`);
  return v;
}

export function readString(v: unknown, path: string): string {
  if (typeof v !== 'string') throw new RecordInvalid(path, `must be a string, got ${describe(v)}`);
  return v;
}

export function readOptString(v: unknown, path: string): string | undefined {
  return v === undefined || v === null ? undefined : readString(v, path);
}

export function readBool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new RecordInvalid(path, `must be true or false, got ${describe(v)}`);
  return v;
}

export function readNumber(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new RecordInvalid(
      path,
      `must be a finite number, got ${typeof v === 'number' ? String(v) : describe(v)}`,
    );
  return v;
}

/** An integer that a double holds exactly (|v| ≤ 2^53 − 1), so every reader and writer agrees on it. */
export function readInt(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v))
    throw new RecordInvalid(
      path,
      typeof v === 'number' && Number.isInteger(v)
        ? `must be an integer of at most 2^53 − 1 in magnitude, got ${v}`
        : `must be an integer, got ${typeof v === 'number' ? v : describe(v)}`,
    );
  return v;
}

/** An integer in [lo, hi]. */
export function readIntIn(v: unknown, path: string, lo: number, hi: number): number {
  const x = readInt(v, path);
  if (x < lo || x > hi) throw new RecordInvalid(path, `must be an integer in [${lo}, ${hi}], got ${x}`);
  return x;
}

/** HTTP status of a recorded call: 0 while in flight, else a status code (499: the rollout ended first). */
export function readHttpStatus(v: unknown, path: string): number {
  return readIntIn(v, path, 0, 999);
}

/** Deepest nesting accepted in free-form JSON (metadata, tool schemas, tool-call arguments, errors). */
export const MAX_JSON_DEPTH = 64;

/**
 * Free-form JSON (metadata, tool parameter schemas, parsed tool-call arguments): any JSON value, checked
 * without recursion so that hostile nesting cannot overflow the stack here. It must nest at most
 * MAX_JSON_DEPTH levels (JSON.stringify and structured cloning recurse, so deeper values could not be written
 * back or sent to a worker) and hold only finite numbers (JSON.parse turns 1e400 into Infinity, which JSON
 * cannot write).
 */
export function readJsonValue(v: unknown, path: string): Json {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v, path, depth: 0 }];
  while (stack.length) {
    const top = stack.pop() as { v: unknown; path: string; depth: number };
    const x = top.v;
    if (x === null || typeof x === 'string' || typeof x === 'boolean') continue;
    if (typeof x === 'number') {
      if (!Number.isFinite(x))
        throw new RecordInvalid(top.path, `is a number too large for JSON (${x}); write it as a string`);
      continue;
    }
    if (typeof x !== 'object') throw new RecordInvalid(top.path, `must be a JSON value, got ${describe(x)}`);
    if (top.depth >= MAX_JSON_DEPTH)
      throw new RecordInvalid(
        path,
        `nests deeper than ${MAX_JSON_DEPTH} levels (at ${top.path.slice(0, 80)}…)`,
      );
    if (Array.isArray(x)) {
      for (let i = x.length - 1; i >= 0; i--)
        stack.push({ v: x[i], path: `${top.path}[${i}]`, depth: top.depth + 1 });
    } else {
      const keys = Object.keys(x);
      for (let i = keys.length - 1; i >= 0; i--)
        stack.push({
          v: (x as Record<string, unknown>)[keys[i]],
          path: join(top.path, keys[i]),
          depth: top.depth + 1,
        });
    }
  }
  return v as Json;
}

/** Free-form JSON that must be an object (metadata). */
export function readJsonObject(v: unknown, path: string): JsonObject {
  return readJsonValue(readObject(v, path), path) as JsonObject;
}

export function readOptInt(v: unknown, path: string): number | undefined {
  return v === undefined || v === null ? undefined : readInt(v, path);
}

export function readArray(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new RecordInvalid(path, `must be an array, got ${describe(v)}`);
  return v;
}

const INT32_MAX = 2 ** 31 - 1;

/**
 * Hands out consecutive, disjoint views of one typed array, so the id (or log-prob) arrays of a record share
 * one allocation: thousands of small ArrayBuffers cost more to allocate and collect than their values cost to
 * copy. When the slab is used up (it was sized from a count that was off), `take` allocates a fresh array.
 */
export class Slab<T extends Int32Array | Float32Array> {
  private at = 0;
  constructor(
    private readonly buf: T,
    private readonly alloc: (n: number) => T,
  ) {}

  take(n: number): T {
    if (this.at + n > this.buf.length) return this.alloc(n);
    const view = this.buf.subarray(this.at, this.at + n) as T;
    this.at += n;
    return view;
  }
}

/**
 * A JSON array of token ids → Int32Array; every entry must be an integer in [0, 2^31). An Int32Array (ids an
 * importer already read) is checked for negative entries and kept as it is.
 */
export function readTokenIds(v: unknown, path: string, slab?: Slab<Int32Array>): Int32Array {
  if (v instanceof Int32Array) {
    for (let i = 0; i < v.length; i++)
      if (v[i] < 0) throw new RecordInvalid(`${path}[${i}]`, `must be a token id (integer ≥ 0), got ${v[i]}`);
    return v;
  }
  const a = readArray(v, path);
  const out = slab ? slab.take(a.length) : new Int32Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > INT32_MAX)
      throw new RecordInvalid(
        `${path}[${i}]`,
        `must be a token id (integer ≥ 0), got ${typeof x === 'number' ? x : describe(x)}`,
      );
    out[i] = x;
  }
  return out;
}

/**
 * A JSON array of log-probs → Float32Array. Non-finite entries (null, "nan", "inf", "-inf", NaN, ±Infinity,
 * and numbers beyond float32's range, which a Float32Array would hold as ±Infinity) become NaN = "absent",
 * and are counted in `nonFinite`; positive values are kept. A Float32Array (log-probs an importer already
 * read) has its infinite entries made absent the same way.
 */
export function readLogProbs(
  v: unknown,
  path: string,
  slab?: Slab<Float32Array>,
): { values: Float32Array; nonFinite: number } {
  if (v instanceof Float32Array) {
    let nonFinite = 0;
    for (let i = 0; i < v.length; i++)
      if (!Number.isFinite(v[i])) {
        if (!Number.isNaN(v[i])) v[i] = Number.NaN;
        nonFinite++;
      }
    return { values: v, nonFinite };
  }
  const a = readArray(v, path);
  const out = slab ? slab.take(a.length) : new Float32Array(a.length);
  let nonFinite = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (typeof x === 'number' && Number.isFinite(Math.fround(x))) out[i] = x;
    else if (x === null || typeof x === 'number' || isNonFiniteString(x)) {
      out[i] = Number.NaN;
      nonFinite++;
    } else throw new RecordInvalid(`${path}[${i}]`, `must be a number or null, got ${describe(x)}`);
  }
  return { values: out, nonFinite };
}

function isNonFiniteString(x: unknown): boolean {
  return x === 'nan' || x === 'NaN' || x === 'inf' || x === '-inf' || x === 'Infinity' || x === '-Infinity';
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

export function readMessage(v: unknown, path: string): ChatMessage {
  const o = readObject(v, path);
  const role = readString(o.role, join(path, 'role'));
  if (!ROLES.has(role))
    throw new RecordInvalid(join(path, 'role'), `must be system, user, assistant or tool, got "${role}"`);
  const content = readMessageContent(o.content, join(path, 'content'));
  const m: ChatMessage = { role: role as ChatMessage['role'], content };
  if (o.name !== undefined && o.name !== null) m.name = readString(o.name, join(path, 'name'));
  if (o.tool_call_id !== undefined && o.tool_call_id !== null)
    m.tool_call_id = readString(o.tool_call_id, join(path, 'tool_call_id'));
  if (o.reasoning_content !== undefined && o.reasoning_content !== null)
    m.reasoning_content = readString(o.reasoning_content, join(path, 'reasoning_content'));
  if (o.tool_calls !== undefined && o.tool_calls !== null) {
    const tp = join(path, 'tool_calls');
    m.tool_calls = readArray(o.tool_calls, tp).map((t, i) => readToolCall(t, join(tp, i)));
  }
  return m;
}

/** OpenAI content: a string, null, or a list of parts of which the text parts are joined. */
function readMessageContent(v: unknown, path: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    let text = '';
    v.forEach((part, i) => {
      const p = readObject(part, join(path, i));
      if (p.type === 'text') text += readString(p.text, join(join(path, i), 'text'));
      else
        throw new RecordInvalid(
          join(join(path, i), 'type'),
          typeof p.type === 'string'
            ? `"${p.type}" parts are not supported (only "text")`
            : `must be "text", got ${describe(p.type)}`,
        );
    });
    return text;
  }
  throw new RecordInvalid(path, `must be a string, null or a list of text parts, got ${describe(v)}`);
}

function readToolCall(v: unknown, path: string): ToolCall {
  const o = readObject(v, path);
  const fp = join(path, 'function');
  const f = readObject(o.function, fp);
  const args = f.arguments;
  return {
    id: readOptString(o.id, join(path, 'id')) ?? '',
    type: 'function',
    function: {
      name: readString(f.name, join(fp, 'name')),
      // Some servers send already-parsed arguments; keep them as the JSON text the model produced.
      arguments:
        typeof args === 'string' ? args : JSON.stringify(readJsonValue(args ?? {}, join(fp, 'arguments'))),
    },
  };
}

function readTool(v: unknown, path: string): ToolDefinition {
  const o = readObject(v, path);
  const fp = join(path, 'function');
  const f = readObject(o.function, fp);
  const def: ToolDefinition = {
    type: 'function',
    function: { name: readString(f.name, join(fp, 'name')) },
  };
  const desc = readOptString(f.description, join(fp, 'description'));
  if (desc !== undefined) def.function.description = desc;
  if (f.parameters !== undefined && f.parameters !== null)
    def.function.parameters = readJsonObject(f.parameters, join(fp, 'parameters'));
  return def;
}

const SAMPLING_KEYS = ['temperature', 'top_p', 'max_tokens', 'seed'] as const;

/** A chat-completions request body (OpenAI names); unknown keys are ignored. */
export function readRequest(v: unknown, path: string): ModelRequest {
  const o = readObject(v, path);
  const mp = join(path, 'messages');
  const req: ModelRequest = {
    messages: readArray(o.messages ?? [], mp).map((m, i) => readMessage(m, join(mp, i))),
    sampling: readSampling(
      isObject(o.sampling) ? o.sampling : o,
      isObject(o.sampling) ? join(path, 'sampling') : path,
    ),
  };
  if (o.model !== undefined && o.model !== null) req.model = readString(o.model, join(path, 'model'));
  if (o.tools !== undefined && o.tools !== null) {
    const tp = join(path, 'tools');
    req.tools = readArray(o.tools, tp).map((t, i) => readTool(t, join(tp, i)));
  }
  return req;
}

function readSampling(o: JsonObject, path: string): SamplingParams {
  const s: SamplingParams = {};
  for (const k of SAMPLING_KEYS) {
    const x = o[k];
    if (x !== undefined && x !== null) s[k] = readNumber(x, join(path, k));
  }
  if (o.stop !== undefined && o.stop !== null) {
    const sp = join(path, 'stop');
    s.stop =
      typeof o.stop === 'string' ? [o.stop] : readArray(o.stop, sp).map((x, i) => readString(x, join(sp, i)));
  }
  return s;
}

const STATES = new Set(['queuing', 'running', 'succeeded', 'failed']);

export function readState(v: unknown, path: string): RolloutState {
  const s = readString(v, path);
  if (!STATES.has(s))
    throw new RecordInvalid(path, `must be queuing, running, succeeded or failed, got "${s}"`);
  return s as RolloutState;
}

/** Counters an import accumulates (TraceBatch.counters). */
export interface ImportCounters {
  [name: string]: number;
}

export function bump(counters: ImportCounters, name: string, by = 1): void {
  if (by !== 0) counters[name] = (counters[name] ?? 0) + by;
}

/**
 * Checks the token fields of a call against each other. `strict` (our own format): a length mismatch is
 * fatal. Lenient (Agent Lightning inputs): log-probs of the wrong length make the call's log-probs absent,
 * as upstream's trainer treats them, and the adjustment is reported as a warning.
 */
export function checkCallTokens(
  call: ModelCall,
  path: string,
  mode: 'strict' | 'lenient',
  warn: (field: string, message: string) => void,
  counters: ImportCounters,
): void {
  const lp = call.responseLogProbs;
  if (lp === undefined) return;
  const nIds = call.responseTokenIds?.length;
  if (nIds === undefined || lp.length !== nIds) {
    const msg =
      nIds === undefined
        ? `has ${lp.length} values but response_token_ids is missing`
        : `has ${lp.length} values but response_token_ids has ${nIds}`;
    if (mode === 'strict') throw new RecordInvalid(join(path, 'response_log_probs'), msg);
    warn(join(path, 'response_log_probs'), `${msg}; the call's log-probs are treated as absent`);
    call.mismatchedLogProbs = lp;
    call.responseLogProbs = undefined;
    bump(counters, 'logprobs_wrong_length_calls');
  }
}

/** Converts a caught exception of one record into a TraceIssue; rethrows programming errors. */
export function issueFrom(e: unknown, where: string): TraceIssue {
  if (e instanceof RecordInvalid) return { where, field: e.field, message: e.detail, severity: 'error' };
  throw e;
}

/** The largest time (ms from the epoch, either way) a JavaScript Date holds: any later time is a corrupt value. */
export const MAX_TIME_MS = 8.64e15;

/** A time in ms since the epoch, within what a Date holds. */
export function readTimeMs(v: unknown, path: string): number {
  const x = readNumber(v, path);
  if (Math.abs(x) > MAX_TIME_MS)
    throw new RecordInvalid(path, `is ${x}, not a time (at most ${MAX_TIME_MS} ms from 1970 either way)`);
  return x;
}

export function readTimings(v: unknown, path: string): CallTimings | undefined {
  if (v === undefined || v === null) return undefined;
  const o = readObject(v, path);
  return {
    startMs: readTimeMs(o.start_ms, join(path, 'start_ms')),
    endMs: readTimeMs(o.end_ms, join(path, 'end_ms')),
  };
}

export function readEngine(v: unknown, path: string): EngineInfo | undefined {
  if (v === undefined || v === null) return undefined;
  const o = readObject(v, path);
  const e: EngineInfo = {
    engine: readString(o.engine, join(path, 'engine')),
    model: readString(o.model, join(path, 'model')),
  };
  const pv = readOptInt(o.policy_version, join(path, 'policy_version'));
  if (pv !== undefined) e.policyVersion = pv;
  return e;
}

export function readResponse(v: unknown, path: string): ModelResponse | null {
  if (v === undefined || v === null) return null;
  const o = readObject(v, path);
  return {
    message: readMessage(o.message, join(path, 'message')),
    finishReason: readOptString(o.finish_reason, join(path, 'finish_reason')) ?? null,
  };
}

export function readReward(v: unknown, path: string): RewardEvent {
  const o = readObject(v, path);
  const r: RewardEvent = { value: readNumber(o.value, join(path, 'value')) };
  const ci =
    o.call_index === undefined || o.call_index === null
      ? undefined
      : readIntIn(o.call_index, join(path, 'call_index'), 0, Number.MAX_SAFE_INTEGER);
  if (ci !== undefined) r.callIndex = ci;
  if (o.timestamp_ms !== undefined && o.timestamp_ms !== null)
    r.timestampMs = readTimeMs(o.timestamp_ms, join(path, 'timestamp_ms'));
  return r;
}

/** Structural checks a whole rollout must pass, whatever format it came from. */
export function checkRollout(r: Rollout): void {
  r.rewards.forEach((rw, i) => {
    if (rw.callIndex !== undefined && (rw.callIndex < 0 || rw.callIndex >= r.calls.length))
      throw new RecordInvalid(
        `rewards[${i}].call_index`,
        `is ${rw.callIndex} but the rollout has ${r.calls.length} calls`,
      );
  });
}
