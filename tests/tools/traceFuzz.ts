/**
 * A seeded mutation fuzzer for the trace importers. Mutants are made from real traces (the bundled samples, the
 * Agent Lightning events `lab convert` makes of them, the completed-rollouts form, and the samples in other
 * frameworks' formats under public/samples/frameworks/) by damaging some of their
 * records: truncation, byte noise, wrong types, hostile values (objects with `toString`, 10^400, deep nesting,
 * 300k-id arrays, lone surrogates), stray records of another format, duplicates. For every mutant it checks:
 * - nothing but TraceFormatError escapes, and no input takes long (`maxMs`);
 * - every record the mutation did not touch is kept, with the content it had alone;
 * - every issue names its place, and a field unless it is about the whole record;
 * - whatever was accepted writes as JSONL and as an events bundle and reads back equal (round trip);
 * - reading the same bytes in random chunks gives the same result.
 * Used by tests/unit/traceFuzz.test.ts (CI) and tests/tools/fuzz-traces.ts (longer runs).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mulberry32 } from '../../src/core/random';
import {
  aglEventsBundleChunks,
  FRAMEWORK_KINDS,
  type FrameworkKind,
  parseTraceText,
  rolloutToJsonlLine,
  TraceFormatError,
  TraceReader,
  toAglEventsBundle,
  toJsonlTrace,
} from '../../src/core/trace/io';
import type { Rollout, TraceIssue } from '../../src/core/trace/types';

export type FuzzFormat =
  | 'jsonl'
  | 'agl-event-lines'
  | 'agl-events-list'
  | 'agl-bundle'
  | 'completed'
  | FrameworkFormat;

/** Other frameworks' line formats (core's registry); their samples are public/samples/frameworks/<name>-*.jsonl. */
const FRAMEWORK_FORMATS: readonly FrameworkKind[] = FRAMEWORK_KINDS;
type FrameworkFormat = FrameworkKind;
/** Formats of one record per line. */
const LINE_FORMATS = new Set<FuzzFormat>(['jsonl', 'agl-event-lines', ...FRAMEWORK_FORMATS]);
/** Formats whose rollout and group ids depend on the other lines (samples of one prompt are counted and grouped). */
const CONTEXT_IDS = new Set<FuzzFormat>(['verl-dump', 'skyrl-dump']);

/** One record of a mutant, with whether the mutation touched it and which rollout it belongs to. */
interface Unit {
  text: string;
  touched: boolean;
  rollout: string | null;
  /** a record of another format put in */
  stray?: boolean;
}

export interface Corpus {
  /** per format: records, each with the rollout id it belongs to */
  records: Record<FuzzFormat, { text: string; rollout: string }[]>;
}

export interface FuzzCounts {
  mutants: number;
  byFormat: Record<string, number>;
  formatErrors: number;
  accepted: number;
  rolloutsRead: number;
  issues: number;
  keptChecked: number;
  roundTrips: number;
  chunkedChecks: number;
  maxMs: number;
  failures: string[];
}

const root = join(import.meta.dirname, '..', '..');

/** Completed rollouts (golden agl_trajectory input shape) of parsed rollouts: ids only. */
function completedEntry(r: Rollout): Record<string, unknown> {
  return {
    rollout_id: r.rolloutId,
    data_id: r.dataId,
    step: r.step ?? 0,
    sample_idx_in_step: r.sampleIdxInStep ?? 0,
    final_reward: r.finalReward,
    triplets: r.calls
      .filter((c) => c.promptTokenIds && c.responseTokenIds)
      .map((c) => ({
        prompt_token_ids: Array.from(c.promptTokenIds as Int32Array),
        response_token_ids: Array.from(c.responseTokenIds as Int32Array),
        response_log_probs: c.responseLogProbs
          ? Array.from(c.responseLogProbs, (x) => (Number.isNaN(x) ? null : x))
          : null,
      })),
  };
}

/**
 * The corpus: every bundled sample's records, and, from `bundles` (what `lab convert --to agl-events` wrote for
 * the samples), the events as lines and as a list, and the bundle entries.
 */
