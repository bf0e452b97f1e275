/// <reference lib="webworker" />
/**
 * The lab worker: reads and parses trace files, builds training rows and computes every weight, so the page
 * thread only renders. Compute requests are coalesced: when several arrive while one runs, only the newest is
 * computed (a user flicking through toggles sees the last one, never a queue).
 */

import { tokenizerNamedBy } from '../../core/tokenize/named';
import { retokenizationView } from '../../core/tokenize/retokenizationView';
import { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { renameDuplicateIds } from '../../core/trace/dedupe';
import { nothingToTrainOn, traceInventory } from '../../core/trace/inventory';
import { type ParsedTrace, TraceReader, tokenizeTextOnly } from '../../core/trace/io';
import { excludeIncomplete, type TraceBatch } from '../../core/trace/types';
import { combineTraces, compute, forTransfer, newBuildCache, splitResult } from './pipeline';
import {
  checkToWorker,
  type FromWorker,
  type ImportReport,
  type ImportSummary,
  type ToWorker,
} from './protocol';
import { shareTypedArrays } from './shareArrays';
import { loadPolicyTokenizer, loadQwen3Tokenizer, tokenTexts, tokenTextsSliced } from './tokenizerLoader';

declare const self: DedicatedWorkerGlobalScope;

let trace: TraceBatch | null = null;
/** the whole imported trace (`trace` may leave its incomplete rollouts out) and its summary */
let imported: { trace: TraceBatch; summary: ImportSummary; report: ImportReport } | null = null;
let tok: ChatTokenizer | null = null;
/** ids whose texts the page already has */
let known = new Set<number>();
const cache = newBuildCache();
/**
 * ids of rebuilt rows whose texts the page may not have yet (retokenized prompts, merge windows): decoded after
 * the weights are posted, so a rebuild's picture does not wait for them
 */
let textsPending: ArrayLike<number>[] = [];
/** build serial of the rows the page has */
let sentSerial = -1;
let pending: Extract<ToWorker, { type: 'compute' }> | null = null;
let running = false;

// Every trace with token ids needs the vocabulary: start loading it as soon as the worker starts, in parallel
// with the page fetching the sample list and the sample itself. A failure is reported by the import that needs it.
loadQwen3Tokenizer().then(warmTexts, () => {});

/**
 * Decodes the whole vocabulary's token texts into the per-tokenizer cache while the worker is otherwise idle (a
 * few milliseconds at a time, messages answered in between), so an import later only looks its ids' texts up
 * (a trace over the whole vocabulary needs 150k decodes).
 */
function warmTexts(t: ChatTokenizer): void {
  const all = new Int32Array(t.vocabSize);
  for (let i = 0; i < all.length; i++) all[i] = i;
  void tokenTextsSliced(t, [all], async () => {
    await yieldToRequests();
    return true;
  }).then(() => {
    warmFor = t;
  });
}

/** when the page last asked for something */
let lastRequestAt = Number.NEGATIVE_INFINITY;

/**
 * Background decoding gives way: to an import while it reads and parses, and to the page while it keeps asking
 * (toggles), so on a machine with few cores it never competes with the answers for a core.
 */
async function yieldToRequests(): Promise<void> {
  await new Promise((r) => setTimeout(r, 0));
  while (importing || performance.now() - lastRequestAt < QUIET_MS)
    await new Promise((r) => setTimeout(r, 50));
}
/** how long after a request background decoding waits */
const QUIET_MS = 500;

/** the tokenizer whose whole vocabulary is decoded (warmTexts) */
let warmFor: ChatTokenizer | null = null;
/** an import is reading or parsing */
let importing = false;

function post(m: FromWorker, transfer: Transferable[] = []) {
  self.postMessage(m, transfer);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Texts of the ids in `arrays` that the page does not have yet. */
function newTexts(arrays: ArrayLike<number>[]): Map<number, string> {
  if (!tok) return new Map();
  const out = tokenTexts(tok, arrays);
  for (const id of known) out.delete(id);
  for (const id of out.keys()) known.add(id);
  return out;
}

/** bumped by each import: a decoding of the texts of an earlier trace stops */
let textsJob = 0;
/** the ids the running decoding covers: a newer one (new rows) takes them over */
let textsInFlight: ArrayLike<number>[] = [];

/**
 * Posts the texts of the pending ids, decoded a few milliseconds at a time so a toggle that arrives meanwhile is
 * computed first.
 */
async function sendPendingTexts(id: number) {
  if (textsPending.length === 0 || !tok) return;
  const arrays = [...textsInFlight, ...textsPending];
  textsInFlight = arrays;
  textsPending = [];
  const job = ++textsJob;
  const t = tok;
  const texts = await tokenTextsSliced(t, arrays, async () => {
    await yieldToRequests();
    return job === textsJob && tok === t;
  });
  if (!texts || job !== textsJob) return;
  textsInFlight = [];
  // one message: the page merges it into its map once
  for (const k of known) texts.delete(k);
  for (const k of texts.keys()) known.add(k);
  if (texts.size > 0) post({ type: 'texts', id, tokenText: texts });
}

/**
 * Reads a byte stream into a trace as it arrives: decoded and parsed chunk by chunk (core's streaming
 * TraceReader), so a file of any size is read without ever being one string (V8 stops at 512 MiB).
 */
async function readTrace(
  stream: ReadableStream<Uint8Array>,
  onBytes: (done: number) => void,
): Promise<ParsedTrace> {
  const reader = new TraceReader();
  const decoder = new TextDecoder('utf-8');
  const r = stream.getReader();
  let done = 0;
  let reported = 0;
  for (;;) {
    const next = await r.read();
    if (next.done) break;
    done += next.value.byteLength;
    const text = decoder.decode(next.value, { stream: true });
    if (text) reader.push(text);
    if (done - reported >= 1 << 20) {
      reported = done;
      onBytes(done);
    }
  }
  const tail = decoder.decode();
  if (tail) reader.push(tail);
  onBytes(done);
  return reader.finish();
}

async function runImport(msg: Extract<ToWorker, { type: 'import' }>) {
  const { id, source } = msg;
  // A trace recorded with a brought model carries that model's tokenizer; any other trace uses Qwen3's.
  const own = source.kind === 'file' && source.tokenizer ? source.tokenizer : null;
  if (own) tok = new ChatTokenizer(own.name, own.json, own.config);
  // The vocabulary (11 MB) loads while the trace is read and parsed, not after.
  const tokLoad = loadQwen3Tokenizer();
  tokLoad.catch(() => {}); // awaited (and reported) below
  const progress = (phase: 'read' | 'parse', done: number, total: number) =>
    post({ type: 'progress', id, phase, done, total });
  // A sample may be several files (e.g. an expert's and a random engine's attempts at the same tasks): each is
  // read and parsed on its own, then combined into one trace.
  const parts: { name: string; trace: TraceBatch; bytes: number; format: string; lines: number }[] = [];
  const inputs =
    source.kind === 'url'
      ? source.urls.map((u) => ({ url: u, name: u.slice(u.lastIndexOf('/') + 1) }))
      : [{ url: null, name: source.name }];
  let renamed = 0;
  for (const input of inputs) {
    let stream: ReadableStream<Uint8Array>;
    let total: number;
    if (input.url !== null) {
      const res = await fetch(input.url);
      if (!res.ok || !res.body) throw new Error(`${input.name}: HTTP ${res.status} ${res.statusText}`.trim());
      total = Number(res.headers.get('content-length') ?? 0);
      stream = res.body;
    } else {
      const file = (source as Extract<typeof source, { kind: 'file' }>).file;
      total = file.size;
      stream = file.stream();
    }
    let one: ParsedTrace;
    let bytesRead = 0;
    try {
      one = await readTrace(stream, (d) => {
        bytesRead = d;
        progress('read', d, Math.max(total, d));
      });
    } catch (e) {
      throw new Error(inputs.length > 1 ? `${input.name}: ${message(e)}` : message(e));
    }
    // A text-only file (verl / SkyRL dumps, API logs without ids) gets ids from the tokenizer, marked as
    // retokenized at import (the retokenization view says which numbers that affects).
    if ((one.counters.text_only_calls ?? 0) > 0) {
      const t = own ? tok : await tokLoad.catch(() => null);
      if (t) {
        let made = 0;
        for (const r of one.rollouts) made += tokenizeTextOnly(r, t);
        one.counters.text_only_calls -= made;
        one.counters.retokenized_calls = (one.counters.retokenized_calls ?? 0) + made;
      }
    }
    // Two rollouts with one id (runs appended to one file) stay two rollouts: the later one is renamed.
    const dedup = renameDuplicateIds(one.rollouts, 'rollout ids');
    renamed += dedup.renamed;
    parts.push({
      name: input.name,
      trace: {
        rollouts: dedup.rollouts,
        issues: [...one.issues, ...dedup.issues],
        counters: one.counters,
      },
      bytes: bytesRead,
      format: one.format,
      lines: one.lines,
    });
  }
  const combined = parts.length === 1 ? parts[0].trace : combineTraces(parts);
  const inv = traceInventory(combined.rollouts);
  const summary: ImportSummary = {
    name: source.name,
    lines: parts.reduce((n, p) => n + p.lines, 0),
    format: [...new Set(parts.map((p) => p.format))].join(' + '),
    bytes: parts.reduce((n, p) => n + p.bytes, 0),
    tokenizer: null,
    tokenizerError: null,
  };
  const report: ImportReport = {
    incomplete: inv.incomplete,
    excludedIncomplete: msg.excludeIncomplete === true,
    renamed,
    nothingToTrainOn: nothingToTrainOn(inv),
  };
  const ids: ArrayLike<number>[] = [];
  for (const r of combined.rollouts)
    for (const c of r.calls) {
      if (c.promptTokenIds) ids.push(c.promptTokenIds);
      if (c.responseTokenIds) ids.push(c.responseTokenIds);
    }
  // a trace names its vocabulary when it is not Qwen3's (the project's policy: its own training runs)
  const wanted = own ? own.name : tokenizerNamedBy(combined).name;
  if (ids.length > 0 && tok?.name !== wanted) {
    try {
      tok = wanted === 'policy' ? await loadPolicyTokenizer() : await tokLoad;
    } catch (e) {
      tok = null;
      summary.tokenizerError = message(e);
    }
  }
  summary.tokenizer = ids.length && tok ? tok.name : null;
  // the page gets the trace's token ids and log-probs as shared memory, not as a copy
  shareTypedArrays(combined.rollouts);
  const shown = report.excludedIncomplete ? excludeIncomplete(combined) : combined;
  // The worker switches to the new trace only once the page has it: a trace that fails to reach the page
  // (too large to copy) leaves both on the previous one.
  const prevKnown = known;
  known = new Set();
  textsPending = [];
  textsInFlight = [];
  textsJob++;
  // The trace's token texts come with it once the vocabulary is decoded (lookups, see warmTexts); before that
  // they follow the first weights, so the first picture does not wait for 150k decodes.
  const warm = tok !== null && warmFor === tok;
  if (!warm) textsPending = ids;
  try {
    post({
      type: 'imported',
      id,
      summary,
      report,
      trace: shown,
      tokenText: warm ? newTexts(ids) : new Map(),
    });
  } catch (e) {
    known = prevKnown;
    throw new Error(`the trace was read but could not be handed to the page: ${message(e)}`);
  }
  imported = { trace: combined, summary, report };
  trace = shown;
}

/** The loaded trace with or without its incomplete rollouts. */
function runFilter(msg: Extract<ToWorker, { type: 'filter' }>) {
  if (!imported) throw new Error('no trace loaded yet');
  const report = { ...imported.report, excludedIncomplete: msg.excludeIncomplete };
  const shown = msg.excludeIncomplete ? excludeIncomplete(imported.trace) : imported.trace;
  const summary = imported.summary;
  post({ type: 'imported', id: msg.id, summary, report, trace: shown, tokenText: new Map() });
  imported.report = report;
  trace = shown;
}

async function runCompute() {
  running = true;
  while (pending) {
    const msg = pending;
    pending = null;
    try {
      if (!trace) throw new Error('no trace loaded yet');
      if (msg.options.tokenSource === 'retokenize' && !tok) tok = await loadQwen3Tokenizer();
      const result = compute(trace, msg.options, tok ?? undefined, cache);
      const { rows, weights } = splitResult(result);
      const fresh = rows.buildSerial !== sentSerial;
      // the merge view aligns the ids around each break, which may lie outside the rows (retokenized prompts)
      const windows = result.mergeFailures.flatMap((f) => [f.contextWindow, f.promptWindow]);
      // rows are rebuilt rarely and read-only: shared with the page, like the trace
      if (fresh) shareTypedArrays(rows.batch);
      if (fresh) textsPending.push(result.batch.responseIds, result.batch.promptIds, ...windows);
      sentSerial = rows.buildSerial;
      const sent = forTransfer(weights);
      post({ type: 'computed', id: msg.id, rows: fresh ? rows : null, weights: sent.weights }, sent.transfer);
      void sendPendingTexts(msg.id);
    } catch (e) {
      post({ type: 'failed', id: msg.id, message: message(e) });
    }
    // let newer requests arrive before the next round
    await new Promise((r) => setTimeout(r, 0));
  }
  running = false;
}

self.onmessage = (e: MessageEvent) => {
  lastRequestAt = performance.now();
  let msg: ToWorker;
  try {
    msg = checkToWorker(e.data);
  } catch (err) {
    const id = typeof e.data?.id === 'number' ? e.data.id : -1;
    post({ type: 'failed', id, message: message(err) });
    return;
  }
  if (msg.type === 'import') {
    importing = true;
    runImport(msg)
      .catch((err) => post({ type: 'failed', id: msg.id, message: message(err) }))
      .finally(() => {
        importing = false;
      });
  } else if (msg.type === 'filter') {
    try {
      runFilter(msg);
    } catch (err) {
      post({ type: 'failed', id: msg.id, message: message(err) });
    }
  } else if (msg.type === 'retok') {
    (async () => {
      if (!trace) throw new Error('no trace loaded yet');
      tok ??= await loadQwen3Tokenizer();
      const view = retokenizationView(tok, trace, msg.rollout, msg.call);
      post({ type: 'retok', id: msg.id, view, tokenText: newTexts([view.engine, view.retokenized]) });
    })().catch((err) => post({ type: 'failed', id: msg.id, message: message(err) }));
  } else {
    pending = msg;
    if (!running) void runCompute();
  }
};
