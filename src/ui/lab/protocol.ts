/**
 * Messages between the page and the lab worker (import, sample building, weights). Defined once here and
 * checked at both ends: a malformed message is answered with a specific error, never acted on.
 */
import { resolveTrainerOptions } from '../../core/pipeline/options';
import type { RetokCallView } from '../../core/tokenize/retokenizationView';
import type { TraceBatch } from '../../core/trace/types';
import { isRecord as isObj } from '../../core/wire';
import type { BuiltRows, ComputeOptions, WeightsPart } from './pipeline';

/** A trace's own tokenizer (a brought model's), used for its token texts instead of the default Qwen3 one. */
export interface TraceTokenizer {
  name: string;
  json: Record<string, unknown>;
  config: Record<string, unknown>;
}

export type ImportSource =
  | { kind: 'url'; urls: string[]; name: string }
  | { kind: 'file'; file: Blob; name: string; tokenizer?: TraceTokenizer };

export type ToWorker =
  | { type: 'import'; id: number; source: ImportSource; excludeIncomplete?: boolean }
  | { type: 'compute'; id: number; options: ComputeOptions }
  | { type: 'retok'; id: number; rollout: number; call: number }
  /** show the loaded trace with or without its incomplete rollouts (answered with 'imported') */
  | { type: 'filter'; id: number; excludeIncomplete: boolean };

export type Phase = 'read' | 'parse' | 'build';

export interface ImportSummary {
  name: string;
  bytes: number;
  lines: number;
  format: string;
  /** tokenizer used to show token texts, or null when the trace has no token ids */
  tokenizer: string | null;
  /** why token texts are missing (ids are then shown as <id>) */
  tokenizerError: string | null;
}

/** What the import found beyond the records themselves. */
export interface ImportReport {
  /** rollouts with a part that could not be read, in the whole file */
  incomplete: number;
  /** whether they are left out of `trace` */
  excludedIncomplete: boolean;
  /** rollouts renamed because their id was taken by an earlier one */
  renamed: number;
  /** why nothing in the trace can be trained on, or null */
  nothingToTrainOn: string | null;
}

export type FromWorker =
  | { type: 'progress'; id: number; phase: Phase; done: number; total: number }
  | {
      type: 'imported';
      id: number;
      summary: ImportSummary;
      report: ImportReport;
      trace: TraceBatch;
      tokenText: Map<number, string>;
    }
  | {
      type: 'computed';
      id: number;
      /** null when the rows are the ones sent last (only the weights changed) */
      rows: BuiltRows | null;
      weights: WeightsPart;
    }
  /** texts of token ids the page does not have yet (sent after the weights that use them) */
  | { type: 'texts'; id: number; tokenText: Map<number, string> }
  | { type: 'retok'; id: number; view: RetokCallView; tokenText: Map<number, string> }
  | { type: 'failed'; id: number; message: string };

/** Checks a message the worker received; throws with what is wrong. */
export function checkToWorker(v: unknown): ToWorker {
  if (!isObj(v)) throw new Error('lab worker: message is not an object');
  if (typeof v.id !== 'number' || !Number.isInteger(v.id))
    throw new Error('lab worker: message id is not an integer');
  if (v.type === 'import') {
    const s = v.source;
    if (!isObj(s) || typeof s.name !== 'string') throw new Error('lab worker: import.source needs a name');
    if (
      s.kind === 'url' &&
      Array.isArray(s.urls) &&
      s.urls.length > 0 &&
      s.urls.every((u) => typeof u === 'string')
    )
      return v as ToWorker;
    if (s.kind === 'file' && s.file instanceof Blob) {
      const t = s.tokenizer;
      if (t !== undefined && !(isObj(t) && typeof t.name === 'string' && isObj(t.json) && isObj(t.config)))
        throw new Error(
          'lab worker: import.source.tokenizer needs a name and the tokenizer.json / tokenizer_config.json objects',
        );
      return v as ToWorker;
    }
    throw new Error(
      `lab worker: import.source.kind must be 'url' (with a non-empty urls list) or 'file' (with a Blob)`,
    );
  }
  if (v.type === 'compute') {
    if (!isObj(v.options)) throw new Error('lab worker: compute.options is not an object');
    try {
      // the options core computes with, checked by core's own validator (names the upstream key)
      return { type: 'compute', id: v.id, options: resolveTrainerOptions(v.options) };
    } catch (e) {
      throw new Error(`lab worker: compute.options: ${(e as Error).message}`);
    }
  }
  if (v.type === 'filter') {
    if (typeof v.excludeIncomplete !== 'boolean')
      throw new Error('lab worker: filter.excludeIncomplete must be true or false');
    return v as ToWorker;
  }
  if (v.type === 'retok') {
    if (!Number.isInteger(v.rollout) || !Number.isInteger(v.call))
      throw new Error('lab worker: retok needs integer rollout and call indices');
    return v as ToWorker;
  }
  throw new Error(`lab worker: unknown message type ${JSON.stringify(v.type)}`);
}

/** Checks a message the page received from the worker. */
export function checkFromWorker(v: unknown): FromWorker {
  if (!isObj(v) || typeof v.id !== 'number') throw new Error('lab worker reply is not an object with an id');
  switch (v.type) {
    case 'progress':
      if (typeof v.done === 'number' && typeof v.total === 'number') return v as FromWorker;
      break;
    case 'imported':
      if (
        isObj(v.summary) &&
        isObj(v.report) &&
        isObj(v.trace) &&
        Array.isArray(v.trace.rollouts) &&
        v.tokenText instanceof Map
      )
        return v as FromWorker;
      break;
    case 'computed':
      if ((v.rows === null || isObj(v.rows)) && isObj(v.weights)) return v as FromWorker;
      break;
    case 'texts':
      if (v.tokenText instanceof Map) return v as FromWorker;
      break;
    case 'retok':
      if (isObj(v.view) && v.tokenText instanceof Map) return v as FromWorker;
      break;
    case 'failed':
      if (typeof v.message === 'string') return v as FromWorker;
      break;
  }
  throw new Error(`lab worker reply of type ${JSON.stringify(v.type)} is malformed`);
}