export function loadCorpus(bundles: string[]): Corpus {
  const dir = join(root, 'public', 'samples');
  const records: Corpus['records'] = {
    jsonl: [],
    'agl-event-lines': [],
    'agl-events-list': [],
    'agl-bundle': [],
    completed: [],
    'nemo-gym': [],
    'verl-dump': [],
    'openai-log': [],
    'skyrl-dump': [],
  };
  const fw = join(dir, 'frameworks');
  for (const f of readdirSync(fw).sort())
    for (const format of FRAMEWORK_FORMATS)
      if (f.startsWith(`${format}-`) && f.endsWith('.jsonl'))
        readFileSync(join(fw, f), 'utf8')
          .split('\n')
          .filter(Boolean)
          .forEach((text, i) => {
            records[format].push({ text, rollout: `${f}:${i}` });
          });
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.jsonl'))
    .sort()) {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const line of text.split('\n').filter(Boolean)) {
      const rid = (JSON.parse(line) as { rollout_id: string }).rollout_id;
      records.jsonl.push({ text: line, rollout: `${f}:${rid}` });
    }
    for (const r of parseTraceText(text).rollouts)
      records.completed.push({ text: JSON.stringify(completedEntry(r)), rollout: `${f}:${r.rolloutId}` });
  }
  bundles.forEach((text, b) => {
    const doc = JSON.parse(text) as { rollouts: { rollout: { rollout_id: string }; events: unknown[] }[] };
    for (const entry of doc.rollouts) {
      const rid = `${b}:${entry.rollout.rollout_id}`;
      records['agl-bundle'].push({ text: JSON.stringify(entry), rollout: rid });
      for (const ev of entry.events) {
        const t = JSON.stringify(ev);
        records['agl-event-lines'].push({ text: t, rollout: rid });
        records['agl-events-list'].push({ text: t, rollout: rid });
      }
    }
  });
  return { records };
}

const FORMATS: FuzzFormat[] = [
  'jsonl',
  'agl-event-lines',
  'agl-events-list',
  'agl-bundle',
  'completed',
  ...FRAMEWORK_FORMATS,
];
const EVENT_FORMATS = new Set<FuzzFormat>(['agl-event-lines', 'agl-events-list']);

function join_(format: FuzzFormat, units: Unit[]): string {
  const texts = units.map((u) => u.text);
  if (LINE_FORMATS.has(format)) return texts.join('\n') + '\n';
  if (format === 'agl-events-list') return `[${texts.join(',\n')}]`;
  return `{"rollouts": [${texts.join(', ')}], "params": {"note": "ignored"}}`;
}

type Rand = () => number;
const pick = <T>(rand: Rand, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

/** Placeholders replaced in the JSON text by what JSON.stringify cannot write. */
const RAW: Record<string, string> = {
  '\u0000INF': '1e400',
  '\u0000NEGZERO': '-0',
  '\u0000SURR': '"\\ud800x"',
  '\u0000BIGINT': '9007199254740993',
  '\u0000DEEP': `${'['.repeat(5000)}${']'.repeat(5000)}`,
};

function hostileValue(rand: Rand): unknown {
  switch (Math.floor(rand() * 22)) {
    case 0:
      return null;
    case 1:
      return -1;
    case 2:
      return 1.5;
    case 3:
      return '\u0000INF';
    case 4:
      return 'x';
    case 5:
      return {};
    case 6:
      return [];
    case 7:
      return true;
    case 8:
      return { toString: 1, valueOf: {} };
    case 9:
      return '\u0000DEEP'; // deep nesting, spliced into the text (JSON.stringify would overflow on it)
    case 10:
      return rand() < 0.15 ? Array.from({ length: 300_000 }, (_, i) => i % 1000) : [1, 2, 3];
    case 11:
      return 2 ** 53 + 2;
    case 12:
      return 1e300;
    case 13:
      return '\u0000NEGZERO';
    case 14:
      return '\u0000SURR';
    case 15:
      return -(2 ** 31);
    case 16:
      return { __proto__: 1, constructor: 'x' } as unknown;
    case 17:
      return [{ toString: 1 }];
    case 18:
      return '\u0000BIGINT';
    case 19:
      return 'nan';
    case 20:
      return 99999999999;
    default:
      return { a: { b: [null, 'y', 1e-320] } };
  }
}

/** Every (container, key) in a JSON value, breadth first, capped. */
function slots(v: unknown): { parent: Record<string, unknown> | unknown[]; key: string | number }[] {
  const out: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = [];
  const queue: unknown[] = [v];
  while (queue.length && out.length < 4000) {
    const x = queue.shift();
    if (Array.isArray(x)) {
      const n = Math.min(x.length, 8);
      for (let i = 0; i < n; i++) {
        out.push({ parent: x, key: i });
        queue.push(x[i]);
      }
    } else if (x && typeof x === 'object') {
      for (const k of Object.keys(x)) {
        out.push({ parent: x as Record<string, unknown>, key: k });
        queue.push((x as Record<string, unknown>)[k]);
      }
    }
  }
  return out;
}

function stringifyRaw(v: unknown): string {
  let t = JSON.stringify(v);
  for (const [k, raw] of Object.entries(RAW)) t = t.split(JSON.stringify(k)).join(raw);
  return t;
}

/** A structural mutation of one record: a value of the wrong type, a hostile value, a removed or added key. */
function mutateStructure(rand: Rand, text: string): string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return mutateBytes(rand, text); // already damaged
  }
  const all = slots(v);
  if (all.length === 0) return text;
  const n = 1 + Math.floor(rand() * 3);
  for (let k = 0; k < n; k++) {
    const s = pick(rand, all);
    const r = rand();
    if (r < 0.15 && !Array.isArray(s.parent)) delete (s.parent as Record<string, unknown>)[s.key as string];
    else if (r < 0.25 && !Array.isArray(s.parent))
      (s.parent as Record<string, unknown>)[
        pick(rand, ['toString', '__proto__', 'valueOf', 'hasOwnProperty', 'extra'])
      ] = hostileValue(rand);
    else if (r < 0.35) {
      const cur = (s.parent as Record<string, unknown>)[s.key as string];
      if (typeof cur === 'number') (s.parent as Record<string, unknown>)[s.key as string] = cur + 0.5;
      else (s.parent as Record<string, unknown>)[s.key as string] = hostileValue(rand);
    } else (s.parent as Record<string, unknown>)[s.key as string] = hostileValue(rand);
  }
  try {
    return stringifyRaw(v);
  } catch {
    return mutateBytes(rand, text); // the record already nests too deep to write
  }
}

