/// <reference lib="webworker" />
/**
 * The lab worker: reads and parses trace files, builds training rows and computes every weight, so the page
 * thread only renders. Compute requests are coalesced: when several arrive while one runs, only the newest is
 * computed (a user flicking through toggles sees the last one, never a queue).
 */
import type { TraceBatch } from '../../core/trace/types';
import { compute, parseTrace } from './pipeline';
import { checkToWorker, type FromWorker, type ToWorker } from './protocol';
import { readStreamText } from './readText';
import { loadQwen3Tokenizer, tokenTexts } from './tokenizerLoader';

declare const self: DedicatedWorkerGlobalScope;

let trace: TraceBatch | null = null;
let pending: Extract<ToWorker, { type: 'compute' }> | null = null;
let scheduled = false;

function post(m: FromWorker) {
  self.postMessage(m);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function runImport(msg: Extract<ToWorker, { type: 'import' }>) {
  const { id, source } = msg;
  const progress = (phase: 'read' | 'parse', done: number, total: number) =>
    post({ type: 'progress', id, phase, done, total });
  let stream: ReadableStream<Uint8Array>;
  let total: number;
  if (source.kind === 'url') {
    const res = await fetch(source.url);
    if (!res.ok || !res.body) throw new Error(`${source.name}: HTTP ${res.status} ${res.statusText}`.trim());
    total = Number(res.headers.get('content-length') ?? 0);
    stream = res.body;
  } else {
    total = source.file.size;
    stream = source.file.stream();
  }
  const text = await readStreamText(stream, total, (d, t) => progress('read', d, t));
  const parsed = parseTrace(text, source.name, (d, t) => progress('parse', d, t));
  trace = parsed.trace;
  const ids: ArrayLike<number>[] = [];
  for (const r of parsed.trace.rollouts)
    for (const c of r.calls) {
      if (c.promptTokenIds) ids.push(c.promptTokenIds);
      if (c.responseTokenIds) ids.push(c.responseTokenIds);
    }
  let tokenizer: string | null = null;
  let tokenText = new Map<number, string>();
  if (ids.length > 0) {
    const tok = await loadQwen3Tokenizer();
    tokenizer = tok.name;
    tokenText = tokenTexts(tok, ids);
  }
  post({
    type: 'imported',
    id,
    summary: { ...parsed.summary, bytes: text.length, tokenizer },
    trace: parsed.trace,
    tokenText,
  });
}

function runCompute() {
  scheduled = false;
  const msg = pending;
  pending = null;
  if (!msg) return;
  if (!trace) {
    post({ type: 'failed', id: msg.id, message: 'no trace loaded yet' });
    return;
  }
  try {
    post({ type: 'computed', id: msg.id, result: compute(trace, msg.options) });
  } catch (e) {
    post({ type: 'failed', id: msg.id, message: message(e) });
  }
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
  } else {
    pending = msg;
    if (!scheduled) {
      scheduled = true;
      setTimeout(runCompute, 0);
    }
  }
};
