/**
 * Traces as `lab rollout` writes them today (`src/harness/traceJsonl.ts`: the trace model's own camelCase field
 * names), which core's format detection does not know. Each line is read with the harness's reader, then passed
 * through core's JSONL writer and reader, so it gets core's full validation and per-line issues; a bad line is
 * reported and skipped, the rest kept.
 */
import { parseJsonlTrace, toJsonlTrace } from '../../core/trace/io';
import type { Rollout, TraceBatch, TraceIssue } from '../../core/trace/types';
import { parseRolloutsJsonl } from '../../harness/traceJsonl';

/** Whether the first non-blank line is a harness rollout record ({"rolloutId", "calls", …}). */
export function looksLikeHarnessJsonl(text: string): boolean {
  const m = /^\s*(\{.*)$/m.exec(text);
  if (!m) return false;
  try {
    const o = JSON.parse(m[1]);
    return typeof o === 'object' && o !== null && typeof o.rolloutId === 'string' && Array.isArray(o.calls);
  } catch {
    return false;
  }
}

export function parseHarnessJsonl(
  text: string,
  onProgress: (done: number, total: number) => void,
): TraceBatch {
  const rollouts: Rollout[] = [];
  const issues: TraceIssue[] = [];
  const counters: Record<string, number> = {};
  let start = 0;
  let lineNo = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNo++;
    const line = text.slice(start, end);
    start = end + 1;
    if (line.trim() === '') continue;
    const where = `line ${lineNo}`;
    let read: Rollout[];
    try {
      read = parseRolloutsJsonl(line);
    } catch (e) {
      issues.push({ where, message: (e as Error).message.replace(/^trace line 1: /, ''), severity: 'error' });
      continue;
    }
    const checked = parseJsonlTrace(toJsonlTrace(read));
    rollouts.push(...checked.rollouts);
    for (const i of checked.issues) issues.push({ ...i, where });
    for (const [k, v] of Object.entries(checked.counters)) counters[k] = (counters[k] ?? 0) + v;
    onProgress(start, text.length);
  }
  onProgress(text.length, text.length);
  counters.records_skipped = issues.filter((i) => i.severity !== 'warning').length;
  return { rollouts, issues, counters };
}