const NOISE = [
  '"',
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  '\\',
  '\n',
  '\u00e9',
  '\ud83d\ude00',
  'null',
  '-',
  '0',
  ' ',
];

function mutateBytes(rand: Rand, text: string): string {
  const n = 1 + Math.floor(rand() * 4);
  let t = text;
  for (let k = 0; k < n; k++) {
    const at = Math.floor(rand() * (t.length + 1));
    const r = rand();
    if (r < 0.4) t = t.slice(0, at) + t.slice(at + 1 + Math.floor(rand() * 20));
    else if (r < 0.8) t = t.slice(0, at) + pick(rand, NOISE) + t.slice(at);
    else t = t.slice(0, at);
  }
  return t;
}

/** A record of another format, as a stray line or element. */
function strayRecord(rand: Rand, corpus: Corpus, format: FuzzFormat): string {
  const kind = (f: FuzzFormat) => (EVENT_FORMATS.has(f) ? 'event' : f);
  const other = pick(
    rand,
    FORMATS.filter((f) => kind(f) !== kind(format)),
  );
  return pick(rand, corpus.records[other]).text;
}

export interface Mutant {
  format: FuzzFormat;
  text: string;
  units: Unit[];
}

export function makeMutant(rand: Rand, corpus: Corpus): Mutant {
  const format = pick(rand, FORMATS);
  const pool = corpus.records[format];
  const nRecords = EVENT_FORMATS.has(format) ? 6 + Math.floor(rand() * 18) : 3 + Math.floor(rand() * 4);
  // consecutive records, so events of a rollout stay together as a gateway writes them
  const start = Math.floor(rand() * Math.max(1, pool.length - nRecords));
  const units: Unit[] = pool
    .slice(start, start + nRecords)
    .map((r) => ({ text: r.text, touched: false, rollout: r.rollout }));
  const nMut = 1 + Math.floor(rand() * 3);
  let strays = 0;
  for (let m = 0; m < nMut; m++) {
    const r = rand();
    const i = Math.floor(rand() * units.length);
    if (r < 0.35) units[i] = { ...units[i], text: mutateStructure(rand, units[i].text), touched: true };
    else if (r < 0.6) units[i] = { ...units[i], text: mutateBytes(rand, units[i].text), touched: true };
    else if (r < 0.7 && strays < Math.floor((units.length - 1) / 3)) {
      units.splice(i, 0, {
        text: strayRecord(rand, corpus, format),
        touched: true,
        rollout: null,
        stray: true,
      });
      strays++;
    } else if (r < 0.8) units.splice(i, 0, { ...units[i], touched: true });
    else if (r < 0.85)
      units.splice(i, 0, {
        text: pick(rand, ['', '   ', '\r', '42', '"text"', 'null', '[]', '{}']),
        touched: true,
        rollout: null,
      });
    else if (r < 0.9 && units.length > 1) {
      const j = Math.floor(rand() * units.length);
      [units[i], units[j]] = [units[j], units[i]];
      // order matters for events (calls are ordered); a swap touches both
      if (EVENT_FORMATS.has(format)) units[i].touched = units[j].touched = true;
    } else if (r < 0.95) {
      // the file is cut short inside a record
      const cut = units[i];
      units.splice(i + 1);
      units[i] = { ...cut, text: cut.text.slice(0, Math.floor(rand() * cut.text.length)), touched: true };
    } else units[i] = { ...units[i], text: units[i].text.replace(/"/, "'"), touched: true };
  }
  let text = join_(format, units);
  if (rand() < 0.05) text = `\ufeff${text}`;
  if (rand() < 0.05) text = text.replace(/\n/g, '\r\n');
  return { format, text, units };
}

/** Canonical text of a rollout for comparisons: its JSONL line, without the incomplete marks. */
function canon(r: Rollout, opts: { dropId?: boolean; bundle?: boolean; context?: boolean } = {}): string {
  const copy: Rollout = { ...r };
  delete copy.incomplete;
  if (opts.dropId) copy.rolloutId = '';
  if (opts.context) {
    // ids a dump's reader derives from the lines around a record (which sample of its prompt, which group)
    copy.rolloutId = '';
    copy.dataId = '';
    delete copy.sampleIdxInStep;
  }
  if (opts.bundle) {
    // what the bundle format does not keep exactly: times are seconds, and three
    // metadata keys are its own (see docs/TRACE_FORMAT.md)
    const meta = { ...copy.metadata };
    for (const k of ['data_id', 'batch_idx', 'sample_idx_in_batch']) delete meta[k];
    copy.metadata = meta;
    // (the times are compared apart, with a tolerance: see times())
    copy.rewards = copy.rewards.map((w) => ({ ...w, timestampMs: undefined }));
    copy.calls = copy.calls.map((c) => ({ ...c, timings: undefined }));
  }
  return rolloutToJsonlLine(copy);
}

const WHOLE_RECORD =
  /is not valid JSON|is neither|is not an event|but this file holds|is cut off|the text ends|is longer than|has text after its end|is used by an earlier rollout/;
const WHERE = /^(line \d+|events\[\d+\]|rollouts\[\d+\](\.events\[\d+\])?|rollout .+|document)$/;

function checkIssue(i: TraceIssue): string | null {
  if (!WHERE.test(i.where)) return `issue without a place: ${JSON.stringify(i)}`;
  if (!i.message) return `issue without a message: ${JSON.stringify(i)}`;
  if (!i.field && !WHOLE_RECORD.test(i.message))
    return `issue without a field: ${JSON.stringify(i).slice(0, 300)}`;
  return null;
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Whether brackets and strings of a JSON text balance (a document element that does not swallows the rest). */
function balanced(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth < 0) return false;
    }
  }
  return depth === 0 && !inString;
}

