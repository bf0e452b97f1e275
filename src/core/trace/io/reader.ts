/**
 * The streaming trace reader: every trace format is read from text chunks as they arrive (a file read in
 * slices, a fetch or Blob stream), so a file of any size can be read: no whole-file string (V8 strings stop at
 * 512 MiB) and no whole-document JSON.parse. Only one record (a line, or one element of a JSON document's list)
 * is held as text at a time and decoded with the native JSON.parse.
 *
 * How a text is read (docs/TRACE_FORMAT.md):
 * - A text that starts with `[` is a JSON list of Agent Lightning events; one that starts with `{` and whose
 *   first object has a top-level `"rollouts": [` is a document of rollouts (our events bundle, or completed
 *   rollouts). The list's elements are split out by a structural scan (brackets and strings) and read one by
 *   one; a broken element costs only itself.
 * - Anything else is JSON Lines. Each line is read on its own and sorted by its shape: a rollout record
 *   (`rollout_id` / `calls`) or an event (`event_type`). The format is the one most lines have; lines of the
 *   other shape, and lines that are neither or not JSON, are reported and skipped, never the whole file.
 * - In a document, entries are likewise sorted (bundle entry `{rollout, events}` or completed rollout
 *   `{rollout_id, triplets, …}`) and the majority decides.
 * - Lines of other frameworks (NeMo Gym rollouts, verl and SkyRL dumps, OpenAI request logs; frameworks.ts)
 *   are sorted the same way, by their keys.
 */
import type { ChatTokenizer } from '../../tokenize/tokenizer';
import type { Rollout, TraceBatch, TraceIssue } from '../types';
import { type ImportCounters, isObject, issueFrom } from '../validate';
import { AglEventAssembler, recoverRolloutId } from './aglEvents';
import { readCompletedRollout } from './completedRollouts';
import {
  FRAMEWORK_KINDS,
  type FrameworkKind,
  FrameworkReader,
  frameworkKind,
  listFrameworks,
} from './frameworks';
import { readTraceRecord } from './jsonl';

export type TraceFormat = 'jsonl' | 'agl-events' | 'agl-event-lines' | 'completed-rollouts' | FrameworkKind;

export const TRACE_FORMATS: readonly TraceFormat[] = [
  'jsonl',
  'agl-events',
  'agl-event-lines',
  'completed-rollouts',
  ...FRAMEWORK_KINDS,
];

/** The text is in no format we read, or is not JSON at all. */
export class TraceFormatError extends Error {}

export interface ReadOptions {
  /** read as this format instead of detecting it */
  format?: TraceFormat;
  /** the longest record (a line, or an element of a document's list) read, in characters */
  maxRecordChars?: number;
  /**
   * gives text-only records (verl and SkyRL dumps, API logs without ids) token ids; their rollouts are marked
   * `metadata.retokenized`. Without it such calls keep their text and have no ids.
   */
  tokenizer?: ChatTokenizer;
}

/** A read trace: the batch, the format it was read as, and the number of lines of the text. */
export interface ParsedTrace extends TraceBatch {
  format: TraceFormat;
  lines: number;
}

/** Records longer than this are reported and skipped (a V8 string holds at most 2^29 − 24 characters). */
export const MAX_RECORD_CHARS = 256 * 1024 * 1024;
/** How much of a text that starts with `{` is scanned for a top-level `"rollouts": [` before it is read as lines. */
const UNDECIDED_LIMIT = 16 * 1024 * 1024;
/** Keys of a top-level object that make it a record (a line of JSON Lines), not a document of rollouts. */
const RECORD_KEYS = new Set([
  'rollout_id',
  'calls',
  'event_type',
  'data_id',
  'data',
  // lines of other frameworks (frameworks.ts)
  'responses_create_params',
  '_ng_task_index',
  'request',
  'response',
  'input',
  'output',
  'input_prompt',
  'output_response',
]);

type LineKind = 'rollout' | 'event' | FrameworkKind;
type Kind = LineKind | 'bundle' | 'completed';
const LINE_KINDS: LineKind[] = ['rollout', 'event', ...FRAMEWORK_KINDS];

