/**
 * The OpenAI chat-completions wire shapes that harnesses and the proxy exchange, with the vLLM extensions that
 * carry token ids (`return_token_ids`: top-level `prompt_token_ids`, `choices[0].token_ids`) and log-probs
 * (`logprobs: true`: `choices[0].logprobs.content[].logprob`), and the request validator the proxy uses.
 */
import type { ChatMessage, ToolCall, ToolDefinition } from '../core/trace/types';
import { isRecord } from '../core/wire';

export interface ChatCompletionRequest {
  model?: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  stop?: string[];
  seed?: number;
  stream?: boolean;
  logprobs?: boolean;
  return_token_ids?: boolean;
}

export interface ChatCompletionResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  prompt_token_ids?: number[] | null;
  choices: {
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };
    finish_reason: string | null;
    token_ids?: number[] | null;
    logprobs?: { content: { token: string; logprob: number }[] } | null;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** A request body that failed validation: `param` names the field, as OpenAI's error body does. */
export class RequestError extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}

function optNumber(
  body: Record<string, unknown>,
  key: string,
  lo: number,
  hi: number,
  int = false,
): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (int && !Number.isInteger(v)))
    throw new RequestError(
      `'${key}' must be ${int ? 'an integer' : 'a number'} in [${lo}, ${hi}], got ${JSON.stringify(v)}`,
      key,
    );
  return v;
}

function validateToolCall(v: unknown, where: string): ToolCall {
  if (!isRecord(v)) throw new RequestError(`'${where}' must be an object`, where);
  if (typeof v.id !== 'string') throw new RequestError(`'${where}.id' must be a string`, `${where}.id`);
  if (v.type !== 'function') throw new RequestError(`'${where}.type' must be 'function'`, `${where}.type`);
  const f = v.function;
  if (!isRecord(f) || typeof f.name !== 'string' || typeof f.arguments !== 'string')
    throw new RequestError(
      `'${where}.function' must be {name: string, arguments: string}`,
      `${where}.function`,
    );
  return { id: v.id, type: 'function', function: { name: f.name, arguments: f.arguments } };
}

function validateMessage(v: unknown, i: number): ChatMessage {
  const where = `messages[${i}]`;
  if (!isRecord(v)) throw new RequestError(`'${where}' must be an object`, where);
  const role = v.role;
  if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
    throw new RequestError(
      `'${where}.role' must be one of system, user, assistant, tool; got ${JSON.stringify(role)}`,
      `${where}.role`,
    );
  const content = textContent(v.content, `${where}.content`);
  if ((content === null || content === undefined) && !(role === 'assistant' && Array.isArray(v.tool_calls)))
    throw new RequestError(`'${where}.content' is required for role '${role}'`, `${where}.content`);
  const msg: ChatMessage = { role, content: (content as string | null | undefined) ?? null };
  // OpenAI clients send null for absent optional fields; treat it as absent.
  if (v.name != null) {
    if (typeof v.name !== 'string')
      throw new RequestError(`'${where}.name' must be a string`, `${where}.name`);
    msg.name = v.name;
  }
  if (v.tool_calls != null) {
    if (role !== 'assistant')
      throw new RequestError(
        `'${where}.tool_calls' is only allowed on assistant messages`,
        `${where}.tool_calls`,
      );
    if (!Array.isArray(v.tool_calls))
      throw new RequestError(`'${where}.tool_calls' must be an array`, `${where}.tool_calls`);
    msg.tool_calls = v.tool_calls.map((tc, j) => validateToolCall(tc, `${where}.tool_calls[${j}]`));
  }
  if (role === 'tool') {
    if (typeof v.tool_call_id !== 'string')
      throw new RequestError(`'${where}.tool_call_id' is required for role 'tool'`, `${where}.tool_call_id`);
    msg.tool_call_id = v.tool_call_id;
  }
  if (v.reasoning_content !== undefined && v.reasoning_content !== null) {
    if (typeof v.reasoning_content !== 'string')
      throw new RequestError(`'${where}.reasoning_content' must be a string`, `${where}.reasoning_content`);
    msg.reasoning_content = v.reasoning_content;
  }
  return msg;
}

