/**
 * What the lab worker runs, on core's own functions: parse a trace file (`parseTraceText`), build training
 * rows (`buildTrainingBatch`), and compute every token's advantage and effective gradient weight under the
 * chosen options (`effectiveWeights`) and under every loss mode at once (`allLossModes`). The result is a flat,
 * clonable view model (typed arrays and plain objects) for the page.
 */

import {
  type BuildCounters,
  buildTrainingBatch,
  type TraceAggregatorLevel,
} from '../../core/aggregate/buildTrainingBatch';
import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import {
  ALL_LOSS_MODES,
  allLossModes,
  effectiveWeights,
  type LossMode,
} from '../../core/algos/effectiveWeights';
import type { TrainingBatch } from '../../core/batch/types';
import type { TokenSource } from '../../core/tokenize/retokenize';
import type { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { parseTraceText } from '../../core/trace/io';
import type { TraceBatch } from '../../core/trace/types';
import type { ImportSummary } from './protocol';

export interface ComputeOptions {
  tokenSource: TokenSource;
  level: TraceAggregatorLevel;
  maxPromptLength: number;
  maxResponseLength: number;
  estimator: string;
  normAdvByStd: boolean;
  rolloutLevel: boolean;
  lossMode: LossMode;
  clipLow: number;
  clipHigh: number;
}

export interface ModeWeights {
  name: string;
  /** per source rollout: Σ of its tokens' effective gradient weights under this mode */
  rolloutWeight: Float64Array;
}

export interface ComputeResult {
  /** which build of the rows this is (same serial → same batch object on the worker side) */
  buildSerial: number;
  batch: TrainingBatch;
  mergeFailures: MergeFailure[];
  counters: BuildCounters;
  /** per batch token */
  tokenAdvantage: Float32Array;
  tokenWeight: Float32Array;
  /** per training row / per source rollout, under the selected loss mode */
  rowWeight: Float64Array;
  rolloutWeight: Float64Array;
  /** per group (data id), in first-appearance order */
  groupKeys: string[];
  groupWeight: Float64Array;
  /** per group: Σ of the negative token weights (pushing log-probs up) and of the positive ones (down) */
  groupNegative: Float64Array;
  groupPositive: Float64Array;
  /** every loss mode on the same batch, in core's order */
  modes: ModeWeights[];
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
 * Several traces as one: rollouts in file order; a rollout id already taken gets `@<end of the file name>`
 * appended (two runs of the same harness reuse ids), and each issue names its file.
 */
export function combineTraces(parts: { name: string; trace: TraceBatch }[]): TraceBatch {
  const seen = new Set<string>();
  const rollouts: TraceBatch['rollouts'] = [];
  const issues: TraceBatch['issues'] = [];
  const counters: Record<string, number> = {};
  for (const { name, trace } of parts) {
    // the distinguishing end of the file name: coding-random.jsonl → random
    const stem =
      name
        .replace(/\.[^.]*$/, '')
        .split(/[-_]/)
        .pop() || name;
    for (const r of trace.rollouts) {
      let id = r.rolloutId;
      if (seen.has(id)) id = `${id}@${stem}`;
      for (let k = 2; seen.has(id); k++) id = `${r.rolloutId}@${stem}#${k}`;
      seen.add(id);
      rollouts.push(id === r.rolloutId ? r : { ...r, rolloutId: id });
    }
    for (const i of trace.issues) issues.push({ ...i, where: `${name} ${i.where}` });
    for (const [k, v] of Object.entries(trace.counters)) counters[k] = (counters[k] ?? 0) + v;
  }
  return { rollouts, issues, counters };
}

/** Per-rollout sums indexed by source rollout (rollouts that produced no row get 0). */
function perSourceRollout(sums: Float64Array, nRollouts: number): Float64Array {
  const out = new Float64Array(nRollouts);
  out.set(sums.subarray(0, Math.min(sums.length, nRollouts)));
  return out;
}

/**
 * The last built batch per trace, keyed by the sample-building options: an advantage or loss toggle reuses the
 * rows and only recomputes weights (sample building dominates on large traces).
 */
export interface BuildCache {
  trace: TraceBatch | null;
  key: string;
  built: ReturnType<typeof buildTrainingBatch> | null;
  /** bumped each time rows are rebuilt */
  serial: number;
}

export function newBuildCache(): BuildCache {
  return { trace: null, key: '', built: null, serial: 0 };
}

function build(
  trace: TraceBatch,
  o: ComputeOptions,
  tokenizer: ChatTokenizer | undefined,
  cache?: BuildCache,
) {
  const key = JSON.stringify([o.level, o.tokenSource, o.maxPromptLength, o.maxResponseLength]);
  if (cache && cache.trace === trace && cache.key === key && cache.built) return cache.built;
  const built = buildTrainingBatch(trace.rollouts, {
    level: o.level,
    maxPromptLength: o.maxPromptLength,
    maxResponseLength: o.maxResponseLength,
    padTokenId: 0,
    rewardFillnaValue: 0,
    tokenSource: o.tokenSource,
    tokenizer,
  });
  if (cache) Object.assign(cache, { trace, key, built, serial: cache.serial + 1 });
  return built;
}

export function compute(
  trace: TraceBatch,
  o: ComputeOptions,
  tokenizer?: ChatTokenizer,
  cache?: BuildCache,
): ComputeResult {
  const built = build(trace, o, tokenizer, cache);
  const { batch } = built;
  const n = trace.rollouts.length;
  const common = {
    advEstimator: o.estimator,
    normAdvByStd: o.normAdvByStd,
    rolloutLevel: o.rolloutLevel,
    clipRatioLow: o.clipLow,
    clipRatioHigh: o.clipHigh,
  };
  const ew = effectiveWeights(batch, { ...common, lossAggMode: o.lossMode });
  const all = allLossModes(batch, common);
  // A group's net weight is ~0 under mean-centred estimators; its two sides show how hard it pushes each way.
  const groupNegative = new Float64Array(ew.groups.nGroups);
  const groupPositive = new Float64Array(ew.groups.nGroups);
  for (let r = 0; r < batch.nRows; r++) {
    const g = ew.groups.group[r];
    for (let p = batch.offsets[r]; p < batch.offsets[r + 1]; p++) {
      const w = ew.weights[p];
      if (w < 0) groupNegative[g] += w;
      else groupPositive[g] += w;
    }
  }
  return {
    buildSerial: cache?.serial ?? 0,
    batch,
    mergeFailures: built.mergeFailures,
    counters: built.counters,
    tokenAdvantage: ew.advantages,
    tokenWeight: ew.weights,
    rowWeight: ew.rowSums,
    rolloutWeight: perSourceRollout(ew.rolloutSums, n),
    groupKeys: ew.groups.keys,
    groupWeight: ew.groupSums,
    groupNegative,
    groupPositive,
    modes: ALL_LOSS_MODES.map((m) => ({
      name: m,
      rolloutWeight: perSourceRollout(all.modes[m].rolloutTotals, n),
    })),
  };
}

/** The rows part of a result: sent to the page only when it was rebuilt. */
export type BuiltRows = Pick<ComputeResult, 'buildSerial' | 'batch' | 'mergeFailures' | 'counters'>;
export type WeightsPart = Omit<ComputeResult, 'batch' | 'mergeFailures' | 'counters'>;

export function splitResult(r: ComputeResult): { rows: BuiltRows; weights: WeightsPart } {
  const { batch, mergeFailures, counters, ...weights } = r;
  return { rows: { buildSerial: r.buildSerial, batch, mergeFailures, counters }, weights };
}
