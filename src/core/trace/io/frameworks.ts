/**
 * Rollout files of other RL frameworks and API logs, one record per line (docs/TRACE_FORMAT.md has each field
 * mapping):
 * - `nemo-gym`: NVIDIA NeMo Gym rollouts (`ng_collect_rollouts` output): `responses_create_params` (the
 *   Responses request), `response` (its `output` items; vLLM-served items carry `prompt_token_ids`,
 *   `generation_token_ids`, `generation_log_probs`), `reward`, `_ng_task_index`, `_ng_rollout_index`;
 * - `verl-dump`: verl's `trainer.rollout_data_dir` files (`RayPPOTrainer._dump_generations`): `input`,
 *   `output`, `gts`, `score`, `step` and the reward function's extra keys: decoded text, no ids;
 * - `openai-log`: `{request, response}` pairs of the OpenAI Chat Completions or Responses API (with or without
 *   tools; vLLM's `prompt_token_ids` / `token_ids` / log-probs are used when present);
 * - `skyrl-dump`: SkyRL's evaluation dumps (`skyrl_train/utils/trainer_utils.py:dump_per_dataset_eval_results`):
 *   `input_prompt`, `output_response`, `score`, `stop_reason`, `env_class`, `env_extras`, `data_source`.
 *
 * Ids stay ids: recorded token ids and log-probs are used as recorded. A text-only record gets ids from a
 * named tokenizer when the reader is given one, and its rollout is marked `metadata.retokenized` (which
 * tokenizer, from what text) so every view can say which numbers are the tokenizer's and not the engine's.
 * Every record is built as a JSONL record and read by the JSONL validator (`readTraceRecord`).
 */

import { createRegistry } from '../../registry';
import { retokenizeCall } from '../../tokenize/retokenize';
import type { ChatTokenizer } from '../../tokenize/tokenizer';
import type { Rollout } from '../types';
import {
  bump,
  describe,
  type ImportCounters,
  isObject,
  type JsonObject,
  join,
  RecordInvalid,
  readArray,
  readObject,
  readString,
} from '../validate';
import { readTraceRecord } from './jsonl';

export type FrameworkKind = 'nemo-gym' | 'verl-dump' | 'openai-log' | 'skyrl-dump';

type Rec = Record<string, unknown>;

/** What a line reader may know about the lines before it (dumps number samples and group them by prompt). */
export interface LineContext {
  lineNo: number;
  /** `<prefix><k>`: k numbers the distinct keys in order of appearance */
  groupOf(key: string, prefix: string): string;
  /** 0, 1, 2, … per counter name */
  next(counter: string): number;
}

/** One framework's line format: how it is recognised, read, described, and tokenized when it has no ids. */
export interface FrameworkFormat {
  name: FrameworkKind;
  /** one record, for messages: `a verl rollout dump line ({"input", …})` */
  text: string;
  plural: string;
  /** where upstream writes the format */
  source: string;
  /** whether a decoded line has this format's keys (formats are tried in registry order) */
  detect(o: JsonObject): boolean;
  /** the JSONL record of one line (read by the JSONL validator); throws RecordInvalid */
  record(o: JsonObject, ctx: LineContext): Rec;
  /**
   * how a call without ids is tokenized: 'dumped' = the user message and the response are the dumped text,
   * encoded as is; 'template' = the chat template over the messages (the trainer's retokenization)
   */
  tokenize: 'dumped' | 'template';
  /** what the tokenized text was, for the retokenized mark */
  tokenizedText: string;
}

const registry = createRegistry<FrameworkFormat>('framework format');

export function registerFramework(f: FrameworkFormat): void {
  registry.register(f.name, f);
}

/** Every framework format, in registration (= detection) order. */
export function listFrameworks(): FrameworkFormat[] {
  return registry.list();
}

export function getFramework(name: string): FrameworkFormat {
  return registry.get(name);
}

/** The framework a decoded line belongs to, by its keys; null when it is none of them. */
export function frameworkKind(v: unknown): FrameworkKind | null {
  if (!isObject(v)) return null;
  for (const f of registry.list()) if (f.detect(v)) return f.name;
  return null;
}

