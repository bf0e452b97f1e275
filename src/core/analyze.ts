/**
 * What the trainer would do with a batch of recorded rollouts, as numbers: everything the page shows, from the
 * same pipeline (`computeTrainerView`): sample building (rows, what was dropped and why, merge failures by class),
 * retokenization drift per call with every differing hunk and its cause, advantages, and the effective gradient
 * weight of every rollout, call, group and (optionally) token under every loss mode. `npm run lab -- analyze`
 * prints this.
 */

import type { MergeFailure, MergeFailureKind } from './aggregate/mergeFailure';
import { type NoRowsEntry, whyNoRows } from './pipeline/noRows';
import { referenceStackOf, type TrainerOptions } from './pipeline/options';
import { callWeights, callWeightsInput, rowsOfRollouts } from './pipeline/perCall';
import {
  DEFAULT_WEIGHT_SIGN,
  getWeightSign,
  signed,
  signedSides,
  type WeightSignName,
} from './pipeline/sign';
import { computeTrainerView, type TrainerCounters, type TrainerView } from './pipeline/trainer';
import { retokenizationView } from './tokenize/retokenizationView';
import type { RetokenizationCause } from './tokenize/retokenize';
import type { ChatTokenizer } from './tokenize/tokenizer';
import { retokenizedAffects, retokenizedMark } from './trace/io/provenance';
import type { TraceBatch } from './trace/types';

export interface AnalyzeExtras {
  tokenizer?: ChatTokenizer;
  /** how many merge failures / retokenization differences to list in full (default 5) */
  examples?: number;
  /** include every row's per-token arrays (ids, masks, advantages, each mode's weights) */
  perToken?: boolean;
  /** skip the per-call retokenization report (it re-renders and re-encodes every call) */
  noRetokenization?: boolean;
  /** the convention every weight is given in: the push −∂L/∂logπ (default) or ∂L/∂logπ */
  sign?: WeightSignName;
}

export interface Stats {
  n: number;
  mean: number;
  std: number;
  min: number;
  max: number;
}

export interface RolloutWeight {
  rolloutId: string;
  dataId: string;
  reward: number | null;
  rows: number;
  trainableTokens: number;
  /** Σ over the rollout's tokens of its effective weight (in `Analysis.sign`) under the selected loss mode */
  weight: number;
}

export interface CallWeightsRow {
  call: number;
  trainable: number;
  observation: number;
  untrained: number;
  meanAdvantage: number | null;
  weight: number;
}

export interface TokenRow {
  row: number;
  rolloutId: string;
  dataId: string;
  status: 'trained' | 'is_drop' | 'trimmed';
  trainPosition: number;
  miniBatch: number;
  firstCall: number;
  nCalls: number;
  responseIds: number[];
  /** the adapter's mask (observations 0) and the mask as trained (rejection sampling applied) */
  mask: number[];
  responseMask: number[];
  advantages: number[];
  weights: Record<string, number[]>;
  modeAdvantages: Record<string, number[]>;
}

export interface Analysis {
  reference: string;
  /**
   * the convention of every weight below: `push` = −∂L/∂logπ (positive = reinforced), `grad` = ∂L/∂logπ;
   * `negative` / `positive` are the sides in that convention
   */
  sign: { name: WeightSignName; symbol: string };
  input: { rollouts: number; calls: number; promptTokens: number; responseTokens: number; issues: number };
  importCounters: Record<string, number>;
  options: TrainerOptions & { tokenizer: string | null };
  merge: {
    rows: number;
    trainableTokens: number;
    responseTokens: number;
    counters: Record<string, number | null>;
    failures: Record<MergeFailureKind, number>;
    examples: MergeFailure[];
  };
  trainer: {
    counters: TrainerCounters;
    skipped: boolean;
    miniBatches: number;
    metrics: Record<string, number>;
  };
  retokenization: null | {
    calls: number;
    equal: number;
    causes: Record<RetokenizationCause, number>;
    /** every differing hunk of every call, by cause */
    hunks: Record<RetokenizationCause | 'unclassified', number>;
    examples: {
      rolloutId: string;
      callIndex: number;
      cause: string | null;
      engine: string;
      retokenized: string;
      hunks: { cause: string | null; engine: string; retokenized: string }[];
    }[];
  };
  advantages: Stats & { dtype: string };
  weights: {
    mode: string;
    total: number;
    absTotal: number;
    perRollout: RolloutWeight[];
    perGroup: { dataId: string; weight: number; negative: number; positive: number }[];
  };
  allModes: Record<
    string,
    {
      key: string;
      total: number;
      absTotal: number;
      rolloutWeightStats: Stats;
      /** per rollout id (rollouts that produced rows) */
      perRollout: Record<string, number>;
    }
  >;
  /** per rollout with rows: per call, under the selected mode */
  perCall: { rolloutId: string; calls: CallWeightsRow[] }[];
  /** every rollout with no training rows, or none that move the policy, or no reward: which rule, and where */
  noRows: NoRowsEntry[];
  /** rollouts whose ids a tokenizer made from text at import (a text-only file), and what that affects */
  retokenizedAtImport: null | { rollouts: number; tokenizers: string[]; affects: string[] };
  tokens?: TokenRow[];
}

