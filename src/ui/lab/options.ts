/**
 * The algorithm options of the explorer, generated from core's registries: the estimator list, the loss
 * modes, the merge levels and token sources are whatever core registers, with core's labels and formulas, so a
 * new estimator shows up here without UI code. Names in the URL that core does not know fall back to defaults.
 */

import type { TraceAggregatorLevel } from '../../core/aggregate/buildTrainingBatch';
import { listAdvEstimators } from '../../core/algos/advantage';
import { getAggMode } from '../../core/algos/aggLoss';
import { ALL_LOSS_MODES, type LossMode } from '../../core/algos/effectiveWeights';
import { getPolicyLoss } from '../../core/algos/policyLoss';
import type { TokenSource } from '../../core/tokenize/retokenize';
import type { ControlSpec } from '../advantages/Controls';
import type { ViewState } from '../store';
import type { ComputeOptions } from './pipeline';

/** Estimators that need inputs a recorded trace cannot give (ReMax's greedy-baseline rewards). */
function traceCanFeed(options: readonly string[]): boolean {
  return !options.includes('rewardBaselines');
}

export function lossModeLabel(name: string): { label: string; formula: string } {
  try {
    const m = getAggMode(name);
    return { label: m.label, formula: m.formula };
  } catch {
    const p = getPolicyLoss(name);
    return { label: p.label, formula: p.formula };
  }
}

function pick<T extends string>(value: string, known: readonly T[], fallback: T): T {
  return (known as readonly string[]).includes(value) ? (value as T) : fallback;
}

/*
 * Core declares token sources and merge levels as union types, not registries. Records keyed by those unions
 * make the compiler demand an entry (with its upstream meaning) for every member core adds.
 */
const TOKEN_SOURCES: Record<TokenSource, string> = {
  engine: 'the ids the engine returned: what the policy sampled',
  retokenize: 'chat template over the messages, encoded again (a text-only trainer)',
};
const LEVELS: Record<TraceAggregatorLevel, string> = {
  trajectory: 'a call whose prompt extends the context joins the row (observations get mask 0)',
  transition: 'one training row per call',
};
const keysOf = <T extends string>(r: Record<T, string>) => Object.keys(r) as T[];

const DEFAULT_ESTIMATOR = 'grpo';
/** the store's default for both length limits (roomy: a viewer should not truncate unless asked) */
const DEFAULT_MAX_LENGTH = 8192;
const DEFAULT_LOSS: LossMode = 'token-mean';

/** The options the worker computes with: URL values checked against core's registries. */
export function resolveOptions(v: ViewState): ComputeOptions {
  const estimators = listAdvEstimators()
    .filter((e) => traceCanFeed(e.options))
    .map((e) => e.name);
  return {
    tokenSource: pick(v.tokenSource, keysOf(TOKEN_SOURCES), 'engine'),
    level: pick(v.level, keysOf(LEVELS), 'trajectory'),
    maxPromptLength: v.maxPromptLength >= 1 ? v.maxPromptLength : DEFAULT_MAX_LENGTH,
    maxResponseLength: v.maxResponseLength >= 1 ? v.maxResponseLength : DEFAULT_MAX_LENGTH,
    estimator: pick(v.estimator, estimators, DEFAULT_ESTIMATOR),
    normAdvByStd: v.normAdvByStd,
    rolloutLevel: v.rolloutLevel,
    lossMode: pick(v.lossMode, ALL_LOSS_MODES, DEFAULT_LOSS),
    clipLow: v.clipLow,
    clipHigh: v.clipHigh,
  };
}

export function controlSpecs(o: ComputeOptions): ControlSpec[] {
  const estimators = listAdvEstimators();
  const est = estimators.find((e) => e.name === o.estimator);
  const loss = lossModeLabel(o.lossMode);
  return [
    {
      kind: 'select',
      field: 'tokenSource',
      label: 'Token source',
      options: keysOf(TOKEN_SOURCES).map((k) => ({ value: k, label: k, title: TOKEN_SOURCES[k] })),
      help: TOKEN_SOURCES[o.tokenSource],
    },
    {
      kind: 'select',
      field: 'level',
      label: 'Aggregation level',
      options: keysOf(LEVELS).map((k) => ({ value: k, label: k, title: LEVELS[k] })),
      help: `agentlightning.trace_aggregator.level: ${LEVELS[o.level]}`,
    },
    {
      kind: 'number',
      field: 'maxPromptLength',
      label: 'Max prompt length',
      min: 1,
      max: 1 << 20,
      step: 1,
    },
    {
      kind: 'number',
      field: 'maxResponseLength',
      label: 'Max response length',
      min: 1,
      max: 1 << 20,
      step: 1,
    },
    {
      kind: 'select',
      field: 'estimator',
      label: 'Advantage estimator',
      options: estimators
        .filter((e) => traceCanFeed(e.options))
        .map((e) => ({ value: e.name, label: `${e.name} — ${e.label}`, title: e.formula })),
      help: est?.formula,
    },
    {
      kind: 'checkbox',
      field: 'normAdvByStd',
      label: 'Normalize by std',
      disabled: !est?.options.includes('normAdvByStd'),
      help: est?.options.includes('normAdvByStd')
        ? 'algorithm.norm_adv_by_std_in_grpo'
        : `${o.estimator} does not divide by the group std`,
    },
    {
      kind: 'checkbox',
      field: 'rolloutLevel',
      label: 'Rollout-level advantage',
      help: 'algorithm.enable_rollout_level_advantage: the estimator sees one row per rollout',
    },
    {
      kind: 'select',
      field: 'lossMode',
      label: 'Loss aggregation',
      options: ALL_LOSS_MODES.map((m) => ({ value: m, label: m, title: lossModeLabel(m).formula })),
      help: loss.formula,
    },
    {
      kind: 'number',
      field: 'clipLow',
      label: 'Clip ratio low',
      min: 0,
      max: 1,
      step: 0.01,
      help: 'clip_ratio_low: only changes tokens whose recorded ratio leaves the clip range',
    },
    { kind: 'number', field: 'clipHigh', label: 'Clip ratio high', min: 0, max: 10, step: 0.01 },
  ];
}
