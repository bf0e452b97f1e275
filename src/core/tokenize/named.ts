/**
 * The vocabulary a trace's token ids belong to, as its rollouts name it in `metadata.tokenizer` (the training
 * loop and the agl-cpu trainer record `policy`): the page's worker and `lab analyze` both read a trace with it.
 * A trace that names none, or names several, is read with Qwen3 and the reader says it guessed.
 */
export type TraceTokenizer = 'policy' | 'qwen3';

export function tokenizerNamedBy(trace: { rollouts: { metadata: Record<string, unknown> }[] }): {
  name: TraceTokenizer;
  /** no rollout named one, or they disagree: the name is a guess */
  guessed: boolean;
  /** the distinct names the rollouts give (undefined ones left out) */
  named: string[];
} {
  const named = [
    ...new Set(
      trace.rollouts.map((r) => r.metadata.tokenizer).filter((n): n is string => typeof n === 'string'),
    ),
  ];
  const all = trace.rollouts.length > 0 && trace.rollouts.every((r) => r.metadata.tokenizer === 'policy');
  if (all) return { name: 'policy', guessed: false, named };
  const allQwen = trace.rollouts.length > 0 && trace.rollouts.every((r) => r.metadata.tokenizer === 'qwen3');
  return { name: 'qwen3', guessed: !allQwen, named };
}