interface FrameworkOptions {
  tokenizer?: ChatTokenizer;
}

/**
 * Reads the lines of one framework file: keeps the per-file state (grouping of text-only records by their
 * prompt, per-step sample counters). `read` throws RecordInvalid for a bad line; nothing else is lost.
 */
export class FrameworkReader {
  private readonly groups = new Map<string, number>();
  private readonly counts = new Map<string, number>();
  private readonly ctx: LineContext;

  constructor(
    private readonly counters: ImportCounters,
    private readonly opts: FrameworkOptions = {},
  ) {
    this.ctx = {
      lineNo: 0,
      groupOf: (key, prefix) => {
        let g = this.groups.get(`${prefix}\u0000${key}`);
        if (g === undefined) {
          g = this.groups.size;
          this.groups.set(`${prefix}\u0000${key}`, g);
        }
        return `${prefix}${g}`;
      },
      next: (counter) => {
        const n = this.counts.get(counter) ?? 0;
        this.counts.set(counter, n + 1);
        return n;
      },
    };
  }

  read(kind: FrameworkKind, v: unknown, lineNo: number): Rollout {
    const o = readObject(v, '');
    this.ctx.lineNo = lineNo;
    const r = readTraceRecord(getFramework(kind).record(o, this.ctx), this.counters);
    const tok = this.opts.tokenizer;
    if (tok) bump(this.counters, 'retokenized_calls', tokenizeTextOnly(r, tok));
    const left = textOnlyCalls(r);
    if (left) bump(this.counters, 'text_only_calls', left);
    return r;
  }
}

/** verl `_dump_generations`: one sample per line, decoded with skip_special_tokens=True. */
function verlRecord(o: JsonObject, ctx: LineContext): Rec {
  const input = readString(o.input, 'input');
  const output = readString(o.output, 'output');
  const step = o.step === undefined || o.step === null ? 0 : readIndex(o.step, 'step');
  const score = readScore(o.score, 'score');
  const idx = ctx.next(`verl step ${step}`);
  const extra: Rec = {};
  for (const [k, x] of Object.entries(o))
    if (k !== 'input' && k !== 'output' && k !== 'score' && k !== 'step') extra[k] = x;
  return {
    rollout_id: `step${step}-${idx}`,
    // verl's uid is not dumped: samples of one prompt share the prompt text
    data_id: ctx.groupOf(input, `step${step}-prompt`),
    step,
    sample_idx_in_step: idx,
    final_reward: score,
    rewards: score === null ? [] : [{ value: score }],
    metadata: { source: 'verl-dump', verl: extra },
    calls: [
      {
        request: { messages: [{ role: 'user', content: input }] },
        response: { message: { role: 'assistant', content: output }, finish_reason: null },
      },
    ],
  };
}

/** SkyRL `dump_per_dataset_eval_results`: decoded with special tokens; `score` may be per-token rewards. */
function skyrlRecord(o: JsonObject, ctx: LineContext): Rec {
  const input = readString(o.input_prompt, 'input_prompt');
  const output = readString(o.output_response, 'output_response');
  const source = o.data_source === undefined || o.data_source === null ? 'unknown' : o.data_source;
  const ds = typeof source === 'string' ? source : readString(source, 'data_source');
  let score: number | null;
  if (Array.isArray(o.score)) {
    // token-level rewards: SkyRL sums them to the sequence reward
    score = 0;
    o.score.forEach((x, i) => {
      score = (score as number) + (readScore(x, join('score', i)) ?? 0);
    });
  } else score = readScore(o.score, 'score');
  const stop = o.stop_reason;
  if (stop !== undefined && stop !== null && typeof stop !== 'string')
    throw new RecordInvalid('stop_reason', `must be a string or null, got ${describe(stop)}`);
  const idx = ctx.next(`skyrl ${ds}`);
  const extra: Rec = {};
  for (const k of ['env_class', 'env_extras'] as const) if (o[k] !== undefined) extra[k] = o[k];
  return {
    rollout_id: `${ds}-${idx}`,
    data_id: ctx.groupOf(input, `${ds}-prompt`),
    sample_idx_in_step: idx,
    final_reward: score,
    rewards: score === null ? [] : [{ value: score }],
    metadata: { source: 'skyrl-dump', data_source: ds, skyrl: extra },
    calls: [
      {
        request: { messages: [{ role: 'user', content: input }] },
        response: {
          message: { role: 'assistant', content: output },
          finish_reason: typeof stop === 'string' ? stop : null,
        },
      },
    ],
  };
}