const KIND_TEXT: Record<Kind, string> = {
  rollout: 'a rollout record ({"rollout_id", "calls", …})',
  event: 'an Agent Lightning event ({"event_type", …})',
  bundle: 'an events-bundle entry ({"rollout", "events"})',
  completed: 'a completed rollout ({"rollout_id", "triplets", …})',
  ...(Object.fromEntries(listFrameworks().map((f) => [f.name, f.text])) as Record<FrameworkKind, string>),
};
const KIND_PLURAL: Record<Kind, string> = {
  rollout: 'rollout records',
  event: 'Agent Lightning events',
  bundle: 'events-bundle entries',
  completed: 'completed rollouts',
  ...(Object.fromEntries(listFrameworks().map((f) => [f.name, f.plural])) as Record<FrameworkKind, string>),
};

function isFramework(k: Kind): k is FrameworkKind {
  return (FRAMEWORK_KINDS as readonly string[]).includes(k);
}

function lineKind(v: unknown): LineKind | null {
  if (!isObject(v)) return null;
  if ('event_type' in v) return 'event';
  if ('rollout_id' in v || 'calls' in v) return 'rollout';
  return frameworkKind(v);
}

function entryKind(v: unknown): 'bundle' | 'completed' | null {
  // an event or a JSONL rollout record in a list of rollouts is a stray record, not a rollout of it
  if (!isObject(v) || 'event_type' in v || 'calls' in v) return null;
  if ('rollout' in v || 'events' in v) return 'bundle';
  if ('triplets' in v || 'final_reward' in v || 'rollout_id' in v) return 'completed';
  return null;
}

/** What a JSON value looks like, for messages: `an object with keys "a", "b"`. */
export function describeTop(v: unknown): string {
  if (isObject(v)) {
    const keys = Object.keys(v).slice(0, 6);
    return `an object with keys ${keys.length ? keys.map((k) => JSON.stringify(k)).join(', ') : '(none)'}`;
  }
  if (Array.isArray(v)) return 'a list';
  return `a JSON ${v === null ? 'null' : typeof v}`;
}

function jsonError(e: unknown): string {
  return `is not valid JSON (${e instanceof Error ? e.message : String(e)})`;
}

