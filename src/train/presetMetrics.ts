/**
 * What the presets measure beyond the step metrics, from a step's kept trace: the rows are rebuilt exactly as
 * the step built them (same level, limits, token source and trim seed) and the loss's per-token weight on a
 * unit advantage at ratio 1 is core's per-micro-batch loss gradient over the update's own mini-batches
 * (`ppoMiniBatches`, `microBatchGradient`; for `per_rollout_mean` its per-rollout divisor included). All keys are under `preset/`. Also the comparison table the
 * CLI prints: first / last / mean of each preset metric per variant.
 */
import { indexGroups } from '../core/algos/groups';
import { normalizeAdvantagesByRollout } from '../core/algos/rolloutLevel';
import {
  computeTrainerAdvantages,
  microBatchGradient,
  ppoMiniBatches,
  type TrainerAdvantages,
} from '../core/pipeline';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import { parseJsonlTrace } from '../core/trace/io';
import { formatIssue, type Rollout } from '../core/trace/types';
import type { TrainConfig } from './config';
import type { Metrics } from './metrics';
import { buildStepRows } from './objective';
import { hashSeed } from './rng';
import type { TrainStorage } from './storage';
import { parseFileLogger } from './verlLog';

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;
}

/** Least-squares slope of y on x (NaN when x does not vary). */
export function slope(x: number[], y: number[]): number {
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < x.length; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
  }
  return sxx > 0 ? sxy / sxx : Number.NaN;
}

/** A rollout passes with reward ≥ 1 (as pass@k counts it). */
const passed = (r: Rollout, fillna: number) => (r.finalReward ?? fillna) >= 1 - 1e-9;

function responseTokens(r: Rollout): number {
  return r.calls.reduce((a, c) => a + (c.responseTokenIds?.length ?? 0), 0);
}

/**
 * The preset metrics of one step (step counts from 1) from its rollouts:
 *   preset/response_length/{correct,incorrect}: mean response tokens (all calls) of passing / failing rollouts;
 *   preset/token_weight/length_exponent: slope of log(per-token weight) on log(row response length) — about −1
 *     for a 1/|o| weighting, 0 when every token weighs the same;
 *   preset/rollout_weight/calls_slope: slope of a rollout's total weight (over the mean) on its number of calls;
 *   preset/train_tokens_per_rollout: prompt + response tokens of the trained rows per rollout with rows.
 */
export function presetStepMetrics(
  rollouts: Rollout[],
  cfg: TrainConfig,
  step: number,
  tokenizer?: ChatTokenizer,
): Metrics {
  const m: Metrics = {};
  const fill = cfg.agentlightning.reward_fillna_value;
  const done = rollouts.filter((r) => r.state !== 'failed');
  m['preset/response_length/correct'] = mean(done.filter((r) => passed(r, fill)).map(responseTokens));
  m['preset/response_length/incorrect'] = mean(done.filter((r) => !passed(r, fill)).map(responseTokens));
  const rows = buildStepRows(rollouts, cfg, {
    tokenizer: cfg.lab.token_source === 'retokenize' ? tokenizer : undefined,
    trimSeed: hashSeed(cfg.lab.seed, 'trim', step),
  });
  const b = rows.batch;
  if (b.nRows === 0) return m;
  // Per-row weight of one unit of advantage on each token at ratio 1, mini-batch by mini-batch as the update sees
  // it (core's ppoMiniBatches without a shuffle: consecutive rows), from core's per-micro-batch loss gradient.
  const tb = rows.trainer;
  const real = computeTrainerAdvantages(tb);
  const unitAdv = Float32Array.from(real.responseMask);
  const unit: TrainerAdvantages = {
    ...real,
    advantages: unitAdv,
    normalizedAdvantages: normalizeAdvantagesByRollout(b, unitAdv, indexGroups(b.rolloutIds), b.nRows),
    rolloutIsWeights: null,
  };
  const weight = new Float64Array(b.nRows);
  for (const plan of ppoMiniBatches(tb, unit)) {
    const parts: Float32Array[] = [];
    for (const r of plan.rows) parts.push(unit.oldLogProbs.subarray(b.offsets[r], b.offsets[r + 1]));
    const logProbs = new Float32Array(parts.reduce((a, x) => a + x.length, 0));
    let at = 0;
    for (const x of parts) {
      logProbs.set(x, at);
      at += x.length;
    }
    const g = microBatchGradient(tb, unit, plan, plan.rows, logProbs);
    at = 0;
    for (const r of plan.rows) {
      const len = b.offsets[r + 1] - b.offsets[r];
      for (let t = 0; t < len; t++)
        if (unit.responseMask[b.offsets[r] + t]) {
          weight[r] = Math.abs(g.grad[at + t]);
          break;
        }
      at += len;
    }
  }
  const logLen: number[] = [];
  const logW: number[] = [];
  const perRollout = new Map<number, number>();
  let tokens = 0;
  for (let r = 0; r < b.nRows; r++) {
    let n = 0;
    for (let t = b.offsets[r]; t < b.offsets[r + 1]; t++) n += b.mask[t];
    tokens += b.offsets[r + 1] - b.offsets[r] + b.promptOffsets[r + 1] - b.promptOffsets[r];
    if (n > 0 && weight[r] > 0) {
      logLen.push(Math.log(n));
      logW.push(Math.log(weight[r]));
    }
    perRollout.set(b.rowRollout[r], (perRollout.get(b.rowRollout[r]) ?? 0) + weight[r] * n);
  }
  m['preset/token_weight/length_exponent'] = slope(logLen, logW);
  const ids = [...perRollout.keys()];
  const ws = ids.map((i) => perRollout.get(i) as number);
  const mw = mean(ws);
  m['preset/rollout_weight/calls_slope'] = slope(
    ids.map((i) => rollouts[i].calls.length),
    ws.map((w) => w / mw),
  );
  m['preset/train_tokens_per_rollout'] = tokens / ids.length;
  return m;
}

