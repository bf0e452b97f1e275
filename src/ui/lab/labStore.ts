/**
 * The loaded data (not view state: nothing here goes into the URL): the imported trace, the import's progress
 * and report, and the latest computed batch and weights. All heavy work happens in the lab worker; replies to
 * superseded requests are dropped by id.
 */
import { create } from 'zustand';
import type { RetokCallView } from '../../core/tokenize/retokenizationView';
import type { TraceBatch } from '../../core/trace/types';
import type { BuiltRows, ComputeOptions, ComputeResult } from './pipeline';
import {
  checkFromWorker,
  type FromWorker,
  type ImportReport,
  type ImportSource,
  type ImportSummary,
  type Phase,
} from './protocol';

export interface LabState {
  /** name of the loaded (or loading) source */
  source: string | null;
  /** what the trace on screen came from: a bundled sample (a link reproduces it) or a file (a link cannot) */
  shownKind: ImportSource['kind'] | null;
  /** the name of a source that failed to load while an earlier trace stayed on screen */
  failedSource: string | null;
  progress: { phase: Phase; done: number; total: number } | null;
  importError: string | null;
  summary: ImportSummary | null;
  /** incomplete / renamed rollouts and whether anything can be trained on */
  report: ImportReport | null;
  trace: TraceBatch | null;
  /** leave out rollouts with a part that could not be read (kept for the next import too) */
  excludeIncomplete: boolean;
  /** text of every token id in the trace (empty when it has no ids) */
  tokenText: Map<number, string>;
  result: ComputeResult | null;
  /** options the current result was computed with */
  resultOptions: ComputeOptions | null;
  /** the options last asked for: while they differ from `resultOptions`, the result on screen is stale */
  requestedOptions: ComputeOptions | null;
  /** the result shown before the last change of options on the same trace (the page's ghosts and deltas) */
  previous: { result: ComputeResult; options: ComputeOptions } | null;
  computeError: string | null;
  /** the retokenization view last asked for, and any error computing it */
  retok: RetokCallView | null;
  retokError: string | null;
  importSource: (source: ImportSource) => void;
  setExcludeIncomplete: (exclude: boolean) => void;
  compute: (options: ComputeOptions) => void;
  requestRetok: (rollout: number, call: number) => void;
}

let worker: Worker | null = null;
let nextId = 1;
let importId = 0;
let computeId = 0;
let retokId = 0;
/** the kind of the source being imported (becomes `shownKind` once it is on screen) */
let importKind: ImportSource['kind'] | null = null;
/** the rows the worker sent last (replies that only carry weights refer to them) */
let lastRows: BuiltRows | null = null;
const computeOptions = new Map<number, ComputeOptions>();

function getWorker(): Worker {
  if (worker) return worker;
  worker = new Worker(new URL('./lab.worker.ts', import.meta.url), { type: 'module', name: 'lab' });
  worker.onmessage = (e) => {
    let m: FromWorker;
    try {
      m = checkFromWorker(e.data);
    } catch (err) {
      useLab.setState({ computeError: (err as Error).message });
      return;
    }
    onReply(m);
  };
  // A worker that dies (out of memory on a huge file, a crash) is replaced on the next request: the page keeps
  // what it shows and stays usable.
  const dead = worker;
  worker.onerror = (e) => {
    e.preventDefault?.();
    if (worker === dead) worker = null;
    dead.terminate();
    lastRows = null;
    useLab.setState({
      importError: `the lab worker stopped (${e.message || 'no reason given'}); load a trace again`,
      progress: null,
    });
  };
  worker.onmessageerror = () => {
    useLab.setState({ importError: 'a reply from the lab worker could not be read', progress: null });
  };
  return worker;
}

/** Token texts are global per tokenizer: every reply's new texts are kept, even a superseded one's. */
function addTexts(texts: Map<number, string>) {
  if (texts.size === 0) return;
  const merged = new Map(useLab.getState().tokenText);
  for (const [id, t] of texts) merged.set(id, t);
  useLab.setState({ tokenText: merged });
}

