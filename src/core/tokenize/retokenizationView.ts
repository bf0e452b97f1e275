/**
 * The retokenization view of one call: engine ids (what the policy sampled) against the ids a text-only
 * trainer rebuilds (`retokenizeCall`), aligned run by run (Myers, align.ts), each differing hunk classified by
 * `compareTokens` as if it were the only difference (so every hunk gets its own cause, not just the first).
 * The page's retokenization view and `lab analyze` report these hunks. A call whose ids a tokenizer made at
 * import (a text-only file, `metadata.retokenized`) has nothing recorded to compare: the view says so and which
 * numbers that affects.
 */
import { type RetokenizedMark, retokenizedAffects, retokenizedMark } from '../trace/io/provenance';
import type { TraceBatch } from '../trace/types';
import { alignIds, type Segment } from './align';
import {
  compareTokens,
  type RetokenizationCause,
  type RetokenizationReport,
  retokenizeCall,
} from './retokenize';
import type { ChatTokenizer } from './tokenizer';

export interface RetokHunk extends Segment {
  cause: RetokenizationCause | null;
  engineText: string;
  retokenizedText: string;
}

export interface RetokCallView {
  rollout: number;
  call: number;
  /** prompt ++ response, each side */
  engine: Int32Array;
  enginePromptLength: number;
  retokenized: Int32Array;
  retokenizedPromptLength: number;
  /** core's report for the whole call (first difference and its cause) */
  report: RetokenizationReport | null;
  segments: RetokHunk[];
  /** why there is nothing to compare, when there is not */
  unavailable: string | null;
  /** the ids were made from text at import: by which tokenizer, and the numbers that affects */
  retokenizedAtImport?: RetokenizedMark & { affects: string[] };
}

function concat(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

const EMPTY = new Int32Array(0);
const CONTEXT = 256;

export function retokenizationView(
  tok: ChatTokenizer,
  trace: TraceBatch,
  rollout: number,
  call: number,
): RetokCallView {
  const base = {
    rollout,
    call,
    engine: EMPTY,
    enginePromptLength: 0,
    retokenized: EMPTY,
    retokenizedPromptLength: 0,
    report: null,
    segments: [],
  };
  const c = trace.rollouts[rollout]?.calls[call];
  if (!c) return { ...base, unavailable: `rollout ${rollout} has no call ${call}` };
  const mark = retokenizedMark(trace.rollouts[rollout]);
  if (mark)
    return {
      ...base,
      unavailable: `the file recorded no token ids: ${mark.tokenizer} made them at import from ${mark.text}, so there is nothing the engine sampled to compare with`,
      retokenizedAtImport: { ...mark, affects: retokenizedAffects(mark) },
    };
  if (!c.promptTokenIds || !c.responseTokenIds)
    return { ...base, unavailable: 'the engine returned no token ids for this call' };
  const re = retokenizeCall(tok, c);
  if (!re) return { ...base, unavailable: 'the call has no messages or no response message to render' };
  const engineIds = { promptIds: c.promptTokenIds, responseIds: c.responseTokenIds };
  const e = concat(engineIds.promptIds, engineIds.responseIds);
  const t = concat(re.promptIds, re.responseIds);
  const report = compareTokens(tok, engineIds, re);
  const segments: RetokHunk[] = alignIds(e, t).map((s) => {
    if (s.equal) return { ...s, cause: null, engineText: '', retokenizedText: '' };
    // The hunk as the only difference: the same engine context before it on both sides (bounded, so a call
    // with many hunks stays linear; 256 tokens reach back to an open <tool_call> in practice).
    const from = Math.max(0, s.a0 - CONTEXT);
    const r = compareTokens(
      tok,
      { promptIds: e.subarray(from, s.a1), responseIds: EMPTY },
      { promptIds: concat(e.subarray(from, s.a0), t.subarray(s.b0, s.b1)), responseIds: EMPTY },
    );
    return {
      ...s,
      cause: r.cause,
      engineText: tok.decode(e.subarray(s.a0, s.a1)),
      retokenizedText: tok.decode(t.subarray(s.b0, s.b1)),
    };
  });
  return {
    rollout,
    call,
    engine: e,
    enginePromptLength: engineIds.promptIds.length,
    retokenized: t,
    retokenizedPromptLength: re.promptIds.length,
    report,
    segments,
    unavailable: null,
  };
}