/**
 * Gives the calls without ids of a text-only rollout (`metadata.source` names its format) ids from the
 * tokenizer, as its format says: the dumped text as it is (verl, SkyRL: the text is already the rendered
 * prompt and the decoded response) or the chat template over the messages (API logs). The rollout is marked
 * `metadata.retokenized`. Returns how many calls got ids. The reader does this when it is given a tokenizer;
 * the page does it after reading, once its tokenizer has loaded.
 */
export function tokenizeTextOnly(r: Rollout, tok: ChatTokenizer): number {
  const kind = r.metadata.source;
  const f = typeof kind === 'string' ? registry.find(kind) : undefined;
  if (!f) return 0;
  let made = 0;
  for (const c of r.calls) {
    if (c.promptTokenIds !== undefined || c.response === null) continue;
    const t =
      f.tokenize === 'dumped'
        ? {
            promptIds: tok.encode(c.request.messages[0]?.content ?? ''),
            responseIds: tok.encode(c.response.message.content ?? ''),
          }
        : retokenizeCall(tok, c);
    if (!t) continue;
    c.promptTokenIds = t.promptIds;
    c.responseTokenIds = t.responseIds;
    made++;
  }
  if (made === 0) return 0;
  r.metadata.retokenized = { tokenizer: tok.name, from: f.name, text: f.tokenizedText };
  return made;
}

/** Calls of a rollout that have a response but no ids (text only). */
export function textOnlyCalls(r: Rollout): number {
  let n = 0;
  for (const c of r.calls) if (c.promptTokenIds === undefined && c.response !== null) n++;
  return n;
}

function readIndex(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new RecordInvalid(path, `must be an integer ≥ 0, got ${typeof v === 'number' ? v : describe(v)}`);
  return v;
}

/** A reward: a finite number, a boolean (1 / 0, as verifiers report pass/fail) or null (none). */
function readScore(v: unknown, path: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new RecordInvalid(
      path,
      `must be a finite number, a boolean or null, got ${typeof v === 'number' ? v : describe(v)}`,
    );
  return v;
}

// ---- the Responses API shape (NeMo Gym, OpenAI Responses logs) ------------------------------------------

/** Text of Responses content: a string, or parts of type input_text / output_text / text / refusal. */
function contentText(v: unknown, path: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  const parts = readArray(v, path);
  let text = '';
  parts.forEach((p, i) => {
    const pp = join(path, i);
    const po = readObject(p, pp);
    const t = po.type;
    if (
      t === 'input_text' ||
      t === 'output_text' ||
      t === 'text' ||
      t === 'summary_text' ||
      t === 'reasoning_text'
    )
      text += readString(po.text, join(pp, 'text'));
    else if (t === 'refusal') text += readString(po.refusal, join(pp, 'refusal'));
    else
      throw new RecordInvalid(
        join(pp, 'type'),
        typeof t === 'string'
          ? `"${t}" parts are not supported (only text parts)`
          : `must be a text part type, got ${describe(t)}`,
      );
  });
  return text;
}

/** Responses `tools` ({type: "function", name, description, parameters}) → chat-completions tools. */
function responsesTools(v: unknown, path: string): Rec[] | undefined {
  if (v === undefined || v === null) return undefined;
  return readArray(v, path)
    .map((t, i) => {
      const tp = join(path, i);
      const o = readObject(t, tp);
      if (isObject(o.function)) return o as Rec; // already in the chat shape
      if (o.type !== 'function') return null; // built-in tools (web_search, …) have no schema to render
      const fn: Rec = { name: readString(o.name, join(tp, 'name')) };
      if (o.description !== undefined && o.description !== null) fn.description = o.description;
      if (o.parameters !== undefined && o.parameters !== null) fn.parameters = o.parameters;
      return { type: 'function', function: fn };
    })
    .filter((t): t is Rec => t !== null);
}