function validateTool(v: unknown, i: number): ToolDefinition {
  const where = `tools[${i}]`;
  if (!isRecord(v) || v.type !== 'function')
    throw new RequestError(`'${where}' must be {type: 'function', function: {...}}`, where);
  const f = v.function;
  if (!isRecord(f) || typeof f.name !== 'string' || f.name === '')
    throw new RequestError(`'${where}.function.name' must be a non-empty string`, `${where}.function.name`);
  if (f.description !== undefined && typeof f.description !== 'string')
    throw new RequestError(
      `'${where}.function.description' must be a string`,
      `${where}.function.description`,
    );
  if (f.parameters !== undefined && !isRecord(f.parameters))
    throw new RequestError(
      `'${where}.function.parameters' must be an object`,
      `${where}.function.parameters`,
    );
  const fn: ToolDefinition['function'] = { name: f.name };
  if (f.description !== undefined) fn.description = f.description as string;
  if (f.parameters !== undefined) fn.parameters = f.parameters as Record<string, unknown>;
  return { type: 'function', function: fn };
}

/** Validates a chat-completions body; throws RequestError naming the first bad field. */
/**
 * Message content as text: a string, null/absent, or the OpenAI list form with `{type: 'text', text}` parts
 * (joined, as chat templates render them); any other part type is refused by name.
 */
function textContent(v: unknown, where: string): string | null | undefined {
  if (v === null || v === undefined || typeof v === 'string') return v;
  if (!Array.isArray(v))
    throw new RequestError(`'${where}' must be a string, null or a list of text parts`, where);
  return v
    .map((part, i) => {
      if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string')
        throw new RequestError(
          `'${where}[${i}]' must be a text part {"type": "text", "text": …}` +
            (isRecord(part) && typeof part.type === 'string'
              ? `; '${part.type}' parts are not supported`
              : ''),
          `${where}[${i}]`,
        );
      return part.text;
    })
    .join('');
}

export function validateChatRequest(body: unknown): ChatCompletionRequest {
  if (!isRecord(body)) throw new RequestError('request body must be a JSON object', 'body');
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new RequestError("'messages' must be a non-empty array", 'messages');
  const req: ChatCompletionRequest = { messages: body.messages.map(validateMessage) };
  if (body.model != null) {
    if (typeof body.model !== 'string') throw new RequestError("'model' must be a string", 'model');
    req.model = body.model;
  }
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw new RequestError("'tools' must be an array", 'tools');
    req.tools = body.tools.map(validateTool);
  }
  // One choice per call: the trace model records one response per request.
  if (body.n != null && body.n !== 1)
    throw new RequestError(`'n' must be 1 (one choice per call), got ${JSON.stringify(body.n)}`, 'n');
  req.temperature = optNumber(body, 'temperature', 0, 2);
  req.top_p = optNumber(body, 'top_p', 0, 1);
  req.max_tokens = optNumber(body, 'max_tokens', 1, 1 << 20, true);
  req.max_completion_tokens = optNumber(body, 'max_completion_tokens', 1, 1 << 20, true);
  req.seed = optNumber(body, 'seed', -(2 ** 53), 2 ** 53, true);
  if (body.stop !== undefined && body.stop !== null) {
    const stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string' || s === ''))
      throw new RequestError("'stop' must be a non-empty string or an array of them", 'stop');
    req.stop = stop as string[];
  }
  for (const key of ['stream', 'logprobs', 'return_token_ids'] as const) {
    const v = body[key];
    if (v !== undefined && v !== null && typeof v !== 'boolean')
      throw new RequestError(`'${key}' must be a boolean`, key);
    if (typeof v === 'boolean') req[key] = v;
  }
  return req;
}