const QUOTE = 34;
const BACKSLASH = 92;
const LBRACK = 91;
const RBRACK = 93;
const LBRACE = 123;
const RBRACE = 125;
const COMMA = 44;
const COLON = 58;

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/** Structural characters outside strings, and the characters that matter inside one. */
const STRUCT = /["[\]{}]/g;
const IN_STRING = /["\\]/g;

interface ScanHooks {
  /** a key of the top-level object; return false to stop scanning */
  key(key: string): boolean;
  /** the top-level object's `rollouts` list begins; return false to stop */
  rolloutsList(): boolean;
  /** one element of the list (its text), or null when it was longer than the limit */
  element(text: string | null, index: number): void;
  /** the top-level value has closed */
  closed(): void;
}

/**
 * Splits a JSON document into the elements of its list (a top-level list, or the list under the top-level
 * object's `rollouts` key) without parsing the rest: only brackets, commas, colons and string boundaries are
 * looked at, and nested values are skipped with a regular-expression jump to the next bracket or quote.
 */
class DocScanner {
  depth = 0;
  private inString = false;
  private escape = false;
  /** 'array': the document is a list; 'object': a `{…}` whose `rollouts` list is read */
  private top: 'array' | 'object' | null = null;
  private inRollouts = false;
  private expectKey = false;
  private keyParts: string[] | null = null;
  private lastKey: string | null = null;
  private afterColon = false;
  /** element capture */
  private capturing = false;
  private scalar = false;
  private parts: string[] = [];
  private chars = 0;
  private oversized = false;
  index = 0;
  closed = false;
  stopped = false;
  /** where in the chunk being fed the document closed (what follows is after its end) */
  closedAt = -1;

  constructor(
    private readonly hooks: ScanHooks,
    private readonly maxChars: number,
  ) {}

  /** Depth of the structure being followed (list elements or the top object's keys). */
  private level(): number {
    if (this.top === 'array') return 1;
    return this.inRollouts ? 2 : 1;
  }

  private elementLevel(): boolean {
    return this.top === 'array' || this.inRollouts;
  }

  /** Scans `chunk` from `from`; stops early when a hook says so (`stopped`). */
  feed(chunk: string, from = 0): void {
    const n = chunk.length;
    let i = from;
    let elemStart = this.capturing ? 0 : -1;
    let keyStart = this.keyParts ? 0 : -1;
    while (i < n && !this.stopped) {
      if (this.closed) {
        this.closedAt = i;
        break;
      }
      if (this.inString) {
        if (this.escape) {
          this.escape = false;
          i++;
          continue;
        }
        IN_STRING.lastIndex = i;
        const m = IN_STRING.exec(chunk);
        if (!m) {
          i = n;
          break;
        }
        const j = m.index;
        if (chunk.charCodeAt(j) === BACKSLASH) {
          if (j + 1 < n) i = j + 2;
          else {
            this.escape = true;
            i = n;
          }
          continue;
        }
        this.inString = false;
        i = j + 1;
        if (this.keyParts) {
          this.keyParts.push(chunk.slice(keyStart, i));
          const raw = this.keyParts.join('');
          this.keyParts = null;
          keyStart = -1;
          let key: string | null = null;
          try {
            key = JSON.parse(raw) as string;
          } catch {
            key = null;
          }
          this.lastKey = key;
          this.expectKey = false;
          if (key !== null && !this.hooks.key(key)) this.stopped = true;
        } else if (this.capturing && this.scalar && this.depth === this.level()) {
          this.emit(chunk, elemStart, i);
          elemStart = -1;
        }
        continue;
      }
      if (this.depth > this.level()) {
        // Inside a nested value: jump to the next bracket or quote.
        STRUCT.lastIndex = i;
        const m = STRUCT.exec(chunk);
        if (!m) {
          i = n;
          break;
        }
        const j = m.index;
        const c = chunk.charCodeAt(j);
        i = j + 1;
        if (c === QUOTE) this.inString = true;
        else if (c === LBRACK || c === LBRACE) this.depth++;
        else {
          this.depth--;
          if (this.capturing && this.depth === this.level()) {
            this.emit(chunk, elemStart, i);
            elemStart = -1;
          }
        }
        continue;
      }
      const c = chunk.charCodeAt(i);
      if (this.depth === 0) {
        if (isSpace(c)) {
          i++;
          continue;
        }
        // the first character of the document
        this.depth = 1;
        i++;
        if (c === LBRACK) this.top = 'array';
        else {
          this.top = 'object';
          this.expectKey = true;
        }
        continue;
      }
      if (this.elementLevel()) {
        if (this.capturing && this.scalar) {
          // a scalar element (junk in a list of records) runs to the next separator
          if (c === COMMA || c === RBRACK || isSpace(c)) {
            this.emit(chunk, elemStart, i);
            elemStart = -1;
          } else {
            if (c === QUOTE) this.inString = true;
            i++;
          }
          continue;
        }
        if (isSpace(c) || c === COMMA) {
          i++;
          continue;
        }
        if (c === RBRACK) {
          i++;
          if (this.top === 'array') {
            this.depth = 0;
            this.close();
          } else {
            this.inRollouts = false;
            this.depth = 1;
          }
          continue;
        }
        this.capturing = true;
        this.parts = [];
        this.chars = 0;
        this.oversized = false;
        elemStart = i;
        i++;
        if (c === LBRACE || c === LBRACK) {
          this.scalar = false;
          this.depth++;
        } else {
          this.scalar = true;
          if (c === QUOTE) this.inString = true;
        }
        continue;
      }
      // the top-level object's own keys and values
      i++;
      if (isSpace(c)) continue;
      if (c === QUOTE) {
        this.inString = true;
        if (this.expectKey) {
          this.keyParts = [];
          keyStart = i - 1;
        }
      } else if (c === COLON) this.afterColon = true;
      else if (c === COMMA) {
        this.expectKey = true;
        this.afterColon = false;
      } else if (c === RBRACE) {
        this.depth = 0;
        this.close();
      } else if (c === LBRACK || c === LBRACE) {
        if (c === LBRACK && this.afterColon && this.lastKey === 'rollouts' && !this.inRollouts) {
          this.inRollouts = true;
          this.depth = 2;
          this.index = 0;
          if (!this.hooks.rolloutsList()) this.stopped = true;
        } else this.depth++;
        this.afterColon = false;
      } else this.afterColon = false;
    }
    // Carry what is still open into the next chunk.
    if (this.capturing && elemStart >= 0) this.keep(chunk.slice(elemStart));
    if (this.keyParts && keyStart >= 0) this.keyParts.push(chunk.slice(keyStart));
  }

  private keep(piece: string): void {
    this.chars += piece.length;
    if (this.chars > this.maxChars) {
      this.oversized = true;
      this.parts = [];
    } else if (!this.oversized) this.parts.push(piece);
  }

  private emit(chunk: string, start: number, end: number): void {
    this.keep(chunk.slice(start, end));
    const text = this.oversized ? null : this.parts.join('');
    this.parts = [];
    this.capturing = false;
    this.scalar = false;
    this.hooks.element(text, this.index++);
  }

  private close(): void {
    this.closed = true;
    this.hooks.closed();
  }

  /** Where the document stopped when the text ended early, or null when it was complete. */
  truncatedAt(): { inElement: boolean; index: number; partial: string } | null {
    if (this.closed || this.depth === 0) return null;
    return { inElement: this.capturing, index: this.index, partial: this.parts.join('') };
  }

  get topKind(): 'array' | 'object' | null {
    return this.top;
  }
}

interface TaggedIssue {
  /** line number or element index, for order */
  pos: number;
  /** the kind of record the issue is about (dropped when that kind is not the file's), or null: always kept */
  kind: Kind | null | 'unreadable-line';
  issue: TraceIssue;
}

/**
 * Reads a trace from text chunks: `push` each chunk, then `finish`. Memory is the rollouts read plus one
 * record's text.
 */
export class TraceReader {
  private mode: 'start' | 'undecided' | 'lines' | 'doc' = 'start';
  private readonly forced: TraceFormat | undefined;
  private readonly maxChars: number;
  private readonly counters: ImportCounters = {};
  private readonly issues: TaggedIssue[] = [];
  private readonly events: AglEventAssembler;
  private readonly rollouts: { pos: number; kind: Exclude<Kind, 'event' | 'bundle'>; r: Rollout }[] = [];
  private readonly kindPositions: Record<Kind, number[]> = {
    rollout: [],
    event: [],
    bundle: [],
    completed: [],
    'nemo-gym': [],
    'verl-dump': [],
    'openai-log': [],
    'skyrl-dump': [],
  };
  private readonly frameworks: FrameworkReader;
  /** the kind of the first record seen (breaks a tie) */
  private firstKind: Kind | null = null;
  /** the first record of an unknown shape, for the message when nothing is readable */
  private firstUnknown: { where: string; what: string } | null = null;
  private current: { pos: number; kind: Kind | null } = { pos: 0, kind: null };
  /** non-blank lines read */
  private records = 0;
  // line mode
  private lineNo = 0;
  private lineParts: string[] = [];
  private lineChars = 0;
  private lineOversized = false;
  // document mode
  private scanner: DocScanner | null = null;
  private undecided: string[] = [];
  private undecidedChars = 0;
  private trailing = false;
  // text statistics
  private newlines = 0;
  private lastChar = -1;
  private sawText = false;
  private finished = false;

  constructor(opts: ReadOptions = {}) {
    this.forced = opts.format;
    this.maxChars = opts.maxRecordChars ?? MAX_RECORD_CHARS;
    this.events = new AglEventAssembler(this.counters, (issue) =>
      this.issues.push({ pos: this.current.pos, kind: this.current.kind, issue }),
    );
    this.frameworks = new FrameworkReader(this.counters, { tokenizer: opts.tokenizer });
    if (
      this.forced === 'jsonl' ||
      this.forced === 'agl-event-lines' ||
      (this.forced && isFramework(this.forced as Kind))
    )
      this.mode = 'lines';
  }

  push(chunk: string): void {
    if (this.finished) throw new Error('TraceReader: push after finish');
    if (chunk.length === 0) return;
    if (!this.sawText && chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    if (chunk.length === 0) return;
    this.sawText = true;
    for (let k = chunk.indexOf('\n'); k >= 0; k = chunk.indexOf('\n', k + 1)) this.newlines++;
    this.lastChar = chunk.charCodeAt(chunk.length - 1);
    this.feed(chunk);
  }

  private feed(chunk: string): void {
    if (this.mode === 'start') {
      this.undecided.push(chunk);
      this.undecidedChars += chunk.length;
      this.decideStart(false);
      return;
    }
    if (this.mode === 'lines') {
      this.lines(chunk);
      return;
    }
    const scanner = this.scanner as DocScanner;
    if (this.mode === 'undecided') {
      this.undecided.push(chunk);
      this.undecidedChars += chunk.length;
      scanner.feed(chunk);
      // hooks may have decided the mode meanwhile
      if (this.modeNow() === 'undecided' && this.undecidedChars > UNDECIDED_LIMIT) this.decideLines();
      if (this.modeNow() === 'doc') {
        this.undecided = [];
        if (scanner.closed && scanner.closedAt >= 0) this.afterDocument(chunk, scanner.closedAt);
      }
      return;
    }
    if (scanner.closed) {
      this.afterDocument(chunk, 0);
      return;
    }
    scanner.feed(chunk);
    if (scanner.closed && scanner.closedAt >= 0) this.afterDocument(chunk, scanner.closedAt);
  }

  /** The mode as hooks may have changed it (a plain read would be narrowed by the compiler). */
  private modeNow(): TraceReader['mode'] {
    return this.mode;
  }

  /**
   * Before the first record: `[` starts a JSON list unless its first line is a complete JSON value with more
   * text after it (JSON Lines with a stray first line); `{` is scanned for a top-level `"rollouts": [` (see
   * the undecided mode); anything else is JSON Lines. Waits (returns) while the held text cannot tell yet.
   */
  private decideStart(final: boolean): void {
    const head = this.undecided.length === 1 ? this.undecided[0] : this.undecided.join('');
    let i = 0;
    while (i < head.length && isSpace(head.charCodeAt(i))) i++;
    if (i === head.length) return;
    const c = head.charCodeAt(i);
    const held = this.undecided;
    if (c === LBRACK) {
      const kind = this.listOrLines(head, i, final);
      if (kind === null) return;
      if (kind === 'doc') this.startDoc();
      else this.toLines();
    } else if (c === LBRACE) {
      this.mode = 'undecided';
      this.scanner = this.newScanner();
    } else this.toLines();
    this.undecided = [];
    this.undecidedChars = 0;
    for (const piece of held) this.feed(piece);
  }

  private listOrLines(head: string, at: number, final: boolean): 'doc' | 'lines' | null {
    if (this.forced === 'agl-events' || this.forced === 'completed-rollouts') return 'doc';
    const waitOr = (): 'doc' | null => (final || this.undecidedChars > UNDECIDED_LIMIT ? 'doc' : null);
    const nl = head.indexOf('\n', at);
    if (nl < 0) return waitOr();
    try {
      JSON.parse(head.slice(at, nl));
    } catch {
      return 'doc'; // a list over several lines (or a broken one)
    }
    let j = nl;
    while (j < head.length && isSpace(head.charCodeAt(j))) j++;
    return j < head.length ? 'lines' : waitOr();
  }

  private newScanner(): DocScanner {
    return new DocScanner(
      {
        key: (key) => {
          if (this.mode === 'undecided' && RECORD_KEYS.has(key)) {
            this.decideLines();
            return false;
          }
          return true;
        },
        rolloutsList: () => {
          if (this.mode === 'undecided') this.mode = 'doc';
          return true;
        },
        element: (text, index) => this.element(text, index),
        closed: () => {
          if (this.mode === 'undecided') this.decideLines();
        },
      },
      this.maxChars,
    );
  }

  private startDoc(): void {
    if (this.forced === 'completed-rollouts')
      throw new TraceFormatError(
        'not a completed-rollouts document: document must be an object, got an array',
      );
    this.mode = 'doc';
    this.scanner = this.newScanner();
  }

  private toLines(): void {
    if (this.forced === 'agl-events' || this.forced === 'completed-rollouts')
      throw new TraceFormatError(
        `not a ${this.forced} document: it is neither a JSON list nor an object with a "rollouts" list`,
      );
    this.mode = 'lines';
  }

  /** The text so far is JSON Lines after all: read what was held back as lines. */
  private decideLines(): void {
    this.toLines();
    this.scanner = null;
    this.replay();
  }

  private replay(): void {
    const held = this.undecided;
    this.undecided = [];
    this.undecidedChars = 0;
    for (const piece of held) this.lines(piece);
  }

  private afterDocument(chunk: string, from: number): void {
    if (this.trailing) return;
    for (let i = from; i < chunk.length; i++)
      if (!isSpace(chunk.charCodeAt(i))) {
        this.trailing = true;
        this.issues.push({
          pos: Number.MAX_SAFE_INTEGER,
          kind: null,
          issue: {
            where: 'document',
            message: 'has text after its end; it was ignored',
            severity: 'warning',
          },
        });
        return;
      }
  }

  // ---- JSON Lines -------------------------------------------------------------------------------------

  private lines(chunk: string): void {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', start)) {
      this.addLinePart(chunk.slice(start, nl));
      this.lineNo++;
      const text = this.lineOversized ? null : this.lineParts.join('');
      this.lineParts = [];
      this.lineChars = 0;
      this.lineOversized = false;
      this.line(text, this.lineNo);
      start = nl + 1;
    }
    if (start < chunk.length) this.addLinePart(start === 0 ? chunk : chunk.slice(start));
  }

  private addLinePart(piece: string): void {
    this.lineChars += piece.length;
    if (this.lineChars > this.maxChars) {
      this.lineOversized = true;
      this.lineParts = [];
    } else if (!this.lineOversized) this.lineParts.push(piece);
  }

  private line(raw: string | null, lineNo: number): void {
    const where = `line ${lineNo}`;
    this.current = { pos: lineNo, kind: null };
    if (raw === null) {
      this.records++;
      this.unreadableLine(where, lineNo, `is longer than ${this.maxChars} characters; skipped`, null);
      return;
    }
    const text = raw.trim();
    if (!text) return;
    this.records++;
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      this.unreadableLine(where, lineNo, jsonError(e), recoverRolloutId(text));
      return;
    }
    const kind = lineKind(v);
    if (kind === null) {
      if (this.firstUnknown === null) this.firstUnknown = { where, what: describeTop(v) };
      this.unreadableLine(
        where,
        lineNo,
        `is neither a rollout record ({"rollout_id", "calls", …}) nor an event ({"event_type", …}) nor a line of a known framework (NeMo Gym, verl, SkyRL, OpenAI log): it is ${describeTop(v)}`,
        isObject(v) && typeof v.rollout_id === 'string' ? v.rollout_id : null,
      );
      return;
    }
    this.seen(kind, lineNo);
    this.current = { pos: lineNo, kind };
    if (kind === 'event') this.events.event(v, where);
    else
      try {
        const r =
          kind === 'rollout' ? readTraceRecord(v, this.counters) : this.frameworks.read(kind, v, lineNo);
        this.rollouts.push({ pos: lineNo, kind, r });
      } catch (e) {
        this.issues.push({ pos: lineNo, kind, issue: issueFrom(e, where) });
      }
  }

  /**
   * A line that is no record: in a file of rollout records it is a skipped line; in a stream of events it may
   * have been one of a rollout's events, and the assembler says which rollouts it may hurt. Both versions are
   * kept, tagged, and the one for the file's kind is shown.
   */
  private unreadableLine(where: string, lineNo: number, message: string, rolloutId: string | null): void {
    this.issues.push({ pos: lineNo, kind: 'unreadable-line', issue: { where, message, severity: 'error' } });
    this.current = { pos: lineNo, kind: 'event' };
    this.events.unreadable(where, message, rolloutId);
  }

  private seen(kind: Kind, pos: number): void {
    this.kindPositions[kind].push(pos);
    if (this.firstKind === null) this.firstKind = kind;
  }

  // ---- documents ---------------------------------------------------------------------------------------

  private element(text: string | null, index: number): void {
    const scanner = this.scanner as DocScanner;
    const list = scanner.topKind === 'array' ? 'events' : 'rollouts';
    const where = `${list}[${index}]`;
    this.current = { pos: index, kind: null };
    if (text === null) {
      const message = `is longer than ${this.maxChars} characters; skipped`;
      if (list === 'events') {
        this.current = { pos: index, kind: 'event' };
        this.events.unreadable(where, message, null);
        this.retag(null);
      } else this.issues.push({ pos: index, kind: null, issue: { where, message, severity: 'error' } });
      return;
    }
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      const message = jsonError(e);
      if (list === 'events') {
        this.current = { pos: index, kind: 'event' };
        this.events.unreadable(where, message, recoverRolloutId(text));
        this.retag(null);
      } else this.issues.push({ pos: index, kind: null, issue: { where, message, severity: 'error' } });
      return;
    }
    if (list === 'events') {
      if (lineKind(v) !== 'event') {
        const message = `is not an event ({"event_type", …}): it is ${describeTop(v)}`;
        if (this.firstUnknown === null) this.firstUnknown = { where, what: describeTop(v) };
        this.current = { pos: index, kind: 'event' };
        this.events.unreadable(
          where,
          message,
          isObject(v) && typeof v.rollout_id === 'string' ? v.rollout_id : null,
        );
        this.retag(null);
        return;
      }
      this.seen('event', index);
      this.current = { pos: index, kind: null };
      this.events.event(v, where);
      return;
    }
    const kind = entryKind(v);
    if (kind === null) {
      if (this.firstUnknown === null) this.firstUnknown = { where, what: describeTop(v) };
      this.issues.push({
        pos: index,
        kind: null,
        issue: {
          where,
          message: `is neither an events-bundle entry ({"rollout", "events"}) nor a completed rollout ({"rollout_id", "triplets", …}): it is ${describeTop(v)}`,
          severity: 'error',
        },
      });
      return;
    }
    this.seen(kind, index);
    this.current = { pos: index, kind };
    if (kind === 'bundle') this.events.bundleEntry(v, where);
    else {
      const own: TraceIssue[] = [];
      try {
        this.rollouts.push({ pos: index, kind, r: readCompletedRollout(v, where, this.counters, own) });
      } catch (e) {
        own.push(issueFrom(e, where));
      }
      for (const issue of own) this.issues.push({ pos: index, kind, issue });
    }
  }

  /** Re-tags the issues just reported at the current position (they are kept whatever the file's kind). */
  private retag(kind: Kind | null): void {
    for (let k = this.issues.length - 1; k >= 0 && this.issues[k].pos === this.current.pos; k--)
      this.issues[k].kind = kind;
  }

  // ---- the end -----------------------------------------------------------------------------------------

  finish(): ParsedTrace {
    if (this.finished) throw new Error('TraceReader: finish twice');
    this.finished = true;
    if (this.mode === 'start') this.decideStart(true);
    if (this.modeNow() === 'start') {
      if (this.forced === undefined || !this.sawText) throw new TraceFormatError('the trace is empty');
      this.toLines();
    }
    if (this.mode === 'undecided') this.decideLines();
    if (this.mode === 'lines') {
      if (this.lineParts.length || this.lineOversized) {
        this.lineNo++;
        const text = this.lineOversized ? null : this.lineParts.join('');
        this.lineParts = [];
        this.line(text, this.lineNo);
      }
      return this.result(this.forcedKind(LINE_KINDS), LINE_KINDS);
    }
    const scanner = this.scanner as DocScanner;
    const cut = scanner.truncatedAt();
    if (cut) {
      const list = scanner.topKind === 'array' ? 'events' : 'rollouts';
      const where = `${list}[${cut.index}]`;
      const message = cut.inElement
        ? 'is cut off: the text ends inside it (truncated file?); it and anything after it are missing'
        : 'the text ends before the document is closed (truncated file?); anything after it is missing';
      if (list === 'events') {
        this.current = { pos: cut.index, kind: 'event' };
        this.events.unreadable(where, message, cut.inElement ? recoverRolloutId(cut.partial) : null);
        this.retag(null);
      } else this.issues.push({ pos: cut.index, kind: null, issue: { where, message, severity: 'error' } });
    }
    if (scanner.topKind === 'array') return this.result(this.forced ? 'event' : null, ['event']);
    return this.result(this.forcedKind(['bundle', 'completed']), ['bundle', 'completed']);
  }

  private forcedKind(candidates: Kind[]): Kind | null {
    const f = this.forced;
    if (f === 'jsonl') return 'rollout';
    if (f === 'agl-event-lines') return 'event';
    if (f === 'completed-rollouts') return 'completed';
    if (f === 'agl-events') return candidates.includes('bundle') ? 'bundle' : 'event';
    if (f !== undefined && isFramework(f as Kind)) return f as FrameworkKind;
    return null;
  }

  private result(forced: Kind | null, candidates: Kind[]): ParsedTrace {
    let winner = forced;
    if (winner === null) {
      let best = 0;
      for (const k of candidates) {
        const n = this.kindPositions[k].length;
        if (n > best || (n === best && n > 0 && k === this.firstKind)) {
          best = n;
          winner = k;
        }
      }
    }
    if (winner === null) {
      // Nothing in the text has the shape of a record: not a trace at all.
      const empty = this.mode === 'doc' && this.issues.length === 0;
      if (empty && candidates.includes('event'))
        winner = 'event'; // `[]`
      else if (empty)
        winner = 'completed'; // `{"rollouts": []}`
      else throw new TraceFormatError(this.unknownFormatMessage(candidates));
    }
    const total = candidates.reduce((n, k) => n + this.kindPositions[k].length, 0);
    // an unreadable line is its own issue in any file of one-record lines; in a stream of events the
    // assembler's version (which rollouts it may hurt) is shown instead
    const issues = this.issues.filter(
      (t) => t.kind === null || t.kind === winner || (t.kind === 'unreadable-line' && winner !== 'event'),
    );
    for (const k of candidates) {
      if (k === winner) continue;
      for (const pos of this.kindPositions[k]) {
        const where = this.mode === 'lines' ? `line ${pos}` : `rollouts[${pos}]`;
        issues.push({
          pos,
          kind: null,
          issue: {
            where,
            message: `is ${KIND_TEXT[k]}, but this file holds ${KIND_PLURAL[winner]} (${this.kindPositions[winner].length} of ${total} records); skipped`,
            severity: 'error',
          },
        });
      }
    }
    let rollouts: Rollout[];
    if (winner === 'event' || winner === 'bundle') {
      this.current = { pos: Number.MAX_SAFE_INTEGER, kind: winner };
      rollouts = this.events.finish();
      for (const t of this.issues) if (t.pos === Number.MAX_SAFE_INTEGER && t.kind === winner) issues.push(t);
    } else rollouts = this.rollouts.filter((x) => x.kind === winner).map((x) => x.r);
    issues.sort((a, b) => a.pos - b.pos);
    const out = issues.map((t) => t.issue);
    const counters = { ...this.counters };
    counters.records_skipped = out.filter((i) => i.severity !== 'warning').length;
    const format = this.mode === 'doc' && winner === 'event' ? 'agl-events' : formatOf(winner);
    return { rollouts, issues: out, counters, format, lines: this.lineCount() };
  }

  private unknownFormatMessage(candidates: Kind[]): string {
    const u = this.firstUnknown;
    if (this.mode === 'lines') {
      const first = this.issues.find((t) => t.kind !== 'event');
      if (u && this.records === 1) return `unknown trace format: ${u.what}`;
      if (u && first?.issue.where === u.where)
        return `unknown trace format: no line is a rollout record ({"rollout_id", "calls", …}) or an event ({"event_type", …}); ${u.where} is ${u.what}`;
      return `unknown trace format: not JSON, and no line is a JSON record (${first ? `${first.issue.where} ${first.issue.message}` : 'no records'})`;
    }
    if (candidates.includes('event')) return 'unknown trace format: a list whose items are not events';
    return `unknown trace format: no entry of "rollouts" is an events-bundle entry or a completed rollout${u ? ` (${u.where} is ${u.what})` : ''}`;
  }

  private lineCount(): number {
    return this.newlines + (this.sawText && this.lastChar !== 10 ? 1 : 0);
  }
}

function formatOf(kind: Kind): TraceFormat {
  if (isFramework(kind)) return kind;
  switch (kind) {
    case 'rollout':
      return 'jsonl';
    case 'event':
      return 'agl-event-lines';
    case 'bundle':
      return 'agl-events';
    case 'completed':
      return 'completed-rollouts';
  }
}
