/**
 * The import front door: `detectFormat` looks at a text and names its format; `parseTraceText` parses it into
 * a TraceBatch. Formats (docs/TRACE_FORMAT.md):
 * - `jsonl`: our trace format, one rollout per line;
 * - `agl-events`: Agent Lightning gateway events, a JSON list (GET /api/rollouts/{rid}/events, full or
 *   format=triplet) or our `{"rollouts": [{rollout, events}]}` bundle;
 * - `agl-event-lines`: the same events as JSON Lines;
 * - `completed-rollouts`: `{"rollouts": [{rollout_id, …, triplets}]}` (golden agl_trajectory input shape).
 */
import type { TraceBatch } from '../types';
import { isObject, RecordInvalid } from '../validate';
import { readAglEventLines, readAglEvents } from './aglEvents';
import { readCompletedRollouts } from './completedRollouts';
import { type ParseOptions, parseJsonlTrace } from './jsonl';

export type TraceFormat = 'jsonl' | 'agl-events' | 'agl-event-lines' | 'completed-rollouts';

/** The text is in no format we read, or is not JSON at all. */
export class TraceFormatError extends Error {}

/** The first `n` non-blank lines, trimmed. */
function firstLines(text: string, n: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (start < text.length && out.length < n) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end).trim();
    if (line) out.push(line);
    start = end + 1;
  }
  return out;
}

function tryParse(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** The line-format a single record belongs to, if it is one. */
function recordKind(v: unknown): TraceFormat | null {
  if (!isObject(v)) return null;
  if ('calls' in v && 'rollout_id' in v) return 'jsonl';
  if ('event_type' in v) return 'agl-event-lines';
  return null;
}

function classifyDocument(v: unknown): TraceFormat | null {
  if (Array.isArray(v))
    return v.length === 0 || (isObject(v[0]) && 'event_type' in v[0]) ? 'agl-events' : null;
  if (!isObject(v)) return null;
  if ('calls' in v && 'rollout_id' in v) return 'jsonl';
  if ('event_type' in v) return 'agl-event-lines';
  if (Array.isArray(v.rollouts)) {
    const first = v.rollouts[0];
    if (first === undefined) return 'completed-rollouts';
    if (isObject(first) && 'events' in first && 'rollout' in first) return 'agl-events';
    if (isObject(first) && ('triplets' in first || 'final_reward' in first)) return 'completed-rollouts';
  }
  return null;
}

/** Names the format of `text`, or throws TraceFormatError saying what it saw. */
export function detectFormat(text: string): TraceFormat {
  const lines = firstLines(text, 5);
  if (lines.length === 0) throw new TraceFormatError('the trace is empty');
  const records = lines.map(tryParse);
  const kind = recordKind(records[0]);
  if (kind) return kind;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    // JSON Lines whose first line is broken: the next lines tell the format (the bad line is reported later).
    for (const v of records.slice(1)) {
      const k = recordKind(v);
      if (k) return k;
    }
    if (records[0] !== undefined)
      throw new TraceFormatError(
        `unknown trace format: line 1 is ${describeTop(records[0])}, not a rollout ({"rollout_id", "calls", …}) or an event ({"event_type", …})`,
      );
    throw new TraceFormatError(
      `unknown trace format: not JSON, and no line is a JSON record (${(e as Error).message})`,
    );
  }
  const f = classifyDocument(doc);
  if (f) return f;
  throw new TraceFormatError(`unknown trace format: ${describeTop(doc)}`);
}

function describeTop(v: unknown): string {
  if (isObject(v)) {
    const keys = Object.keys(v).slice(0, 6);
    return `an object with keys ${keys.length ? keys.map((k) => `"${k}"`).join(', ') : '(none)'}`;
  }
  if (Array.isArray(v)) return 'a list whose items are not events';
  return `a JSON ${v === null ? 'null' : typeof v}`;
}

/** Detects the format and parses; bad records are reported in `issues`, valid ones kept. */
export function parseTraceText(
  text: string,
  opts: ParseOptions & { format?: TraceFormat } = {},
): TraceBatch & {
  format: TraceFormat;
} {
  const format = opts.format ?? detectFormat(text);
  let batch: TraceBatch;
  try {
    batch = parseAs(format, text, opts);
  } catch (e) {
    // A document that is not of the named format at all (e.g. --from names the wrong one) is a format error,
    // not a bad record.
    if (e instanceof RecordInvalid) throw new TraceFormatError(`not a ${format} document: ${e.message}`);
    throw e;
  }
  if (format !== 'jsonl') opts.onProgress?.(text.length, text.length);
  return { ...batch, format };
}

function parseAs(format: TraceFormat, text: string, opts: ParseOptions): TraceBatch {
  let batch: TraceBatch;
  switch (format) {
    case 'jsonl':
      batch = parseJsonlTrace(text, opts);
      break;
    case 'agl-event-lines':
      batch = readAglEventLines(text);
      break;
    case 'agl-events':
      batch = readAglEvents(parseWhole(text));
      break;
    case 'completed-rollouts':
      batch = readCompletedRollouts(parseWhole(text));
      break;
  }
  return batch;
}

function parseWhole(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TraceFormatError(`not valid JSON: ${(e as Error).message}`);
  }
}

export { readAglEvents, rolloutToAglEvents, toAglEventsBundle } from './aglEvents';
export { readCompletedRollouts } from './completedRollouts';
export { parseJsonlTrace, toJsonlTrace } from './jsonl';
