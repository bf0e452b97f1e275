/**
 * The algorithm options of the explorer, generated from core's registries: the estimator list, the loss
 * modes, the merge levels and token sources are whatever core registers, with core's labels and formulas, so a
 * new estimator shows up here without UI code. Names in the URL that core does not know fall back to defaults.
 */
import { listAdvEstimators } from '../../core/algos/advantage';
import { getAggMode } from '../../core/algos/aggLoss';
import { ALL_LOSS_MODES } from '../../core/algos/effectiveWeights';
import { getPolicyLoss } from '../../core/algos/policyLoss';
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

function pick(value: string, known: readonly string[], fallback: string): string {
  return known.includes(value) ? value : fallback;
}

const DEFAULT_ESTIMATOR = 'grpo';
const DEFAULT_LOSS = 'token-mean';

/** The options the worker computes with: URL values checked against core's registries. */
export function resolveOptions(v: ViewState): ComputeOptions {
  const estimators = listAdvEstimators()
    .filter((e) => traceCanFeed(e.options))
    .map((e) => e.name);
  return {
    tokenSource: v.tokenSource,
    level: v.level,
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