export interface VariantHistory {
  variant: string;
  /** per step (from 1) the step's metrics with the preset metrics merged in */
  steps: { step: number; data: Record<string, number | null> }[];
}

const pad6 = (n: number) => String(n).padStart(6, '0');
const dec = new TextDecoder();

/**
 * A finished run's history from its folder: metrics.jsonl, each training step merged with the preset metrics
 * of its kept trace (`traces/step_NNNNNN.jsonl`; a step without one keeps only its logged metrics).
 */
export async function readVariantHistory(
  variant: string,
  cfg: TrainConfig,
  storage: TrainStorage,
  tokenizer?: ChatTokenizer,
): Promise<VariantHistory> {
  const bytes = await storage.readFile('metrics.jsonl');
  if (!bytes) throw new Error(`variant ${variant}: the run wrote no metrics.jsonl`);
  const steps = parseFileLogger(dec.decode(bytes));
  for (const s of steps) {
    if (s.step <= 0) continue;
    const path = `traces/step_${pad6(s.step)}.jsonl`;
    const trace = await storage.readFile(path);
    if (!trace) continue;
    const parsed = parseJsonlTrace(dec.decode(trace));
    const errors = parsed.issues.filter((i) => (i.severity ?? 'error') === 'error');
    if (errors.length)
      throw new Error(`variant ${variant}: ${path}: ${errors.slice(0, 3).map(formatIssue).join('; ')}`);
    Object.assign(s.data, presetStepMetrics(parsed.rollouts, cfg, s.step, tokenizer));
  }
  return { variant, steps };
}

export interface ComparisonRow {
  metric: string;
  /** per variant, in the variants' order */
  cells: { variant: string; first: number; last: number; mean: number }[];
}

/** First, last and mean over the training steps of each metric, per variant (missing values are skipped). */
export function comparePresetRuns(metrics: readonly string[], runs: VariantHistory[]): ComparisonRow[] {
  return metrics.map((metric) => ({
    metric,
    cells: runs.map((run) => {
      const vals = run.steps
        .filter((s) => s.step > 0)
        .map((s) => s.data[metric])
        .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
      return {
        variant: run.variant,
        first: vals.length ? vals[0] : Number.NaN,
        last: vals.length ? vals[vals.length - 1] : Number.NaN,
        mean: mean(vals),
      };
    }),
  }));
}

const num = (v: number) =>
  Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3)) : '-';

/** The comparison as a plain-text table (one row per metric; per variant `first → last (mean)`). */
export function formatComparison(rows: ComparisonRow[]): string {
  if (rows.length === 0) return '';
  const head = ['metric', ...rows[0].cells.map((c) => c.variant)];
  const body = rows.map((r) => [
    r.metric,
    ...r.cells.map((c) => `${num(c.first)} → ${num(c.last)} (mean ${num(c.mean)})`),
  ]);
  const widths = head.map((_, i) => Math.max(...[head, ...body].map((l) => l[i].length)));
  const line = (l: string[]) => l.map((s, i) => s.padEnd(widths[i])).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
