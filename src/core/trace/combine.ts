/**
 * Several traces as one (a sample of several files, or `lab analyze a.jsonl b.jsonl`): rollouts in file order; a
 * rollout id already taken gets `@<end of the file name>` appended (two runs of the same harness reuse ids), and
 * each issue names its file. Counters add up.
 */
import type { TraceBatch } from './types';

export function combineTraces(parts: { name: string; trace: TraceBatch }[]): TraceBatch {
  const seen = new Set<string>();
  const rollouts: TraceBatch['rollouts'] = [];
  const issues: TraceBatch['issues'] = [];
  const counters: Record<string, number> = {};
  for (const { name, trace } of parts) {
    // the distinguishing end of the file name: coding-random.jsonl → random
    const base = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
    const stem =
      base
        .replace(/\.[^.]*$/, '')
        .split(/[-_]/)
        .pop() || base;
    for (const r of trace.rollouts) {
      let id = r.rolloutId;
      if (seen.has(id)) id = `${id}@${stem}`;
      for (let k = 2; seen.has(id); k++) id = `${r.rolloutId}@${stem}#${k}`;
      seen.add(id);
      rollouts.push(id === r.rolloutId ? r : { ...r, rolloutId: id });
    }
    for (const i of trace.issues) issues.push({ ...i, where: `${name} ${i.where}` });
    for (const [k, v] of Object.entries(trace.counters)) counters[k] = (counters[k] ?? 0) + v;
  }
  return { rollouts, issues, counters };
}
