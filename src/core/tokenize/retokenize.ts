/**
 * Token sources for a recorded call, and what retokenization changes.
 *
 * - `engine`: the ids the inference engine returned (vLLM `return_token_ids`): what the policy sampled.
 * - `retokenize`: what a text-only trainer would rebuild: the chat template over the request messages with
 *   add_generation_prompt=true gives the prompt ids; the response ids are the encoding of the assistant turn
 *   as the template renders it after that prompt (up to and including the end-of-turn token).
 *
 * `retokenizationReport` compares the two per call and names the first difference and its cause.
 */
import type { ChatMessage, ModelCall } from '../trace/types';
import type { ChatTokenizer } from './tokenizer';

export type TokenSource = 'engine' | 'retokenize';

export interface CallTokens {
  promptIds: Int32Array;
  responseIds: Int32Array;
}

export type RetokenizationCause =
  | 'bpe_remerge'
  | 'template_rerender'
  | 'tool_call_rerender'
  | 'special_tokens'
  | 'whitespace';

export interface RetokenizationReport {
  equal: boolean;
  /** first differing position in prompt ++ response (engine numbering); -1 when equal */
  firstDiff: number;
  /** which part the first difference falls in */
  part: 'prompt' | 'response' | null;
  /** the differing region, decoded, on each side (common prefix and suffix removed) */
  engineSpan: string;
  retokenizedSpan: string;
  cause: RetokenizationCause | null;
  engineLength: number;
  retokenizedLength: number;
}

/** The assistant message of a call's response, as the template should render it. */
function responseMessage(call: ModelCall): ChatMessage | null {
  const m = call.response?.message;
  if (!m) return null;
  return { ...m, role: 'assistant' };
}

/** Renders and encodes a call's messages; null when the call has no messages or no response message. */
export function retokenizeCall(tok: ChatTokenizer, call: ModelCall): CallTokens | null {
  const messages = call.request.messages;
  const resp = responseMessage(call);
  if (messages.length === 0 || !resp) return null;
  const tools = call.request.tools;
  const promptText = tok.renderChat(messages, { tools, addGenerationPrompt: true });
  const fullText = tok.renderChat([...messages, resp], { tools, addGenerationPrompt: false });
  const eos = tok.eosToken;
  let respText: string;
  if (fullText.startsWith(promptText)) {
    respText = fullText.slice(promptText.length);
    // The template closes the turn with eos and a newline; the engine's ids end at eos (finish 'stop'), or
    // before it (finish 'length').
    const end = eos ? respText.lastIndexOf(eos) : -1;
    if (end >= 0)
      respText = respText.slice(0, call.response?.finishReason === 'length' ? end : end + eos.length);
  } else {
    // The template renders the final assistant turn unlike a generation prompt: fall back to the content.
    respText = (resp.content ?? '') + (call.response?.finishReason === 'length' ? '' : eos);
  }
  return { promptIds: tok.encode(promptText), responseIds: tok.encode(respText) };
}

/** The ids of a call from the chosen source; null when that source has none for this call. */
export function tokenizeCall(
  tok: ChatTokenizer | undefined,
  call: ModelCall,
  source: TokenSource,
): CallTokens | null {
  if (source === 'engine') {
    if (!call.promptTokenIds || !call.responseTokenIds) return null;
    return { promptIds: call.promptTokenIds, responseIds: call.responseTokenIds };
  }
  if (!tok) throw new Error("token source 'retokenize' needs a tokenizer");
  return retokenizeCall(tok, call);
}

function concat(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

const THINK = /<\/?think>/;
const TOOL_CALL = /<\/?tool_call>/;

/** Compares the engine ids of a call with its retokenization. Null when either side is unavailable. */
export function retokenizationReport(tok: ChatTokenizer, call: ModelCall): RetokenizationReport | null {
  const engine = tokenizeCall(tok, call, 'engine');
  const re = retokenizeCall(tok, call);
  if (!engine || !re) return null;
  return compareTokens(tok, engine, re);
}

/** Compares two tokenizations of the same call (engine vs retokenized). */
export function compareTokens(tok: ChatTokenizer, engine: CallTokens, re: CallTokens): RetokenizationReport {
  const e = concat(engine.promptIds, engine.responseIds);
  const t = concat(re.promptIds, re.responseIds);
  const n = Math.min(e.length, t.length);
  let i = 0;
  while (i < n && e[i] === t[i]) i++;
  const base = { engineLength: e.length, retokenizedLength: t.length };
  if (i === e.length && i === t.length)
    return {
      equal: true,
      firstDiff: -1,
      part: null,
      engineSpan: '',
      retokenizedSpan: '',
      cause: null,
      ...base,
    };
  let s = 0;
  while (s < n - i && e[e.length - 1 - s] === t[t.length - 1 - s]) s++;
  const eRegion = e.subarray(i, e.length - s);
  const tRegion = t.subarray(i, t.length - s);
  const engineSpan = tok.decode(eRegion);
  const retokenizedSpan = tok.decode(tRegion);
  let cause: RetokenizationCause;
  if (tok.decode(e) === tok.decode(t)) cause = 'bpe_remerge';
  else if (THINK.test(engineSpan) || THINK.test(retokenizedSpan)) cause = 'template_rerender';
  else if (TOOL_CALL.test(engineSpan) || TOOL_CALL.test(retokenizedSpan) || insideToolCall(tok, e, i))
    cause = 'tool_call_rerender';
  else if (engineSpan.replace(/\s+/g, '') === retokenizedSpan.replace(/\s+/g, '')) cause = 'whitespace';
  else if (hasSpecial(tok, eRegion) || hasSpecial(tok, tRegion)) cause = 'special_tokens';
  else cause = 'template_rerender';
  return {
    equal: false,
    firstDiff: i,
    part: i < engine.promptIds.length ? 'prompt' : 'response',
    engineSpan,
    retokenizedSpan,
    cause,
    ...base,
  };
}

function hasSpecial(tok: ChatTokenizer, ids: Int32Array): boolean {
  for (let k = 0; k < ids.length; k++) if (tok.specialIds.has(ids[k])) return true;
  return false;
}

/** Whether position `at` of `ids` lies inside an open <tool_call> block. */
function insideToolCall(tok: ChatTokenizer, ids: Int32Array, at: number): boolean {
  const open = tok.addedTokens.get('<tool_call>');
  const close = tok.addedTokens.get('</tool_call>');
  if (open === undefined) return false;
  for (let k = at - 1; k >= 0; k--) {
    if (ids[k] === close) return false;
    if (ids[k] === open) return true;
  }
  return false;
}
