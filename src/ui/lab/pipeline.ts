/**
 * What the lab worker runs: parse a trace file (`parseTraceText`) and compute core's trainer view
 * (`computeTrainerView`, the same function `lab analyze` calls) with the page's options, then cut it into a flat,
 * clonable view model (typed arrays and plain objects) for the page: the selected mode's per-token weights and
 * every mode's per-rollout totals.
 */

import type { BuildCounters, BuildResult } from '../../core/aggregate/buildTrainingBatch';
import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import type { TrainingBatch } from '../../core/batch/types';
import { type NoRowsEntry, whyNoRows } from '../../core/pipeline/noRows';
import type { TrainerOptions } from '../../core/pipeline/options';
import {
  buildKey,
  buildRows,
  type CorrectionMemo,
  computeTrainerView,
  lossModeFreeKey,
  prepareKey,
  prepareTrainerBatch,
  type TrainerBatch,
  type TrainerCounters,
  type TrainerView,
  withLossMode,
} from '../../core/pipeline/trainer';
import type { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { parseTraceText } from '../../core/trace/io';
import type { TraceBatch } from '../../core/trace/types';
import { finiteExtent } from '../tokens/colorScale';
import type { ImportSummary } from './protocol';

export { combineTraces } from '../../core/trace/combine';

/** The page computes with core's trainer options, unchanged. */
export type ComputeOptions = TrainerOptions;

export interface ModeWeights {
  name: string;
  /** the upstream key that selects it */
  key: string;
  /** per source rollout: Σ of its tokens' effective gradient weights under this mode */
  rolloutWeight: Float64Array;
}

export interface ComputeResult {
  /** which build of the rows this is (same serial → same batch object on the worker side) */
  buildSerial: number;
  /**
   * which computation of steps 2–9 this is: results with the same serial (a loss-mode change) have the same
   * rows status, mask, advantages and per-mode weights
   */
  viewSerial: number;
  batch: TrainingBatch;
  mergeFailures: MergeFailure[];
  counters: BuildCounters;
  /** per row: trained (0), is_drop (1), trimmed (2) */
  rowStatus: Uint8Array;
  /** per row: its position in the trainer's order, or -1 */
  trainPosition: Int32Array;
  trainerCounters: TrainerCounters;
  /** nothing left to train on: the trainer skips the step */
  skipped: boolean;
  /** per batch token: the mask as trained (rejection sampling applied, 0 in untrained rows) */
  responseMask: Uint8Array;
  /** per batch token: the estimator's advantages, in `advantagesDType` upstream */
  tokenAdvantage: Float32Array;
  advantagesDType: string;
  /** per batch token: ∂L/∂logπ at ratio 1 under the selected mode */
  tokenWeight: Float32Array;
  /** finite [min, max] of `tokenWeight` over the batch's mask tokens (the weight colour scale's domain) */
  tokenWeightExtent: [number, number];
  /** per training row / per source rollout, under the selected loss mode */
  rowWeight: Float64Array;
  rolloutWeight: Float64Array;
  /** per group (data id) of the trained rows, in first-appearance order */
  groupKeys: string[];
  groupWeight: Float64Array;
  /** per group: Σ of the negative token weights (pushing log-probs up) and of the positive ones (down) */
  groupNegative: Float64Array;
  groupPositive: Float64Array;
  /** every loss mode on the same batch, in core's registry order */
  modes: ModeWeights[];
  /** the releases whose semantics these numbers reproduce */
  reference: string;
  /** rollouts with no training rows, no gradient or no reward: the rule that did it, and where */
  noRows: NoRowsEntry[];
}

export function parseTrace(
  text: string,
  name: string,
  onProgress: (done: number, total: number) => void,
): { trace: TraceBatch; summary: Omit<ImportSummary, 'bytes' | 'tokenizer' | 'tokenizerError'> } {
  const parsed = parseTraceText(text, { onProgress });
  const trace: TraceBatch = { rollouts: parsed.rollouts, issues: parsed.issues, counters: parsed.counters };
  const format: string = parsed.format;
  let lines = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
  if (text.length > 0 && !text.endsWith('\n')) lines++;
  return { trace, summary: { name, lines, format } };
}

/**
 * The last computation per trace, stage by stage, so a toggle recomputes only the stages the toggled option
 * reads: rows keyed by the sample-building options (sample building dominates on large traces), the trainer's
 * batch (steps 2–4) by `prepareKey`, and the whole view by every option but the loss mode (a loss-mode change
 * only picks another of the modes, all computed).
 */
export interface BuildCache {
  trace: TraceBatch | null;
  key: string;
  built: BuildResult | null;
  /** bumped each time rows are rebuilt */
  serial: number;
  prepKey: string;
  prepared: TrainerBatch | null;
  /** rollout correction (step 7) on `prepared`, kept across estimator toggles */
  correction: CorrectionMemo;
  viewKey: string;
  view: TrainerView | null;
  noRows: NoRowsEntry[];
  /** bumped each time the view is recomputed (not on a loss-mode change) */
  viewSerial: number;
}

export function newBuildCache(): BuildCache {
  return {
    trace: null,
    key: '',
    built: null,
    serial: 0,
    prepKey: '',
    prepared: null,
    correction: { tb: null, key: '', result: null },
    viewKey: '',
    view: null,
    noRows: [],
    viewSerial: 0,
  };
}

function build(
  trace: TraceBatch,
  o: TrainerOptions,
  tokenizer: ChatTokenizer | undefined,
  cache?: BuildCache,
) {
  const key = buildKey(o);
  if (cache && cache.trace === trace && cache.key === key && cache.built) return cache.built;
  const built = buildRows(trace.rollouts, o, tokenizer);
  if (cache) Object.assign(cache, { trace, key, built, serial: cache.serial + 1 });
  return built;
}

/** The page's model of a trainer view. */
export function toComputeResult(
  view: TrainerView,
  buildSerial: number,
  noRows: NoRowsEntry[] = [],
  viewSerial = 0,
): ComputeResult {
  const sel = view.selected;
  return {
    buildSerial,
    viewSerial,
    batch: view.batch,
    mergeFailures: view.build.mergeFailures,
    counters: view.build.counters,
    rowStatus: view.rowStatus,
    trainPosition: view.trainPosition,
    trainerCounters: view.counters,
    skipped: view.skipped,
    responseMask: view.responseMask,
    tokenAdvantage: view.advantages,
    advantagesDType: view.advantagesDType,
    tokenWeight: sel.weights,
    tokenWeightExtent: finiteExtent(sel.weights, view.batch.mask),
    rowWeight: sel.rowSums,
    rolloutWeight: sel.rolloutSums,
    groupKeys: view.groups.keys,
    groupWeight: view.groups.sums,
    groupNegative: view.groups.negative,
    groupPositive: view.groups.positive,
    modes: view.modes.map((m) => ({ name: m.name, key: m.key, rolloutWeight: m.rolloutSums })),
    reference: view.reference.label,
    noRows,
  };
}

export function compute(
  trace: TraceBatch,
  o: TrainerOptions,
  tokenizer?: ChatTokenizer,
  cache?: BuildCache,
): ComputeResult {
  const built = build(trace, o, tokenizer, cache);
  if (!cache) {
    const view = computeTrainerView({ rollouts: trace.rollouts, options: o, tokenizer, build: built });
    return toComputeResult(view, 0, whyNoRows(trace.rollouts, view.options, view, tokenizer));
  }
  const viewKey = lossModeFreeKey(o);
  if (cache.view && cache.view.build === built && cache.viewKey === viewKey) {
    const view = withLossMode(cache.view, o);
    return toComputeResult(view, cache.serial, cache.noRows, cache.viewSerial);
  }
  const prepKey = prepareKey(o);
  const prepared =
    cache.prepared && cache.prepared.build === built && cache.prepKey === prepKey
      ? cache.prepared
      : prepareTrainerBatch(trace.rollouts, built, o);
  const view = computeTrainerView({
    rollouts: trace.rollouts,
    options: o,
    tokenizer,
    build: built,
    prepared,
    correction: cache.correction,
  });
  const noRows = whyNoRows(trace.rollouts, view.options, view, tokenizer);
  Object.assign(cache, { prepKey, prepared, viewKey, view, noRows, viewSerial: cache.viewSerial + 1 });
  return toComputeResult(view, cache.serial, noRows, cache.viewSerial);
}

/**
 * A copy of a weights part whose typed arrays are its own, and their buffers: the worker keeps its cached arrays
 * and hands the copies over without a second copy on the page's thread (a transfer is O(1) on the receiving side).
 */
export function forTransfer(w: WeightsPart): { weights: WeightsPart; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const own = <T>(v: T): T => {
    if (!ArrayBuffer.isView(v)) return v;
    const c = (v as unknown as Float32Array).slice();
    transfer.push(c.buffer as ArrayBuffer);
    return c as unknown as T;
  };
  const out = { ...w } as Record<string, unknown>;
  for (const [k, v] of Object.entries(w)) out[k] = own(v);
  const weights = out as unknown as WeightsPart;
  weights.modes = w.modes.map((m) => ({ ...m, rolloutWeight: own(m.rolloutWeight) }));
  return { weights, transfer };
}

/** The rows part of a result: sent to the page only when it was rebuilt. */
export type BuiltRows = Pick<ComputeResult, 'buildSerial' | 'batch' | 'mergeFailures' | 'counters'>;
export type WeightsPart = Omit<ComputeResult, 'batch' | 'mergeFailures' | 'counters'>;

export function splitResult(r: ComputeResult): { rows: BuiltRows; weights: WeightsPart } {
  const { batch, mergeFailures, counters, ...weights } = r;
  return { rows: { buildSerial: r.buildSerial, batch, mergeFailures, counters }, weights };
}
