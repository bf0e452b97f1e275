/**
 * The OpenAI chat-completions wire shapes that harnesses and the proxy exchange, with the vLLM extensions that
 * carry token ids (`return_token_ids`: top-level `prompt_token_ids`, `choices[0].token_ids`) and log-probs
 * (`logprobs: true`: `choices[0].logprobs.content[].logprob`), and the request validator the proxy uses.
 */
import type { ChatMessage, ToolCall, ToolDefinition } from '../core/trace/types';

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

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
