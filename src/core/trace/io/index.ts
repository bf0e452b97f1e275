/**
 * The import front door: `parseTraceText` reads a text into a TraceBatch, `readTraceChunks` reads a stream of
 * text chunks of any size, `detectFormat` names the format a text is read as. Formats (docs/TRACE_FORMAT.md):
 * - `jsonl`: our trace format, one rollout per line;
 * - `agl-events`: Agent Lightning gateway events, a JSON list (GET /api/rollouts/{rid}/events, full or
 *   format=triplet) or our `{"rollouts": [{rollout, events}]}` bundle;
 * - `agl-event-lines`: the same events as JSON Lines;
 * - `completed-rollouts`: `{"rollouts": [{rollout_id, …, triplets}]}` (golden agl_trajectory input shape);
 * - `nemo-gym`, `verl-dump`, `openai-log`, `skyrl-dump`: other frameworks' rollout files (frameworks.ts).
 * All of them are read by the streaming `TraceReader` (reader.ts).
 */
import type { TraceBatch } from '../types';
import { type ParsedTrace, type ReadOptions, TraceReader } from './reader';

export interface ParseOptions extends ReadOptions {
  /** called now and then with the characters read so far and the total (for a progress bar) */
  onProgress?: (done: number, total: number) => void;
}

/** How much text is handed to the reader at a time when a whole text is parsed. */
const SLICE = 1 << 20;

/** Reads a whole text; bad records are reported in `issues`, valid ones kept. Throws TraceFormatError. */
export function parseTraceText(text: string, opts: ParseOptions = {}): ParsedTrace {
  const reader = new TraceReader(opts);
  for (let at = 0; at < text.length; at += SLICE) {
    reader.push(at === 0 && text.length <= SLICE ? text : text.slice(at, at + SLICE));
    opts.onProgress?.(Math.min(at + SLICE, text.length), text.length);
  }
  if (text.length === 0) opts.onProgress?.(0, 0);
  return reader.finish();
}

/**
 * Reads text chunks as they arrive (a file stream, a decoded fetch or Blob stream); `onChunk` is told the
 * characters read so far. Nothing but the rollouts and one record's text is held in memory.
 */
export async function readTraceChunks(
  chunks: AsyncIterable<string> | Iterable<string>,
  opts: ReadOptions & { onChunk?: (chars: number) => void } = {},
): Promise<ParsedTrace> {
  const reader = new TraceReader(opts);
  let chars = 0;
  for await (const chunk of chunks) {
    reader.push(chunk);
    chars += chunk.length;
    opts.onChunk?.(chars);
  }
  return reader.finish();
}

/** UTF-8 bytes → text chunks (multi-byte characters split across chunks are joined). */
export async function* decodeUtf8(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  for await (const b of bytes) {
    const s = decoder.decode(b, { stream: true });
    if (s) yield s;
  }
  const tail = decoder.decode();
  if (tail) yield tail;
}

/** The format `text` is read as; throws TraceFormatError saying what it saw when it is none. */
export function detectFormat(text: string): ParsedTrace['format'] {
  return parseTraceText(text).format;
}

/** Reads a text as our JSONL trace format (lines of other shapes are reported and skipped). */
export function parseJsonlTrace(text: string, opts: ParseOptions = {}): TraceBatch {
  const { rollouts, issues, counters } = parseTraceText(text, { ...opts, format: 'jsonl' });
  return { rollouts, issues, counters };
}

export {
  AglEventAssembler,
  aglEventsBundleChunks,
  readAglEvents,
  rolloutToAglEvents,
  toAglEventsBundle,
} from './aglEvents';
export { readCompletedRollouts } from './completedRollouts';
export {
  FRAMEWORK_KINDS,
  type FrameworkFormat,
  type FrameworkKind,
  frameworkKind,
  getFramework,
  listFrameworks,
  textOnlyCalls,
  tokenizeTextOnly,
} from './frameworks';
export { readTraceRecord, rolloutToJsonlLine, rolloutToRecord, toJsonlTrace } from './jsonl';
export { type RetokenizedMark, retokenizedAffects, retokenizedMark } from './provenance';
export {
  MAX_RECORD_CHARS,
  type ParsedTrace,
  type ReadOptions,
  TRACE_FORMATS,
  type TraceFormat,
  TraceFormatError,
  TraceReader,
} from './reader';
