/**
 * Rollout ids a file gives twice: the records are different rollouts (two runs appended to one file), so each
 * later one is renamed `<id>#2`, `#3`, … and the rename reported, rather than letting selection by id mix them.
 */
import type { Rollout, TraceIssue } from './types';

export function renameDuplicateIds(
  rollouts: Rollout[],
  where = 'trace',
): { rollouts: Rollout[]; issues: TraceIssue[]; renamed: number } {
  const seen = new Set<string>();
  for (const r of rollouts) seen.add(r.rolloutId);
  if (seen.size === rollouts.length) return { rollouts, issues: [], renamed: 0 };
  seen.clear();
  const issues: TraceIssue[] = [];
  const out = rollouts.map((r, i) => {
    if (!seen.has(r.rolloutId)) {
      seen.add(r.rolloutId);
      return r;
    }
    let k = 2;
    while (seen.has(`${r.rolloutId}#${k}`)) k++;
    const id = `${r.rolloutId}#${k}`;
    seen.add(id);
    issues.push({
      where,
      field: `rollouts[${i}].rollout_id`,
      message: `"${r.rolloutId}" is used by an earlier rollout too; this one is shown as "${id}"`,
      severity: 'warning',
    });
    return { ...r, rolloutId: id };
  });
  return { rollouts: out, issues, renamed: issues.length };
}