function onReply(m: FromWorker) {
  const set = useLab.setState;
  if (m.type === 'texts' || m.type === 'retok') addTexts(m.tokenText);
  if (m.type === 'texts') return;
  if (m.type === 'computed' && m.rows) lastRows = m.rows;
  if (m.id === retokId) {
    if (m.type === 'retok') set({ retok: m.view, retokError: null });
    else if (m.type === 'failed') set({ retokError: m.message });
    return;
  }
  if (m.id === importId) {
    if (m.type === 'progress') set({ progress: { phase: m.phase, done: m.done, total: m.total } });
    else if (m.type === 'imported')
      set({
        progress: null,
        importError: null,
        failedSource: null,
        shownKind: importKind,
        summary: m.summary,
        report: m.report,
        trace: m.trace,
        tokenText: m.tokenText,
        result: null,
        resultOptions: null,
        previous: null,
        retok: null,
      });
    else if (m.type === 'failed') {
      // the trace on screen (if any) stays, marked as the one loaded before this source failed
      const st = useLab.getState();
      set({ progress: null, importError: m.message, failedSource: st.trace ? st.source : null });
    }
    return;
  }
  if (m.id === computeId) {
    if (m.type === 'computed') {
      if (!lastRows || lastRows.buildSerial !== m.weights.buildSerial) {
        set({
          computeError: `lab worker: weights for rows build ${m.weights.buildSerial} arrived without those rows`,
        });
        return;
      }
      const result: ComputeResult = { ...lastRows, ...m.weights };
      const st = useLab.getState();
      const options = computeOptions.get(m.id) ?? null;
      // the previous result stays the reference of the ghosts until the options actually change
      const changed =
        st.result &&
        st.resultOptions &&
        options &&
        JSON.stringify(st.resultOptions) !== JSON.stringify(options);
      set({
        result,
        resultOptions: options,
        computeError: null,
        previous:
          changed && st.result && st.resultOptions
            ? { result: st.result, options: st.resultOptions }
            : st.previous,
      });
    } else if (m.type === 'failed') set({ computeError: m.message });
  }
  computeOptions.delete(m.id);
}

/** Starts the worker (and its tokenizer download) ahead of the first import. */
export function warmLabWorker(): void {
  getWorker();
}

export const useLab = create<LabState>((set) => ({
  source: null,
  shownKind: null,
  failedSource: null,
  progress: null,
  importError: null,
  summary: null,
  report: null,
  trace: null,
  excludeIncomplete: false,
  tokenText: new Map(),
  result: null,
  resultOptions: null,
  requestedOptions: null,
  previous: null,
  computeError: null,
  retok: null,
  retokError: null,
  importSource: (source) => {
    importId = nextId++;
    importKind = source.kind;
    set({
      source: source.name,
      importError: null,
      failedSource: null,
      progress: { phase: 'read', done: 0, total: 0 },
    });
    getWorker().postMessage({
      type: 'import',
      id: importId,
      source,
      excludeIncomplete: useLab.getState().excludeIncomplete,
    });
  },
  setExcludeIncomplete: (exclude) => {
    set({ excludeIncomplete: exclude });
    if (!useLab.getState().trace) return;
    importId = nextId++;
    importKind = useLab.getState().shownKind;
    getWorker().postMessage({ type: 'filter', id: importId, excludeIncomplete: exclude });
  },
  compute: (options) => {
    computeId = nextId++;
    computeOptions.clear();
    computeOptions.set(computeId, options);
    set({ requestedOptions: options });
    getWorker().postMessage({ type: 'compute', id: computeId, options });
  },
  requestRetok: (rollout, call) => {
    retokId = nextId++;
    set({ retokError: null });
    getWorker().postMessage({ type: 'retok', id: retokId, rollout, call });
  },
}));