interface Generation {
  /** the assistant message the items make up */
  message: Rec;
  finish: string;
  ids?: { prompt: unknown; response: unknown; logProbs: unknown };
  path: string;
}

const MODEL_ITEMS = new Set(['reasoning', 'function_call', 'message']);

/**
 * Responses `input` (a string or items) as chat messages; `instructions` becomes a system message.
 */
function inputMessages(input: unknown, instructions: unknown, path: string): Rec[] {
  const out: Rec[] = [];
  if (instructions !== undefined && instructions !== null)
    out.push({ role: 'system', content: readString(instructions, 'instructions') });
  if (input === undefined || input === null) return out;
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return out;
  }
  const items = readArray(input, path);
  const gen = new GenerationWalker(path, out);
  items.forEach((it, i) => {
    gen.item(it, i);
  });
  gen.flush();
  return out;
}

/**
 * Walks Responses items: model items (reasoning, assistant messages, function calls) gather into one
 * generation, closed by an item that carries the generation's token ids or by the next observation
 * (function_call_output, a user / system / developer message). Each generation becomes an assistant message
 * in `context`, observations become tool / user / system messages.
 */
class GenerationWalker {
  readonly generations: { gen: Generation; context: Rec[] }[] = [];
  private pending: { reasoning: string[]; content: string[]; toolCalls: Rec[]; first: string } | null = null;

  constructor(
    private readonly path: string,
    readonly context: Rec[],
    private readonly record = false,
  ) {}

  item(it: unknown, i: number): void {
    const ip = join(this.path, i);
    const o = readObject(it, ip);
    const type = o.type ?? (o.role !== undefined ? 'message' : undefined);
    if (typeof type !== 'string')
      throw new RecordInvalid(join(ip, 'type'), `must be an item type, got ${describe(o.type)}`);
    const role = o.role ?? 'assistant';
    if (type === 'message' && role !== 'assistant') {
      this.flush();
      const r = role === 'developer' ? 'system' : role;
      if (r !== 'user' && r !== 'system')
        throw new RecordInvalid(
          join(ip, 'role'),
          `must be user, system, developer or assistant, got ${describe(role)}`,
        );
      this.context.push({ role: r, content: contentText(o.content, join(ip, 'content')) });
      return;
    }
    if (type === 'function_call_output') {
      this.flush();
      const out = o.output;
      this.context.push({
        role: 'tool',
        tool_call_id: readString(o.call_id, join(ip, 'call_id')),
        content: typeof out === 'string' ? out : contentText(out, join(ip, 'output')),
      });
      return;
    }
    if (!MODEL_ITEMS.has(type))
      throw new RecordInvalid(
        join(ip, 'type'),
        `"${type}" items are not supported (reasoning, message, function_call, function_call_output)`,
      );
    if (this.pending === null) this.pending = { reasoning: [], content: [], toolCalls: [], first: ip };
    const p = this.pending;
    if (type === 'reasoning') {
      const s =
        o.summary !== undefined && o.summary !== null ? contentText(o.summary, join(ip, 'summary')) : null;
      const c =
        o.content !== undefined && o.content !== null ? contentText(o.content, join(ip, 'content')) : null;
      const t = c ?? s;
      if (t) p.reasoning.push(t);
    } else if (type === 'message') {
      const t = contentText(o.content, join(ip, 'content'));
      if (t !== null) p.content.push(t);
    } else {
      const args = o.arguments;
      p.toolCalls.push({
        id: readString(o.call_id ?? o.id ?? '', join(ip, 'call_id')),
        type: 'function',
        function: {
          name: readString(o.name, join(ip, 'name')),
          arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
        },
      });
    }
    if (this.record && o.generation_token_ids !== undefined && o.generation_token_ids !== null)
      this.close({
        prompt: o.prompt_token_ids,
        response: o.generation_token_ids,
        logProbs: o.generation_log_probs,
        at: ip,
      });
  }