/**
 * What the records of `units` that were not touched must read as, alone. In a JSON document an element whose
 * brackets do not balance runs to the end of the text (reported as cut off), so what follows it is lost too.
 */
function expected(format: FuzzFormat, units: Unit[]): { byRollout: Map<string, string>; lines: string[] } {
  if (!LINE_FORMATS.has(format)) {
    const broken = units.findIndex((u) => u.touched && (!balanced(u.text) || !parses(u.text)));
    if (broken >= 0)
      units = units.map((u, k) => (k > broken ? { ...u, touched: true, stray: false, gone: true } : u));
  }
  // Strays may outnumber the records that survive (when a cut took the rest, or the others no longer parse and
  // so count for no format): then the file's format may be theirs.
  const strays = units.filter((u) => u.stray).length;
  const survivors = units.filter(
    (u) =>
      !u.stray &&
      !(u as { gone?: boolean }).gone &&
      u.rollout !== null &&
      (!LINE_FORMATS.has(format) || parses(u.text)),
  ).length;
  if (strays > 0 && strays * 2 >= survivors) return { byRollout: new Map(), lines: [] };
  const byRollout = new Map<string, string>();
  const lines: string[] = [];
  if (EVENT_FORMATS.has(format)) {
    const touched = new Set(units.filter((u) => u.touched && u.rollout).map((u) => u.rollout as string));
    // past a broken element the scan is lost: events inside what follows (a stray bundle entry's too) may
    // surface as events of any rollout they name
    for (const u of units)
      if ((u as { gone?: boolean }).gone)
        for (const m of u.text.matchAll(/"rollout_id":"((?:[^"\\]|\\.)*)"/g))
          for (const r of units) if (r.rollout?.endsWith(`:${m[1]}`)) touched.add(r.rollout);
    const groups = new Map<string, string[]>();
    for (const u of units) {
      if (!u.rollout || touched.has(u.rollout)) continue;
      groups.set(u.rollout, [...(groups.get(u.rollout) ?? []), u.text]);
    }
    for (const [rid, texts] of groups) {
      const alone = parseTraceText(texts.join('\n'));
      if (alone.rollouts.length === 1) byRollout.set(rid, canon(alone.rollouts[0]));
    }
    return { byRollout, lines };
  }
  for (const u of units) {
    if (u.touched) continue;
    const doc = LINE_FORMATS.has(format) ? u.text : `{"rollouts": [${u.text}]}`;
    const alone = parseTraceText(doc);
    if (alone.rollouts.length === 1)
      lines.push(canon(alone.rollouts[0], { context: CONTEXT_IDS.has(format) }));
  }
  return { byRollout, lines };
}