function stats(values: ArrayLike<number>, keep?: ArrayLike<number>): Stats {
  let n = 0;
  let sum = 0;
  let sq = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    if (keep && !keep[i]) continue;
    const v = values[i];
    n++;
    sum += v;
    sq += v * v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const mean = n ? sum / n : 0;
  return {
    n,
    mean,
    std: n > 1 ? Math.sqrt(Math.max(0, (sq - n * mean * mean) / (n - 1))) : 0,
    min: n ? min : 0,
    max: n ? max : 0,
  };
}

const STATUS = ['trained', 'is_drop', 'trimmed'] as const;

function retokenization(trace: TraceBatch, tok: ChatTokenizer, examples: number): Analysis['retokenization'] {
  const causes: Record<RetokenizationCause, number> = {
    bpe_remerge: 0,
    template_rerender: 0,
    tool_call_rerender: 0,
    special_tokens: 0,
    whitespace: 0,
  };
  const hunks: Record<RetokenizationCause | 'unclassified', number> = { ...causes, unclassified: 0 };
  let n = 0;
  let equal = 0;
  const ex: NonNullable<Analysis['retokenization']>['examples'] = [];
  trace.rollouts.forEach((r, ri) => {
    for (let ci = 0; ci < r.calls.length; ci++) {
      const v = retokenizationView(tok, trace, ri, ci);
      if (v.unavailable || !v.report) continue;
      n++;
      const rep = v.report;
      if (rep.equal) equal++;
      else if (rep.cause) causes[rep.cause]++;
      const diff = v.segments.filter((s) => !s.equal);
      for (const h of diff) hunks[h.cause ?? 'unclassified']++;
      if (!rep.equal && ex.length < examples)
        ex.push({
          rolloutId: r.rolloutId,
          callIndex: ci,
          cause: rep.cause,
          engine: rep.engineSpan,
          retokenized: rep.retokenizedSpan,
          hunks: diff.map((h) => ({ cause: h.cause, engine: h.engineText, retokenized: h.retokenizedText })),
        });
    }
  });
  return { calls: n, equal, causes, hunks, examples: ex };
}

/** How many rollouts have ids made at import from text, by which tokenizers, and which numbers that affects. */
export function retokenizedSummary(trace: TraceBatch): Analysis['retokenizedAtImport'] {
  const names = new Set<string>();
  let n = 0;
  let affects: string[] = [];
  for (const r of trace.rollouts) {
    const m = retokenizedMark(r);
    if (!m) continue;
    n++;
    names.add(m.tokenizer);
    affects = retokenizedAffects(m);
  }
  return n ? { rollouts: n, tokenizers: [...names], affects } : null;
}

