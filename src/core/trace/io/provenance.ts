/**
 * Where a rollout's token ids come from. Ids a file recorded (the engine's) are used as recorded; a text-only
 * file's ids are made at import by a named tokenizer and the rollout is marked `metadata.retokenized`
 * (frameworks.ts). The mark travels with the rollout (JSONL writes metadata), and the retokenization view and
 * `lab analyze` say which numbers it affects.
 */
import type { Rollout } from '../types';
import { isObject } from '../validate';

/** `metadata.retokenized`: the ids of this rollout's calls were made from text at import. */
export interface RetokenizedMark {
  tokenizer: string;
  /** the format whose text was tokenized */
  from: string;
  /** what the text was, and what that means for the ids */
  text: string;
}

/** The mark of a rollout whose ids a tokenizer made at import, or null when its ids (if any) are recorded. */
export function retokenizedMark(r: Rollout): RetokenizedMark | null {
  const m = r.metadata.retokenized;
  if (!isObject(m) || typeof m.tokenizer !== 'string' || typeof m.from !== 'string') return null;
  return {
    tokenizer: m.tokenizer,
    from: m.from,
    text: typeof m.text === 'string' ? m.text : '',
  };
}

/**
 * Which numbers a rollout's import-time tokenization affects (the page's retokenization view and `lab analyze`
 * list these).
 */
export function retokenizedAffects(mark: RetokenizedMark): string[] {
  return [
    `token counts, positions and every per-token number (advantages, weights, masks) are over ${mark.tokenizer}'s ids of the text, not the ids the policy sampled`,
    'no rollout log-probs: importance ratios, clipping, rollout correction (TIS / rejection) and the engine–trainer mismatch cannot be computed from this file',
    'retokenization drift cannot be measured: both sides would be the same tokenizer over the same text',
    'merge across calls compares re-rendered prompts, so a merge failure may be the template, not the harness',
  ];
}