  /** Ends the current generation (if any). */
  flush(): void {
    if (this.pending) this.close(undefined);
  }

  private close(
    ids: { prompt: unknown; response: unknown; logProbs: unknown; at: string } | undefined,
  ): void {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    const message: Rec = { role: 'assistant', content: p.content.length ? p.content.join('') : null };
    if (p.reasoning.length) message.reasoning_content = p.reasoning.join('\n');
    if (p.toolCalls.length) message.tool_calls = p.toolCalls;
    const gen: Generation = {
      message,
      finish: p.toolCalls.length ? 'tool_calls' : 'stop',
      path: ids?.at ?? p.first,
    };
    if (ids) gen.ids = { prompt: ids.prompt, response: ids.response, logProbs: ids.logProbs };
    if (this.record) this.generations.push({ gen, context: [...this.context] });
    this.context.push(message);
  }
}

/** A call of a generation; the ids and log-probs are checked against each other under the source's names. */
function generationCall(
  request: Rec,
  g: Generation,
  finish: string | null,
  names = { prompt: 'prompt_token_ids', response: 'generation_token_ids', logProbs: 'generation_log_probs' },
): Rec {
  const call: Rec = {
    request,
    response: { message: g.message, finish_reason: finish ?? g.finish },
  };
  if (g.ids) {
    const at = g.path;
    if (g.ids.prompt === undefined || g.ids.prompt === null)
      throw new RecordInvalid(join(at, names.prompt), `is missing but ${names.response} is present`);
    const resp = readArray(g.ids.response, join(at, names.response));
    call.prompt_token_ids = readArray(g.ids.prompt, join(at, names.prompt));
    call.response_token_ids = resp;
    const lp = g.ids.logProbs;
    if (lp !== undefined && lp !== null) {
      const lps = readArray(lp, join(at, names.logProbs));
      if (lps.length !== resp.length)
        throw new RecordInvalid(
          join(at, names.logProbs),
          `has ${lps.length} values but ${names.response} has ${resp.length}`,
        );
      call.response_log_probs = lps;
    }
  }
  return call;
}

/** Checks the ids of one call under the source's names before the JSONL validator sees them. */
function checkIds(call: Rec, at: string, names: { prompt: string; response: string }): void {
  const check = (v: unknown, name: string) => {
    if (v === undefined) return;
    (v as unknown[]).forEach((x, i) => {
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > 0x7fffffff)
        throw new RecordInvalid(
          join(join(at, name), i),
          `must be a token id (integer ≥ 0), got ${typeof x === 'number' ? x : describe(x)}`,
        );
    });
  };
  check(call.prompt_token_ids, names.prompt);
  check(call.response_token_ids, names.response);
}

