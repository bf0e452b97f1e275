/**
 * A small JSONL serializer for the trace model: one rollout per line, field names as in core/trace/types.ts,
 * typed arrays as JSON number arrays, non-finite log-probs as null. Kept in one module so it can be swapped
 * for core's trace writer.
 */
import type { ModelCall, Rollout } from '../core/trace/types';

function callToJson(c: ModelCall): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c };
  if (c.promptTokenIds) out.promptTokenIds = Array.from(c.promptTokenIds);
  if (c.responseTokenIds) out.responseTokenIds = Array.from(c.responseTokenIds);
  if (c.responseLogProbs)
    out.responseLogProbs = Array.from(c.responseLogProbs, (x) => (Number.isFinite(x) ? x : null));
  return out;
}

export function rolloutToJsonLine(r: Rollout): string {
  return JSON.stringify({ ...r, calls: r.calls.map(callToJson) });
}

export function rolloutsToJsonl(rs: Rollout[]): string {
  return rs.map((r) => `${rolloutToJsonLine(r)}\n`).join('');
}

/** Reads what rolloutsToJsonl wrote (for round-trip checks); throws naming the line and field. */
export function parseRolloutsJsonl(text: string): Rollout[] {
  const out: Rollout[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let o: Omit<Rollout, 'calls'> & { calls: Record<string, unknown>[] };
    try {
      o = JSON.parse(line);
    } catch (e) {
      throw new Error(`trace line ${i + 1}: not JSON: ${(e as Error).message}`);
    }
    if (typeof o?.rolloutId !== 'string' || !Array.isArray(o.calls))
      throw new Error(`trace line ${i + 1}: needs a string rolloutId and a calls array`);
    const calls = o.calls.map((c, k) => {
      const call = { ...c } as unknown as ModelCall;
      const ids = (f: string) => {
        const v = c[f];
        if (v === undefined) return undefined;
        if (!Array.isArray(v) || v.some((x) => !Number.isInteger(x)))
          throw new Error(`trace line ${i + 1}: calls[${k}].${f} must be an array of integers`);
        return Int32Array.from(v as number[]);
      };
      call.promptTokenIds = ids('promptTokenIds');
      call.responseTokenIds = ids('responseTokenIds');
      const lp = c.responseLogProbs;
      if (lp !== undefined) {
        if (!Array.isArray(lp))
          throw new Error(`trace line ${i + 1}: calls[${k}].responseLogProbs must be an array`);
        call.responseLogProbs = Float32Array.from(lp as (number | null)[], (x) =>
          x === null ? Number.NaN : x,
        );
        const n = call.responseTokenIds?.length;
        if (n !== undefined && n !== lp.length)
          throw new Error(
            `trace line ${i + 1}: calls[${k}].responseTokenIds has ${n} ids but responseLogProbs has ${lp.length}`,
          );
      }
      for (const f of ['promptTokenIds', 'responseTokenIds', 'responseLogProbs'] as const)
        if (call[f] === undefined) delete call[f];
      return call;
    });
    out.push({ ...o, calls });
  });
  return out;
}
