/**
 * What the trainer would do with a batch of recorded rollouts, as numbers: sample building (rows, merge
 * failures by class), retokenization drift per call, advantages, and the effective gradient weight of every
 * token under the chosen loss mode and under all loss modes side by side. `npm run lab -- analyze` prints this;
 * the page shows the same quantities per token.
 */

import { buildTrainingBatch, type TraceAggregatorLevel } from './aggregate/buildTrainingBatch';
import type { MergeFailure, MergeFailureKind } from './aggregate/mergeFailure';
import { listAdvEstimators } from './algos/advantage';
import { ALL_LOSS_MODES, allLossModes, effectiveWeights, type LossMode } from './algos/effectiveWeights';
import { type RetokenizationCause, retokenizationReport, type TokenSource } from './tokenize/retokenize';
import type { ChatTokenizer } from './tokenize/tokenizer';
import type { Rollout, TraceBatch } from './trace/types';

export interface AnalyzeOptions {
  level: TraceAggregatorLevel;
  advEstimator: string;
  normAdvByStd: boolean;
  rolloutLevel: boolean;
  lossAggMode: LossMode;
  tokenSource: TokenSource;
  tokenizer?: ChatTokenizer;
  maxPromptLength: number;
  maxResponseLength: number;
  clipRatio: number;
  /** how many merge failures / retokenization differences to list in full */
  examples: number;
}

export const DEFAULT_ANALYZE_OPTIONS: AnalyzeOptions = {
  level: 'trajectory',
  advEstimator: 'grpo',
  normAdvByStd: true,
  rolloutLevel: false,
  lossAggMode: 'token-mean',
  tokenSource: 'engine',
  maxPromptLength: 1 << 20,
  maxResponseLength: 1 << 20,
  clipRatio: 0.2,
  examples: 5,
};

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
  /** Σ ∂L/∂logπ over the rollout's tokens under the chosen loss mode */
  weight: number;
}

