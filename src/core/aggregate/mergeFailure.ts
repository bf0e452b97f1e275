/**
 * Why a trajectory merge failed. Upstream v1.0 labels every failure `others_mismatch`; v0.3 told template
 * mismatches (special tokens differ) from retokenization mismatches (ids differ but the decoded text is a
 * prefix). Here every failure gets one class and the place it happened:
 *
 * - `retokenization`: the decoded text of the running context is a prefix of the new prompt's text, only the
 *   ids differ (BPE re-merge, e.g. sampled " Hel"+"lo" re-encoded as " Hello").
 * - `template`: the chat template re-rendered the previous turn: the first differing token (on either side) is
 *   an added/special token (Qwen3 drops `<think>…</think>` of earlier turns), or the difference starts inside
 *   the previous response with different text (tool-call JSON re-rendered, whitespace normalised).
 * - `truncation_or_summarization`: the harness rewrote history: the new prompt differs inside the previous
 *   prompt, or is a strict prefix of the running context (context cut).
 * - `other`: anything else (only reachable without a tokenizer, where text cannot be compared).
 */
import type { ChatTokenizer } from '../tokenize/tokenizer';

export type MergeFailureKind = 'template' | 'retokenization' | 'truncation_or_summarization' | 'other';

export interface MergeFailure {
  /** index into the rollouts array given to the builder */
  rolloutIndex: number;
  rolloutId: string;
  dataId: string;
  /** index (in rollout.calls) of the call whose prompt did not extend the context */
  callIndex: number;
  /** index (in rollout.calls) of the previous call, whose prompt + response is the context */
  prevCallIndex: number;
  kind: MergeFailureKind;
  /** first position where the new prompt and the context (prev prompt + prev response) differ */
  firstDiff: number;
  contextLength: number;
  prevPromptLength: number;
  promptLength: number;
  /** decoded text (ids joined by spaces without a tokenizer) around firstDiff, on each side */
  contextSnippet: string;
  promptSnippet: string;
  /**
   * the ids of the context and of the new prompt from position `windowStart` on (a few before firstDiff, more
   * after), so a view can align the two sides by position and mark the first differing token
   */
  windowStart: number;
  contextWindow: number[];
  promptWindow: number[];
}

const EMPTY = new Int32Array(0);

/** Tokens of context shown on each side of the first difference. */
const SNIPPET_BEFORE = 8;
const SNIPPET_AFTER = 24;

/** First index where `prompt` and `ctxA ++ ctxB` differ (min of the lengths when one is a prefix). */
export function firstDifference(prompt: Int32Array, ctxA: Int32Array, ctxB: Int32Array): number {
  const na = ctxA.length;
  const n = Math.min(prompt.length, na + ctxB.length);
  let i = 0;
  const m = Math.min(n, na);
  while (i < m && prompt[i] === ctxA[i]) i++;
  if (i < m) return i;
  while (i < n && prompt[i] === ctxB[i - na]) i++;
  return i;
}

function concat(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** The ids of `a ++ b` around `at`, decoded (the text a view shows next to the window's ids). */
function decodedSnippet(a: Int32Array, b: Int32Array, at: number, tok: ChatTokenizer): string {
  const from = Math.max(0, at - SNIPPET_BEFORE);
  const to = Math.min(a.length + b.length, at + SNIPPET_AFTER);
  return tok.decode(b.length === 0 ? a.subarray(from, to) : concat(a, b).subarray(from, to));
}

/** Positions [from, to) of `a ++ b` as numbers (the two parts are read in place, not joined). */
function windowIds(a: Int32Array, b: Int32Array, from: number, to: number): number[] {
  const na = a.length;
  const end = Math.min(to, na + b.length);
  const out: number[] = [];
  for (let i = from; i < end; i++) out.push(i < na ? a[i] : b[i - na]);
  return out;
}

function isAddedToken(tok: ChatTokenizer, id: number | undefined): boolean {
  if (id === undefined) return false;
  if (tok.specialIds.has(id)) return true;
  const s = tok.tokenString(id);
  return s !== undefined && tok.addedTokens.get(s) === id;
}

export function classifyMergeFailure(
  prompt: Int32Array,
  prevPrompt: Int32Array,
  prevResponse: Int32Array,
  tok: ChatTokenizer | undefined,
): Pick<
  MergeFailure,
  'kind' | 'firstDiff' | 'contextSnippet' | 'promptSnippet' | 'windowStart' | 'contextWindow' | 'promptWindow'
> {
  const firstDiff = firstDifference(prompt, prevPrompt, prevResponse);
  const ctxLength = prevPrompt.length + prevResponse.length;
  const windowStart = Math.max(0, firstDiff - SNIPPET_BEFORE);
  const contextWindow = windowIds(prevPrompt, prevResponse, windowStart, firstDiff + SNIPPET_AFTER);
  const promptWindow = windowIds(prompt, EMPTY, windowStart, firstDiff + SNIPPET_AFTER);
  // Without a tokenizer a snippet is its window's ids joined by spaces (the window spans the same positions).
  const out = {
    firstDiff,
    contextSnippet: tok ? decodedSnippet(prevPrompt, prevResponse, firstDiff, tok) : contextWindow.join(' '),
    promptSnippet: tok ? decodedSnippet(prompt, EMPTY, firstDiff, tok) : promptWindow.join(' '),
    windowStart,
    contextWindow,
    promptWindow,
  };
  const isCut = firstDiff === prompt.length && prompt.length < ctxLength;
  if (tok) {
    const ctx = concat(prevPrompt, prevResponse);
    // Compare text from a little before the difference, so a re-merged token that straddles it is included.
    const from = Math.max(0, firstDiff - 4);
    const ctxText = tok.decode(ctx.subarray(from));
    const promptText = tok.decode(prompt.subarray(from));
    if (!isCut && promptText.startsWith(ctxText)) return { kind: 'retokenization', ...out };
    if (isAddedToken(tok, ctx[firstDiff]) || isAddedToken(tok, prompt[firstDiff]))
      return { kind: 'template', ...out };
    if (isCut || firstDiff < prevPrompt.length) return { kind: 'truncation_or_summarization', ...out };
    return { kind: 'template', ...out };
  }
  if (isCut || firstDiff < prevPrompt.length) return { kind: 'truncation_or_summarization', ...out };
  return { kind: 'other', ...out };
}