/** The analysis of a trace under trainer options (upstream names and defaults; see core/pipeline/options.ts). */
export function analyzeTrace(
  trace: TraceBatch,
  options: Partial<TrainerOptions> = {},
  extras: AnalyzeExtras = {},
): Analysis {
  const examples = extras.examples ?? 5;
  const sign = getWeightSign(extras.sign ?? DEFAULT_WEIGHT_SIGN);
  const sg = (v: number) => signed(v, sign);
  const rollouts = trace.rollouts;
  const view: TrainerView = computeTrainerView({ rollouts, options, tokenizer: extras.tokenizer });
  const o = view.options;
  const batch = view.batch;

  let calls = 0;
  let promptTokens = 0;
  let responseTokens = 0;
  for (const r of rollouts)
    for (const c of r.calls) {
      calls++;
      promptTokens += c.promptTokenIds?.length ?? 0;
      responseTokens += c.responseTokenIds?.length ?? 0;
    }
  const failures: Record<MergeFailureKind, number> = {
    template: 0,
    retokenization: 0,
    truncation_or_summarization: 0,
    other: 0,
  };
  for (const f of view.build.mergeFailures) failures[f.kind]++;
  let trainable = 0;
  for (let t = 0; t < batch.mask.length; t++) trainable += batch.mask[t];

  // Rollouts that produced rows, in row order.
  const rowsOf = rowsOfRollouts(view, rollouts.length);
  const rolloutOrder: number[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < batch.nRows; i++) {
    const ri = batch.rowRollout[i];
    if (!seen.has(ri)) {
      seen.add(ri);
      rolloutOrder.push(ri);
    }
  }
  const trainedTokensOf = (ri: number) => {
    let c = 0;
    for (const r of rowsOf[ri])
      if (view.trainPosition[r] >= 0)
        for (let t = batch.offsets[r]; t < batch.offsets[r + 1]; t++) c += view.responseMask[t];
    return c;
  };
  const sel = view.selected;
  const perRollout: RolloutWeight[] = rolloutOrder.map((ri) => ({
    rolloutId: rollouts[ri].rolloutId,
    dataId: rollouts[ri].dataId,
    reward: rollouts[ri].finalReward,
    rows: rowsOf[ri].length,
    trainableTokens: trainedTokensOf(ri),
    weight: sg(sel.rolloutSums[ri]),
  }));
  const allModes: Analysis['allModes'] = {};
  for (const m of view.modes) {
    const per: Record<string, number> = {};
    for (const ri of rolloutOrder) per[rollouts[ri].rolloutId] = sg(m.rolloutSums[ri]);
    allModes[m.name] = {
      key: m.key,
      total: sg(m.total),
      absTotal: m.absTotal,
      rolloutWeightStats: stats(rolloutOrder.map((ri) => sg(m.rolloutSums[ri]))),
      perRollout: per,
    };
  }
  const cwInput = callWeightsInput(view);
  const perCall = rolloutOrder.map((ri) => {
    const cw = callWeights(cwInput, ri, rollouts[ri].calls.length, rowsOf[ri]);
    return {
      rolloutId: rollouts[ri].rolloutId,
      calls: Array.from(cw.weight, (w, k) => ({
        call: k,
        trainable: cw.tokens[k],
        observation: cw.observations[k],
        untrained: cw.untrained[k],
        meanAdvantage: Number.isNaN(cw.advantage[k]) ? null : cw.advantage[k],
        weight: sg(w),
      })),
    };
  });
  const trained = new Uint8Array(batch.mask.length);
  for (let r = 0; r < batch.nRows; r++)
    if (view.trainPosition[r] >= 0)
      for (let t = batch.offsets[r]; t < batch.offsets[r + 1]; t++) trained[t] = view.responseMask[t];
  const analysis: Analysis = {
    reference: referenceStackOf(o).label,
    sign: { name: sign.name, symbol: sign.symbol },
    input: { rollouts: rollouts.length, calls, promptTokens, responseTokens, issues: trace.issues.length },
    importCounters: trace.counters,
    options: { ...o, tokenizer: extras.tokenizer?.name ?? null },
    merge: {
      rows: batch.nRows,
      trainableTokens: trainable,
      responseTokens: batch.mask.length,
      counters: { ...view.build.counters },
      failures,
      examples: view.build.mergeFailures.slice(0, examples),
    },
    trainer: {
      counters: view.counters,
      skipped: view.skipped,
      miniBatches: view.miniBatch.reduce((m, x) => Math.max(m, x + 1), 0),
      metrics: view.metrics,
    },
    retokenization:
      extras.tokenizer && !extras.noRetokenization ? retokenization(trace, extras.tokenizer, examples) : null,
    advantages: { ...stats(view.advantages, trained), dtype: view.advantagesDType },
    weights: {
      mode: sel.name,
      total: sg(sel.total),
      absTotal: sel.absTotal,
      perRollout,
      perGroup: view.groups.keys.map((dataId, g) => ({
        dataId,
        weight: sg(view.groups.sums[g]),
        ...signedSides(view.groups.negative[g], view.groups.positive[g], sign),
      })),
    },
    allModes,
    perCall,
    noRows: whyNoRows(rollouts, o, view, extras.tokenizer),
    retokenizedAtImport: retokenizedSummary(trace),
  };
  if (extras.perToken) {
    const slice = (a: ArrayLike<number>, r: number) =>
      Array.from((a as Float32Array).subarray(batch.offsets[r], batch.offsets[r + 1]));
    analysis.tokens = Array.from({ length: batch.nRows }, (_, r) => ({
      row: r,
      rolloutId: batch.rolloutIds[r],
      dataId: batch.dataIds[r],
      status: STATUS[view.rowStatus[r] as 0 | 1 | 2],
      trainPosition: view.trainPosition[r],
      miniBatch: view.miniBatch[r],
      firstCall: batch.firstCall[r],
      nCalls: batch.nCalls[r],
      responseIds: slice(batch.responseIds, r),
      mask: slice(batch.mask, r),
      responseMask: slice(view.responseMask, r),
      advantages: slice(view.advantages, r),
      weights: Object.fromEntries(view.modes.map((m) => [m.name, slice(m.weights, r).map(sg)])),
      modeAdvantages: Object.fromEntries(view.modes.map((m) => [m.name, slice(m.advantages, r)])),
    }));
  }
  return analysis;
}