export interface Analysis {
  input: { rollouts: number; calls: number; promptTokens: number; responseTokens: number; issues: number };
  importCounters: Record<string, number>;
  options: Omit<AnalyzeOptions, 'tokenizer'> & { tokenizer: string | null };
  merge: {
    rows: number;
    trainableTokens: number;
    responseTokens: number;
    counters: Record<string, number | null>;
    failures: Record<MergeFailureKind, number>;
    examples: MergeFailure[];
  };
  retokenization: null | {
    calls: number;
    equal: number;
    causes: Record<RetokenizationCause, number>;
    examples: {
      rolloutId: string;
      callIndex: number;
      cause: string | null;
      engine: string;
      retokenized: string;
    }[];
  };
  advantages: Stats;
  weights: {
    mode: LossMode;
    total: number;
    absTotal: number;
    perRollout: RolloutWeight[];
    perGroup: { dataId: string; weight: number }[];
  };
  allModes: Record<LossMode, { total: number; absTotal: number; rolloutWeightStats: Stats }>;
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

export function analyzeTrace(trace: TraceBatch, options: Partial<AnalyzeOptions> = {}): Analysis {
  const opts: AnalyzeOptions = { ...DEFAULT_ANALYZE_OPTIONS, ...options };
  if (!listAdvEstimators().some((e) => e.name === opts.advEstimator))
    throw new Error(
      `unknown advantage estimator '${opts.advEstimator}' (known: ${listAdvEstimators()
        .map((e) => e.name)
        .join(', ')})`,
    );
  if (!ALL_LOSS_MODES.includes(opts.lossAggMode))
    throw new Error(`unknown loss mode '${opts.lossAggMode}' (known: ${ALL_LOSS_MODES.join(', ')})`);
  if (opts.tokenSource === 'retokenize' && !opts.tokenizer)
    throw new Error("token source 'retokenize' needs a tokenizer");
  const rollouts: Rollout[] = trace.rollouts;

  let calls = 0;
  let promptTokens = 0;
  let responseTokens = 0;
  for (const r of rollouts)
    for (const c of r.calls) {
      calls++;
      promptTokens += c.promptTokenIds?.length ?? 0;
      responseTokens += c.responseTokenIds?.length ?? 0;
    }

  const built = buildTrainingBatch(rollouts, {
    level: opts.level,
    maxPromptLength: opts.maxPromptLength,
    maxResponseLength: opts.maxResponseLength,
    padTokenId: 0,
    rewardFillnaValue: 0,
    tokenSource: opts.tokenSource,
    tokenizer: opts.tokenizer,
  });
  const { batch } = built;
  const failures: Record<MergeFailureKind, number> = {
    template: 0,
    retokenization: 0,
    truncation_or_summarization: 0,
    other: 0,
  };
  for (const f of built.mergeFailures) failures[f.kind]++;
  let trainable = 0;
  for (let t = 0; t < batch.mask.length; t++) trainable += batch.mask[t];

  let retokenization: Analysis['retokenization'] = null;
  if (opts.tokenizer) {
    const causes: Record<RetokenizationCause, number> = {
      bpe_remerge: 0,
      template_rerender: 0,
      tool_call_rerender: 0,
      special_tokens: 0,
      whitespace: 0,
    };
    let n = 0;
    let equal = 0;
    const examples: NonNullable<Analysis['retokenization']>['examples'] = [];
    for (const r of rollouts)
      r.calls.forEach((c, i) => {
        const rep = opts.tokenizer ? retokenizationReport(opts.tokenizer, c) : null;
        if (!rep) return;
        n++;
        if (rep.equal) equal++;
        else if (rep.cause) causes[rep.cause]++;
        if (!rep.equal && examples.length < opts.examples)
          examples.push({
            rolloutId: r.rolloutId,
            callIndex: i,
            cause: rep.cause,
            engine: rep.engineSpan,
            retokenized: rep.retokenizedSpan,
          });
      });
    retokenization = { calls: n, equal, causes, examples };
  }

  const weightOpts = {
    advEstimator: opts.advEstimator,
    normAdvByStd: opts.normAdvByStd,
    rolloutLevel: opts.rolloutLevel,
    clipRatio: opts.clipRatio,
  };
  const eff = effectiveWeights(batch, { ...weightOpts, lossAggMode: opts.lossAggMode });
  const all = allLossModes(batch, weightOpts);

  // Rollouts that produced rows, in row order; per-rollout sums are indexed by rollout index (rowRollout).
  const rolloutOrder: number[] = [];
  const seen = new Set<number>();
  const rowsOf = new Map<number, number>();
  const tokensOf = new Map<number, number>();
  for (let i = 0; i < batch.nRows; i++) {
    const ri = batch.rowRollout[i];
    if (!seen.has(ri)) {
      seen.add(ri);
      rolloutOrder.push(ri);
    }
    rowsOf.set(ri, (rowsOf.get(ri) ?? 0) + 1);
    let c = 0;
    for (let t = batch.offsets[i]; t < batch.offsets[i + 1]; t++) c += batch.mask[t];
    tokensOf.set(ri, (tokensOf.get(ri) ?? 0) + c);
  }
  const perRollout: RolloutWeight[] = rolloutOrder.map((ri) => ({
    rolloutId: rollouts[ri].rolloutId,
    dataId: rollouts[ri].dataId,
    reward: rollouts[ri].finalReward,
    rows: rowsOf.get(ri) ?? 0,
    trainableTokens: tokensOf.get(ri) ?? 0,
    weight: eff.rolloutSums[ri],
  }));
  let total = 0;
  let absTotal = 0;
  for (let t = 0; t < eff.weights.length; t++) {
    total += eff.weights[t];
    absTotal += Math.abs(eff.weights[t]);
  }
  const allModes = {} as Analysis['allModes'];
  for (const m of ALL_LOSS_MODES) {
    const w = all.modes[m].weights;
    let abs = 0;
    for (let t = 0; t < w.length; t++) abs += Math.abs(w[t]);
    const totals = all.modes[m].rolloutTotals;
    allModes[m] = {
      total: all.modes[m].total,
      absTotal: abs,
      rolloutWeightStats: stats(rolloutOrder.map((ri) => totals[ri])),
    };
  }

  return {
    input: { rollouts: rollouts.length, calls, promptTokens, responseTokens, issues: trace.issues.length },
    importCounters: trace.counters,
    options: { ...opts, tokenizer: opts.tokenizer?.name ?? null },
    merge: {
      rows: batch.nRows,
      trainableTokens: trainable,
      responseTokens: batch.mask.length,
      counters: { ...built.counters },
      failures,
      examples: built.mergeFailures.slice(0, opts.examples),
    },
    retokenization,
    advantages: stats(eff.advantages, batch.mask),
    weights: {
      mode: opts.lossAggMode,
      total,
      absTotal,
      perRollout,
      perGroup: eff.groups.keys.map((dataId, g) => ({ dataId, weight: eff.groupSums[g] })),
    },
    allModes,
  };
}
