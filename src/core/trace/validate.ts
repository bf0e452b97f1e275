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
    super(`${field} ${detail}`);
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
    throw new RecordInvalid(path, `must be a finite number, got ${describe(v)}`);
  return v;
}

export function readInt(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw new RecordInvalid(path, `must be an integer, got ${typeof v === 'number' ? v : describe(v)}`);
  return v;
}

export function readOptInt(v: unknown, path: string): number | undefined {
  return v === undefined || v === null ? undefined : readInt(v, path);
}

export function readArray(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new RecordInvalid(path, `must be an array, got ${describe(v)}`);
  return v;
}

const INT32_MAX = 2 ** 31 - 1;

/** A JSON array of token ids → Int32Array; every entry must be an integer in [0, 2^31). */
export function readTokenIds(v: unknown, path: string): Int32Array {
  const a = readArray(v, path);
  const out = new Int32Array(a.length);
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
 * positive values are kept) become NaN = "absent", and are counted in `nonFinite`.
 */
export function readLogProbs(v: unknown, path: string): { values: Float32Array; nonFinite: number } {
  const a = readArray(v, path);
  const out = new Float32Array(a.length);
  let nonFinite = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (typeof x === 'number' && Number.isFinite(x)) out[i] = x;
    else if (x === null || (typeof x === 'number' && !Number.isFinite(x)) || isNonFiniteString(x)) {
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
        throw new RecordInvalid(join(join(path, i), 'type'), `"${String(p.type)}" parts are not supported`);
    });
    return text;
  }
  throw new RecordInvalid(path, `must be a string, null or a list of text parts, got ${describe(v)}`);
}

function readToolCall(v: unknown, path: string): ToolCall {
  const o = readObject(v, path);
  const f = readObject(o.function, join(path, 'function'));
  const args = f.arguments;
  return {
    id: readOptString(o.id, join(path, 'id')) ?? '',
    type: 'function',
    function: {
      name: readString(f.name, join(join(path, 'function'), 'name')),
      // Some servers send already-parsed arguments; keep them as the JSON text the model produced.
      arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
    },
  };
}

function readTool(v: unknown, path: string): ToolDefinition {
  const o = readObject(v, path);
  const f = readObject(o.function, join(path, 'function'));
  const def: ToolDefinition = {
    type: 'function',
    function: { name: readString(f.name, join(join(path, 'function'), 'name')) },
  };
  if (typeof f.description === 'string') def.function.description = f.description;
  if (isObject(f.parameters)) def.function.parameters = f.parameters;
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
    s.stop = typeof o.stop === 'string' ? [o.stop] : readArray(o.stop, join(path, 'stop')).map(String);
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

export function readTimings(v: unknown, path: string): CallTimings | undefined {
  if (v === undefined || v === null) return undefined;
  const o = readObject(v, path);
  return {
    startMs: readNumber(o.start_ms, join(path, 'start_ms')),
    endMs: readNumber(o.end_ms, join(path, 'end_ms')),
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
  const ci = readOptInt(o.call_index, join(path, 'call_index'));
  if (ci !== undefined) r.callIndex = ci;
  if (o.timestamp_ms !== undefined && o.timestamp_ms !== null)
    r.timestampMs = readNumber(o.timestamp_ms, join(path, 'timestamp_ms'));
  return r;
}

/** Structural checks a whole rollout must pass, whatever format it came from. */
export function checkRollout(r: Rollout): void {
  r.calls.forEach((c, i) => {
    if (c.promptTokenIds === undefined && c.responseTokenIds !== undefined)
      throw new RecordInvalid(`calls[${i}].prompt_token_ids`, 'is missing but response_token_ids is present');
  });
  r.rewards.forEach((rw, i) => {
    if (rw.callIndex !== undefined && (rw.callIndex < 0 || rw.callIndex >= r.calls.length))
      throw new RecordInvalid(
        `rewards[${i}].call_index`,
        `is ${rw.callIndex} but the rollout has ${r.calls.length} calls`,
      );
  });
}