/** Every time of a rollout (reward timestamps, call start and end). */
function times(r: Rollout): (number | undefined)[] {
  return [
    ...r.rewards.map((w) => w.timestampMs),
    ...r.calls.flatMap((c) => [c.timings?.startMs, c.timings?.endMs]),
  ];
}

function sameRollouts(a: Rollout[], b: Rollout[], bundle = false): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (canon(a[i], { bundle }) !== canon(b[i], { bundle })) return false;
    if (bundle) {
      // seconds → ms: equal to within rounding (a few ulps of the larger time)
      const ta = times(a[i]);
      const tb = times(b[i]);
      if (ta.length !== tb.length) return false;
      for (let k = 0; k < ta.length; k++) {
        const x = ta[k];
        const y = tb[k];
        if (x === undefined || y === undefined) {
          if (x !== y) return false;
        } else if (Math.abs(x - y) > 1e-12 * Math.max(Math.abs(x), Math.abs(y), 1e6)) return false;
      }
    }
    if (JSON.stringify(a[i].incomplete ?? []) !== JSON.stringify(b[i].incomplete ?? [])) return false;
  }
  return true;
}

/** Runs `n` mutants from `seed`; returns the counts and every failure (empty when all held). */
export function fuzzTraces(
  corpus: Corpus,
  n: number,
  seed: number,
  onFailure?: (m: Mutant, what: string) => void,
): FuzzCounts {
  const rand = mulberry32(seed);
  const c: FuzzCounts = {
    mutants: 0,
    byFormat: {},
    formatErrors: 0,
    accepted: 0,
    rolloutsRead: 0,
    issues: 0,
    keptChecked: 0,
    roundTrips: 0,
    chunkedChecks: 0,
    maxMs: 0,
    failures: [],
  };
  for (let k = 0; k < n; k++) {
    const m = makeMutant(rand, corpus);
    c.mutants++;
    c.byFormat[m.format] = (c.byFormat[m.format] ?? 0) + 1;
    const fail = (what: string) => {
      onFailure?.(m, what);
      if (c.failures.length < 20) c.failures.push(`mutant ${k} (seed ${seed}, ${m.format}): ${what}`);
    };
    const t0 = performance.now();
    let batch: ReturnType<typeof parseTraceText> | null = null;
    try {
      batch = parseTraceText(m.text);
    } catch (e) {
      if (e instanceof TraceFormatError) c.formatErrors++;
      else fail(`threw ${(e as Error).stack ?? e}`);
    }
    const ms = performance.now() - t0;
    c.maxMs = Math.max(c.maxMs, ms);
    if (ms > 5000) fail(`took ${ms.toFixed(0)} ms`);
    const exp = expected(m.format, m.units);
    if (!batch) {
      if (exp.lines.length || exp.byRollout.size) fail('format error although valid records were untouched');
      continue;
    }
    c.rolloutsRead += batch.rollouts.length;
    c.issues += batch.issues.length;
    for (const i of batch.issues) {
      const bad = checkIssue(i);
      if (bad) fail(bad);
    }
    // every untouched record is kept with the content it has alone
    if (EVENT_FORMATS.has(m.format)) {
      const got = new Map<string, string[]>();
      for (const r of batch.rollouts) got.set(r.rolloutId, [...(got.get(r.rolloutId) ?? []), canon(r)]);
      for (const [rid, want] of exp.byRollout) {
        c.keptChecked++;
        const shortId = rid.slice(rid.indexOf(':') + 1);
        const have = got.get(shortId) ?? [];
        if (!have.includes(want)) {
          const g = have[0] ?? '';
          let d = 0;
          while (d < want.length && want[d] === g[d]) d++;
          fail(
            `rollout ${shortId} (all its events untouched) not kept as it was: ${have.length ? `differs at ${d}: …${g.slice(Math.max(0, d - 60), d + 60)}… instead of …${want.slice(Math.max(0, d - 60), d + 60)}…` : 'missing'}`,
          );
        }
      }
    } else {
      const got = batch.rollouts.map((r) => canon(r, { context: CONTEXT_IDS.has(m.format) }));
      for (const want of exp.lines) {
        c.keptChecked++;
        const at = got.indexOf(want);
        if (at < 0) fail(`an untouched record was not kept: ${want.slice(0, 120)}`);
        else got.splice(at, 1);
      }
    }
    if (batch.rollouts.length === 0) continue;
    c.accepted++;
    // accept → write → read: JSONL and the events bundle
    try {
      const jsonl = toJsonlTrace(batch.rollouts);
      const back = parseTraceText(jsonl);
      if (back.issues.length)
        fail(
          `its JSONL reads back with issues: ${back.issues
            .map((i) => `${i.where}: ${i.field} ${i.message}`)
            .join('; ')
            .slice(0, 300)}`,
        );
      else if (!sameRollouts(back.rollouts, batch.rollouts)) fail('its JSONL reads back different');
      else if (toJsonlTrace(back.rollouts) !== jsonl) fail('its JSONL is not written the same twice');
      const bundle = [...aglEventsBundleChunks(batch.rollouts)].join('');
      if (bundle !== `${JSON.stringify(toAglEventsBundle(batch.rollouts))}\n`)
        fail('the bundle chunks differ from the bundle');
      const fromBundle = parseTraceText(bundle);
      if (fromBundle.issues.some((i) => i.severity !== 'warning'))
        fail(
          `its events bundle reads back with issues: ${fromBundle.issues
            .map((i) => `${i.where}: ${i.field} ${i.message}`)
            .join('; ')
            .slice(0, 300)}`,
        );
      else if (!sameRollouts(fromBundle.rollouts, batch.rollouts, true))
        fail('its events bundle reads back different');
      c.roundTrips++;
    } catch (e) {
      fail(`round trip threw ${(e as Error).stack ?? e}`);
    }
    // the same bytes in random chunks (multi-byte characters split too)
    if (k % 4 === 0) {
      const bytes = new TextEncoder().encode(m.text);
      const dec = new TextDecoder();
      const reader = new TraceReader();
      for (let at = 0; at < bytes.length; ) {
        const len = 1 + Math.floor(rand() * (rand() < 0.3 ? 7 : 5000));
        const s = dec.decode(bytes.subarray(at, at + len), { stream: true });
        if (s) reader.push(s);
        at += len;
      }
      const tail = dec.decode();
      if (tail) reader.push(tail);
      const chunked = reader.finish();
      // lone surrogates the mutation left become U+FFFD in UTF-8: compare with what the bytes say
      const whole = new TextDecoder().decode(bytes);
      const ref = whole === m.text ? batch : parseTraceText(whole);
      if (
        !sameRollouts(chunked.rollouts, ref.rollouts) ||
        JSON.stringify(chunked.issues) !== JSON.stringify(ref.issues)
      )
        fail('reading it in chunks gives a different result');
      c.chunkedChecks++;
    }
  }
  return c;
}