/** One NeMo Gym rollout line. */
function nemoGymRecord(o: JsonObject, lineNo: number): Rec {
  const params = readObject(o.responses_create_params ?? {}, 'responses_create_params');
  const resp = readObject(o.response, 'response');
  const task = o._ng_task_index;
  const roll = o._ng_rollout_index;
  const taskIdx = task === undefined || task === null ? null : readIndex(task, '_ng_task_index');
  const rollIdx = roll === undefined || roll === null ? null : readIndex(roll, '_ng_rollout_index');
  const tools = responsesTools(params.tools, 'responses_create_params.tools');
  const context = inputMessages(params.input, params.instructions, 'responses_create_params.input');
  const walker = new GenerationWalker('response.output', context, true);
  readArray(resp.output ?? [], 'response.output').forEach((it, i) => {
    walker.item(it, i);
  });
  walker.flush();
  const incomplete = isObject(resp.incomplete_details) ? resp.incomplete_details.reason : null;
  const request = (ctx: Rec[]): Rec => {
    const r: Rec = { messages: ctx };
    if (tools) r.tools = tools;
    if (typeof params.model === 'string') r.model = params.model;
    const sampling: Rec = {};
    if (typeof params.temperature === 'number') sampling.temperature = params.temperature;
    if (typeof params.top_p === 'number') sampling.top_p = params.top_p;
    if (typeof params.max_output_tokens === 'number') sampling.max_tokens = params.max_output_tokens;
    r.sampling = sampling;
    return r;
  };
  const n = walker.generations.length;
  const calls = walker.generations.map(({ gen, context: ctx }, k) => {
    // a response cut by max_output_tokens ends in a truncated generation
    const finish = k === n - 1 && incomplete === 'max_output_tokens' ? 'length' : null;
    const c = generationCall(request(ctx), gen, finish);
    checkIds(c, gen.path, { prompt: 'prompt_token_ids', response: 'generation_token_ids' });
    return c;
  });
  const reward = readScore(o.reward, 'reward');
  const rid =
    taskIdx !== null
      ? `${taskIdx}-${rollIdx ?? 0}`
      : typeof resp.id === 'string'
        ? resp.id
        : `line-${lineNo}`;
  const metadata: Rec = { source: 'nemo-gym' };
  if (taskIdx !== null) metadata.task_index = taskIdx;
  if (rollIdx !== null) metadata.rollout_index = rollIdx;
  if (typeof resp.id === 'string') metadata.response_id = resp.id;
  const rec: Rec = {
    rollout_id: rid,
    data_id: taskIdx !== null ? `task-${taskIdx}` : rid,
    final_reward: reward,
    rewards: reward === null ? [] : [{ value: reward }],
    metadata,
    calls,
  };
  if (rollIdx !== null) rec.sample_idx_in_step = rollIdx;
  return rec;
}

/** One `{request, response}` line of the Chat Completions or the Responses API. */
function openaiLogRecord(o: JsonObject, lineNo: number): Rec {
  const req = readObject(o.request, 'request');
  const resp = o.response === null ? null : readObject(o.response, 'response');
  const id = resp && typeof resp.id === 'string' ? resp.id : `line-${lineNo}`;
  let call: Rec;
  let api: 'chat.completions' | 'responses';
  if ('messages' in req) {
    api = 'chat.completions';
    call = chatCall(req, resp);
  } else if ('input' in req) {
    api = 'responses';
    call = responsesCall(req, resp);
  } else throw new RecordInvalid('request', 'must have "messages" (Chat Completions) or "input" (Responses)');
  const reward = readScore(o.reward, 'reward');
  return {
    rollout_id: id,
    data_id: id,
    final_reward: reward,
    rewards: reward === null ? [] : [{ value: reward }],
    metadata: { source: 'openai-log', api },
    calls: [call],
  };
}

function sampling(req: JsonObject, maxKey: string): Rec {
  const s: Rec = {};
  for (const k of ['temperature', 'top_p', 'seed', 'stop'] as const) if (req[k] !== undefined) s[k] = req[k];
  if (req[maxKey] !== undefined) s.max_tokens = req[maxKey];
  return s;
}

function errorText(resp: JsonObject): string | null {
  const e = resp.error;
  if (e === undefined || e === null) return null;
  if (typeof e === 'string') return e;
  if (isObject(e) && typeof e.message === 'string') return e.message;
  return JSON.stringify(e);
}

