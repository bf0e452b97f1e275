/// <reference lib="webworker" />
/**
 * The lab worker: reads and parses trace files, builds training rows and computes every weight, so the page
 * thread only renders. Compute requests are coalesced: when several arrive while one runs, only the newest is
 * computed (a user flicking through toggles sees the last one, never a queue).
 */
import type { ChatTokenizer } from '../../core/tokenize/tokenizer';
import type { TraceBatch } from '../../core/trace/types';
import { combineTraces, compute, newBuildCache, parseTrace, splitResult } from './pipeline';
import { checkToWorker, type FromWorker, type ToWorker } from './protocol';
import { readStreamText } from './readText';
import { retokView } from './retokView';
import { loadPolicyTokenizer, loadQwen3Tokenizer, tokenizerFor, tokenTexts } from './tokenizerLoader';

declare const self: DedicatedWorkerGlobalScope;

let trace: TraceBatch | null = null;
let tok: ChatTokenizer | null = null;
/** ids whose texts the page already has */
let known = new Set<number>();
const cache = newBuildCache();
/** build serial of the rows the page has */
let sentSerial = -1;
let pending: Extract<ToWorker, { type: 'compute' }> | null = null;
let running = false;

// Every trace with token ids needs the vocabulary: start loading it as soon as the worker starts, in parallel
// with the page fetching the sample list and the sample itself. A failure is reported by the import that needs it.
loadQwen3Tokenizer().catch(() => {});

function post(m: FromWorker) {
  self.postMessage(m);
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

async function runImport(msg: Extract<ToWorker, { type: 'import' }>) {
  const { id, source } = msg;
  // The vocabulary (11 MB) loads while the trace is read and parsed, not after.
  const tokLoad = loadQwen3Tokenizer();
  tokLoad.catch(() => {}); // awaited (and reported) below
  const progress = (phase: 'read' | 'parse', done: number, total: number) =>
    post({ type: 'progress', id, phase, done, total });
  // A sample may be several files (e.g. an expert's and a random engine's attempts at the same tasks): each is
  // read and parsed on its own, then combined into one trace.
  const parts: { name: string; trace: TraceBatch; text: string; format: string; lines: number }[] = [];
  const inputs =
    source.kind === 'url'
      ? source.urls.map((u) => ({ url: u, name: u.slice(u.lastIndexOf('/') + 1) }))
      : [{ url: null, name: source.name }];
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
    const text = await readStreamText(stream, total, (d, t) => progress('read', d, t));
    progress('parse', 0, text.length);
    const one = parseTrace(text, input.name, (d, t) => progress('parse', d, t));
    parts.push({
      name: input.name,
      trace: one.trace,
      text,
      format: one.summary.format,
      lines: one.summary.lines,
    });
  }
  const combined = parts.length === 1 ? parts[0].trace : combineTraces(parts);
  const parsed = {
    trace: combined,
    summary: {
      name: source.name,
      lines: parts.reduce((n, p) => n + p.lines, 0),
      format: [...new Set(parts.map((p) => p.format))].join(' + '),
    },
  };
  const chars = parts.reduce((n, p) => n + p.text.length, 0);
  const ids: ArrayLike<number>[] = [];
  for (const r of parsed.trace.rollouts)
    for (const c of r.calls) {
      if (c.promptTokenIds) ids.push(c.promptTokenIds);
      if (c.responseTokenIds) ids.push(c.responseTokenIds);
    }
  let tokError: string | null = null;
  // a trace names its vocabulary when it is not Qwen3's (the project's policy: remote agl-cpu runs)
  const wanted = tokenizerFor(parsed.trace);
  if (ids.length > 0 && tok?.name !== wanted) {
    try {
      tok = wanted === 'policy' ? await loadPolicyTokenizer() : await tokLoad;
    } catch (e) {
      tok = null;
      tokError = message(e);
    }
  }
  trace = parsed.trace;
  known = new Set();
  post({
    type: 'imported',
    id,
    summary: {
      ...parsed.summary,
      bytes: chars,
      tokenizer: ids.length && tok ? tok.name : null,
      tokenizerError: tokError,
    },
    trace: parsed.trace,
    tokenText: newTexts(ids),
  });
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
      const tokenText = fresh ? newTexts([result.batch.responseIds, result.batch.promptIds]) : new Map();
      sentSerial = rows.buildSerial;
      post({ type: 'computed', id: msg.id, rows: fresh ? rows : null, weights, tokenText });
    } catch (e) {
      post({ type: 'failed', id: msg.id, message: message(e) });
    }
    // let newer requests arrive before the next round
    await new Promise((r) => setTimeout(r, 0));
  }
  running = false;
}

self.onmessage = (e: MessageEvent) => {
  let msg: ToWorker;
  try {
    msg = checkToWorker(e.data);
  } catch (err) {
    const id = typeof e.data?.id === 'number' ? e.data.id : -1;
    post({ type: 'failed', id, message: message(err) });
    return;
  }
  if (msg.type === 'import') {
    runImport(msg).catch((err) => post({ type: 'failed', id: msg.id, message: message(err) }));
  } else if (msg.type === 'retok') {
    (async () => {
      if (!trace) throw new Error('no trace loaded yet');
      tok ??= await loadQwen3Tokenizer();
      const view = retokView(tok, trace, msg.rollout, msg.call);
      post({ type: 'retok', id: msg.id, view, tokenText: newTexts([view.engine, view.retokenized]) });
    })().catch((err) => post({ type: 'failed', id: msg.id, message: message(err) }));
  } else {
    pending = msg;
    if (!running) void runCompute();
  }
};