/** A chat-completions answer that is not a valid answer: `field` names what is wrong. */
export class ResponseError extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${field} ${detail}`);
  }
}

export interface ResponseChecks {
  /**
   * The answer must carry vLLM's token ids (`prompt_token_ids`, `choices[0].token_ids`): what a remote engine
   * asked for `return_token_ids` has to return, since the trace records them.
   */
  requireTokenIds?: boolean;
  /** token ids must be below this (the vocabulary of the tokenizer the trace is read with) */
  vocabSize?: number;
  /** named in errors about the vocabulary */
  vocabName?: string;
}

function kindOf(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)})`;
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function tokenIds(v: unknown, field: string, checks: ResponseChecks): number[] {
  if (!Array.isArray(v)) throw new ResponseError(field, `must be a list of token ids, got ${kindOf(v)}`);
  const max = checks.vocabSize ?? 2 ** 31;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0)
      throw new ResponseError(`${field}[${i}]`, `must be a token id (integer ≥ 0), got ${kindOf(x)}`);
    if (x >= max)
      throw new ResponseError(
        `${field}[${i}]`,
        `is ${x}, outside the vocabulary${checks.vocabName ? ` of ${checks.vocabName}` : ''} (${max} tokens)`,
      );
  }
  return v as number[];
}

function responseToolCall(v: unknown, where: string): ToolCall {
  if (!isRecord(v)) throw new ResponseError(where, `must be an object, got ${kindOf(v)}`);
  if (typeof v.id !== 'string')
    throw new ResponseError(`${where}.id`, `must be a string, got ${kindOf(v.id)}`);
  if (v.type !== undefined && v.type !== 'function')
    throw new ResponseError(`${where}.type`, `must be 'function', got ${kindOf(v.type)}`);
  const f = v.function;
  if (!isRecord(f)) throw new ResponseError(`${where}.function`, `must be an object, got ${kindOf(f)}`);
  if (typeof f.name !== 'string' || f.name === '')
    throw new ResponseError(`${where}.function.name`, `must be a non-empty string, got ${kindOf(f.name)}`);
  if (typeof f.arguments !== 'string')
    throw new ResponseError(`${where}.function.arguments`, `must be a string, got ${kindOf(f.arguments)}`);
  return { id: v.id, type: 'function', function: { name: f.name, arguments: f.arguments } };
}

/**
 * Checks a chat-completions answer (HTTP 200 body) field by field, for the harness client and the remote
 * engine alike, and returns it in our shape. Every field either side uses is checked: one choice with an
 * assistant message whose content is a string or null and whose tool calls have a function; a finish reason;
 * token ids (integers in the vocabulary; required with `requireTokenIds`); per-token log-probs, one number
 * per response token id.
 */