function chatCall(req: JsonObject, resp: JsonObject | null): Rec {
  const request: Rec = {
    messages: readArray(req.messages, 'request.messages').map((m, i) => {
      const mo = readObject(m, join('request.messages', i));
      return mo.role === 'developer' ? { ...mo, role: 'system' } : mo;
    }),
    sampling: sampling(req, req.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens'),
  };
  if (req.tools !== undefined && req.tools !== null) request.tools = req.tools;
  if (typeof req.model === 'string') request.model = req.model;
  if (resp === null) return { request, response: null, http_status: 500, error: 'no response' };
  const err = errorText(resp);
  if (err !== null) return { request, response: null, http_status: 500, error: err };
  const choices = readArray(resp.choices, 'response.choices');
  if (choices.length === 0) throw new RecordInvalid('response.choices', 'is empty');
  const ch = readObject(choices[0], 'response.choices[0]');
  const msg = readObject(ch.message, 'response.choices[0].message');
  const message: Rec = { ...msg, role: 'assistant' };
  // vLLM and DeepSeek name the separated thinking `reasoning_content`; some servers `reasoning`
  if (message.reasoning_content === undefined && typeof msg.reasoning === 'string')
    message.reasoning_content = msg.reasoning;
  delete message.reasoning;
  for (const k of [
    'prompt_token_ids',
    'generation_token_ids',
    'generation_log_probs',
    'refusal',
    'annotations',
    'audio',
  ])
    delete message[k];
  const call: Rec = {
    request,
    response: { message, finish_reason: typeof ch.finish_reason === 'string' ? ch.finish_reason : null },
  };
  if (typeof resp.model === 'string') call.engine = { engine: 'openai-compatible', model: resp.model };
  // ids as vLLM returns them (return_token_ids): prompt ids at the top (or per choice), the choice's token_ids
  const prompt = resp.prompt_token_ids ?? ch.prompt_token_ids ?? msg.prompt_token_ids;
  const response = ch.token_ids ?? msg.generation_token_ids;
  if (response !== undefined && response !== null) {
    const rp =
      ch.token_ids !== undefined
        ? 'response.choices[0].token_ids'
        : 'response.choices[0].message.generation_token_ids';
    const ids = readArray(response, rp);
    if (prompt === undefined || prompt === null)
      throw new RecordInvalid(
        'response.prompt_token_ids',
        `is missing but ${rp.split('.').pop()} is present`,
      );
    call.prompt_token_ids = readArray(prompt, 'response.prompt_token_ids');
    call.response_token_ids = ids;
    const lp = chatLogProbs(ch, msg);
    if (lp !== null) {
      if (lp.values.length !== ids.length)
        throw new RecordInvalid(
          lp.path,
          `has ${lp.values.length} values but ${rp.split('.').pop()} has ${ids.length}`,
        );
      call.response_log_probs = lp.values;
    }
    checkIds(call, 'response', { prompt: 'prompt_token_ids', response: 'choices[0].token_ids' });
  }
  return call;
}

/** A choice's log-probs: `logprobs.content[].logprob`, or the message's `generation_log_probs`. */
function chatLogProbs(ch: JsonObject, msg: JsonObject): { values: unknown[]; path: string } | null {
  if (Array.isArray(msg.generation_log_probs))
    return { values: msg.generation_log_probs, path: 'response.choices[0].message.generation_log_probs' };
  const l = ch.logprobs;
  if (!isObject(l) || !Array.isArray(l.content)) return null;
  const path = 'response.choices[0].logprobs.content';
  return {
    values: l.content.map((e, i) => {
      const eo = readObject(e, join(path, i));
      return eo.logprob;
    }),
    path,
  };
}

function responsesCall(req: JsonObject, resp: JsonObject | null): Rec {
  const tools = responsesTools(req.tools, 'request.tools');
  const context = inputMessages(req.input, req.instructions, 'request.input');
  const request: Rec = { messages: context, sampling: sampling(req, 'max_output_tokens') };
  if (tools) request.tools = tools;
  if (typeof req.model === 'string') request.model = req.model;
  if (resp === null) return { request, response: null, http_status: 500, error: 'no response' };
  const err = errorText(resp);
  if (err !== null) return { request, response: null, http_status: 500, error: err };
  const walker = new GenerationWalker('response.output', [], true);
  readArray(resp.output ?? [], 'response.output').forEach((it, i) => {
    walker.item(it, i);
  });
  walker.flush();
  if (walker.generations.length === 0) throw new RecordInvalid('response.output', 'has no output message');
  const gens = walker.generations.map((g) => g.gen);
  // one response is one generation: its items join into one assistant message
  const joined: Generation = gens.length === 1 ? gens[0] : mergeGenerations(gens);
  const incomplete = isObject(resp.incomplete_details) ? resp.incomplete_details.reason : null;
  const call = generationCall(request, joined, incomplete === 'max_output_tokens' ? 'length' : null);
  checkIds(call, joined.path, { prompt: 'prompt_token_ids', response: 'generation_token_ids' });
  if (typeof resp.model === 'string') call.engine = { engine: 'openai-compatible', model: resp.model };
  return call;
}

function mergeGenerations(gens: Generation[]): Generation {
  const withIds = gens.filter((g) => g.ids);
  if (withIds.length > 1)
    throw new RecordInvalid(
      withIds[1].path,
      'carries a second set of generation token ids in one response (a Responses log line is one generation)',
    );
  const message: Rec = { role: 'assistant', content: null };
  const content: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: Rec[] = [];
  for (const g of gens) {
    if (typeof g.message.content === 'string') content.push(g.message.content);
    if (typeof g.message.reasoning_content === 'string') reasoning.push(g.message.reasoning_content);
    if (Array.isArray(g.message.tool_calls)) toolCalls.push(...(g.message.tool_calls as Rec[]));
  }
  if (content.length) message.content = content.join('');
  if (reasoning.length) message.reasoning_content = reasoning.join('\n');
  if (toolCalls.length) message.tool_calls = toolCalls;
  const g: Generation = {
    message,
    finish: toolCalls.length ? 'tool_calls' : 'stop',
    path: (withIds[0] ?? gens[0]).path,
  };
  if (withIds[0]?.ids) g.ids = withIds[0].ids;
  return g;
}

// ---- the registry ------------------------------------------------------------------------------------

registerFramework({
  name: 'nemo-gym',
  text: 'a NeMo Gym rollout ({"responses_create_params", "response", "reward", …})',
  plural: 'NeMo Gym rollouts',
  source: 'NVIDIA-NeMo/Gym ng_collect_rollouts; ids from responses_api_models/vllm_model',
  detect: (o) => 'responses_create_params' in o || '_ng_task_index' in o,
  record: (o, ctx) => nemoGymRecord(o, ctx.lineNo),
  tokenize: 'template',
  tokenizedText:
    'the chat template over the rollout’s messages (the rendered prompt) and the response message',
});
registerFramework({
  name: 'skyrl-dump',
  text: 'a SkyRL dump line ({"input_prompt", "output_response", "score", …})',
  plural: 'SkyRL dump lines',
  source: 'NovaSky-AI/SkyRL skyrl_train/utils/trainer_utils.py:dump_per_dataset_eval_results',
  detect: (o) => 'input_prompt' in o && 'output_response' in o,
  record: skyrlRecord,
  tokenize: 'dumped',
  tokenizedText:
    'the dumped input_prompt and output_response text (decoded with special tokens), encoded as is',
});
registerFramework({
  name: 'openai-log',
  text: 'an OpenAI request log line ({"request", "response"})',
  plural: 'OpenAI request log lines',
  source: 'OpenAI Chat Completions and Responses API request and response bodies (vLLM: return_token_ids)',
  detect: (o) => 'request' in o && 'response' in o,
  record: (o, ctx) => openaiLogRecord(o, ctx.lineNo),
  tokenize: 'template',
  tokenizedText: 'the chat template over the logged messages (the rendered prompt) and the response message',
});
registerFramework({
  name: 'verl-dump',
  text: 'a verl rollout dump line ({"input", "output", "score", "step", …})',
  plural: 'verl rollout dump lines',
  source: 'verl 0.8.0 verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._dump_generations',
  detect: (o) => 'input' in o && 'output' in o && ('score' in o || 'step' in o),
  record: verlRecord,
  tokenize: 'dumped',
  tokenizedText:
    'the dumped input and output text, encoded as is; verl decodes with skip_special_tokens=True, so the chat template’s special tokens are missing from the prompt and the end-of-turn token from the response',
});

/** The registered formats' names. */
export const FRAMEWORK_KINDS: readonly FrameworkKind[] = listFrameworks().map((f) => f.name);
