/**
 * What the lab worker runs, on core's own functions: parse a trace file, build training rows, compute every
 * token's advantage and effective gradient weight under the chosen options and under every loss mode.
 * The result is a flat, clonable view model (typed arrays, no class instances) for the page.
 */
import type { TrainingBatch } from '../../core/batch/types';
import type { TraceBatch } from '../../core/trace/types';
import type { ImportSummary } from './protocol';

export interface ComputeOptions {
  tokenSource: string;
  level: string;
  estimator: string;
  normAdvByStd: boolean;
  rolloutLevel: boolean;
  lossMode: string;
  clipLow: number;
  clipHigh: number;
}

/** Where and why sample merging closed a row early. */
export interface MergeBreak {
  rollout: number;
  /** the call that could not be appended */
  call: number;
  reason: string;
  detail: string;
  /** first differing prompt position, when known */
  position: number;
}

export interface ModeWeights {
  name: string;
  label: string;
  /** per source rollout: Σ of its tokens' effective gradient weights */
  rolloutWeight: Float64Array;
}

export interface ComputeResult {
  batch: TrainingBatch;
  breaks: MergeBreak[];
  /** per batch token */
  tokenAdvantage: Float32Array;
  tokenWeight: Float32Array;
  /** per source rollout / per training row, under the selected loss mode */
  rolloutWeight: Float64Array;
  rowWeight: Float64Array;
  /** per group (data id), in first-appearance order */
  groupKeys: string[];
  groupWeight: Float64Array;
  /** every loss mode on the same batch */
  modes: ModeWeights[];
}

export function parseTrace(
  _text: string,
  _name: string,
  _onProgress: (done: number, total: number) => void,
): { trace: TraceBatch; summary: Omit<ImportSummary, 'bytes' | 'tokenizer'> } {
  throw new Error('trace parsing is not wired yet');
}

export function compute(_trace: TraceBatch, _options: ComputeOptions): ComputeResult {
  throw new Error('weights are not wired yet');
}