export function validateChatResponse(body: unknown, checks: ResponseChecks = {}): ChatCompletionResponse {
  if (body === null || body === undefined || body === '')
    throw new ResponseError('body', 'is empty; expected a chat.completion JSON object');
  if (typeof body === 'string')
    throw new ResponseError('body', `is not JSON: ${JSON.stringify(body.slice(0, 120))}`);
  if (!isRecord(body)) throw new ResponseError('body', `must be a JSON object, got ${kindOf(body)}`);
  if (isRecord(body.error))
    throw new ResponseError(
      'error',
      `the server answered with an error: ${String(body.error.message ?? '')}`,
    );
  if (!Array.isArray(body.choices))
    throw new ResponseError('choices', `must be a list, got ${kindOf(body.choices)}`);
  if (body.choices.length === 0) throw new ResponseError('choices', 'is empty: the answer has no choice');
  const c0 = body.choices[0];
  const cp = 'choices[0]';
  if (!isRecord(c0)) throw new ResponseError(cp, `must be an object, got ${kindOf(c0)}`);
  const m = c0.message;
  if (!isRecord(m)) throw new ResponseError(`${cp}.message`, `must be an object, got ${kindOf(m)}`);
  if (m.role !== undefined && m.role !== 'assistant')
    throw new ResponseError(`${cp}.message.role`, `must be 'assistant', got ${kindOf(m.role)}`);
  const content = m.content === undefined ? null : m.content;
  if (content !== null && typeof content !== 'string')
    throw new ResponseError(`${cp}.message.content`, `must be a string or null, got ${kindOf(content)}`);
  let toolCalls: ToolCall[] | undefined;
  if (m.tool_calls !== undefined && m.tool_calls !== null) {
    if (!Array.isArray(m.tool_calls))
      throw new ResponseError(`${cp}.message.tool_calls`, `must be a list, got ${kindOf(m.tool_calls)}`);
    toolCalls = m.tool_calls.map((t, i) => responseToolCall(t, `${cp}.message.tool_calls[${i}]`));
  }
  const finish = c0.finish_reason === undefined ? null : c0.finish_reason;
  if (finish !== null && typeof finish !== 'string')
    throw new ResponseError(`${cp}.finish_reason`, `must be a string or null, got ${kindOf(finish)}`);
  const hasIds = c0.token_ids !== undefined && c0.token_ids !== null;
  if (checks.requireTokenIds && !hasIds)
    throw new ResponseError(
      `${cp}.token_ids`,
      `is ${kindOf(c0.token_ids)}: the engine did not return the response's token ids; it must honour return_token_ids (vLLM's OpenAI server does)`,
    );
  const ids = hasIds ? tokenIds(c0.token_ids, `${cp}.token_ids`, checks) : null;
  let promptRaw = body.prompt_token_ids;
  let promptField = 'prompt_token_ids';
  if ((promptRaw === undefined || promptRaw === null) && c0.prompt_token_ids != null) {
    promptRaw = c0.prompt_token_ids;
    promptField = `${cp}.prompt_token_ids`;
  }
  if (checks.requireTokenIds && (promptRaw === undefined || promptRaw === null))
    throw new ResponseError(
      'prompt_token_ids',
      `is ${kindOf(promptRaw)}: the engine did not return the prompt's token ids; it must honour return_token_ids`,
    );
  const prompt =
    promptRaw === undefined || promptRaw === null ? null : tokenIds(promptRaw, promptField, checks);
  let logprobs: ChatCompletionResponse['choices'][0]['logprobs'] = null;
  if (c0.logprobs !== undefined && c0.logprobs !== null) {
    const lp = c0.logprobs;
    const lpp = `${cp}.logprobs`;
    if (!isRecord(lp)) throw new ResponseError(lpp, `must be an object, got ${kindOf(lp)}`);
    if (!Array.isArray(lp.content))
      throw new ResponseError(`${lpp}.content`, `must be a list, got ${kindOf(lp.content)}`);
    const items = lp.content.map((it, i) => {
      const ip = `${lpp}.content[${i}]`;
      if (!isRecord(it)) throw new ResponseError(ip, `must be an object, got ${kindOf(it)}`);
      if (typeof it.logprob !== 'number' || Number.isNaN(it.logprob))
        throw new ResponseError(`${ip}.logprob`, `must be a number, got ${kindOf(it.logprob)}`);
      return { token: typeof it.token === 'string' ? it.token : '', logprob: it.logprob };
    });
    if (ids !== null && items.length !== ids.length)
      throw new ResponseError(
        `${lpp}.content`,
        `has ${items.length} entries but ${cp}.token_ids has ${ids.length}: log-probs must be one per response token`,
      );
    logprobs = { content: items };
  }
  const message: ChatCompletionResponse['choices'][0]['message'] = { role: 'assistant', content };
  if (toolCalls?.length) message.tool_calls = toolCalls;
  const usage = isRecord(body.usage) ? body.usage : {};
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    id: typeof body.id === 'string' ? body.id : '',
    object: 'chat.completion',
    created: num(body.created),
    model: typeof body.model === 'string' ? body.model : '',
    prompt_token_ids: prompt,
    choices: [{ index: 0, message, finish_reason: finish, token_ids: ids, logprobs }],
    usage: {
      prompt_tokens: num(usage.prompt_tokens),
      completion_tokens: num(usage.completion_tokens),
      total_tokens: num(usage.total_tokens),
    },
  };
}
