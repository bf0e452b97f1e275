/**
 * The explorer's algorithm options, generated from core's trainer-option registry (core/pipeline/options.ts):
 * every option the page offers is a control with core's label, its upstream key and help; enum choices come from
 * core's registries (estimators, loss modes, merge levels, token sources, dtypes), so a new estimator or loss
 * mode shows up here without UI code. Values in the URL that core does not accept fall back to core's defaults.
 */

import { getAdvEstimator } from '../../core/algos/advantage';
import { getLossMode } from '../../core/algos/lossModes';
import {
  estimatorReads,
  type OptionSpec,
  optionChoices,
  TRAINER_OPTIONS,
  type TrainerOptions,
} from '../../core/pipeline/options';
import type { ControlSpec } from '../advantages/Controls';
import type { ViewState } from '../store';
import { useLab } from './labStore';
import { effectiveOptions, type RunSettings, runSettingsFor, useRunSettings } from './runSettings';

/**
 * The options the worker computes with: the URL's values checked against core's option specs, or the settings
 * of the run whose batch is on screen (runSettings.ts).
 */
export function resolveOptions(v: ViewState, run: RunSettings | null = null): TrainerOptions {
  return effectiveOptions(v, run);
}

/** The run settings that apply to the trace on screen (none when another trace is shown). */
export function useActiveRunSettings(): RunSettings | null {
  const active = useRunSettings((s) => s.active);
  const source = useLab((s) => s.source);
  return runSettingsFor(active, source);
}

function help(o: TrainerOptions, spec: OptionSpec): string {
  if (spec.name === 'advEstimator') {
    const e = getAdvEstimator(o.advEstimator);
    return e.tex ? `${spec.key} · ${e.source}` : e.formula;
  }
  if (spec.name === selectsLossMode(o)) {
    const m = getLossMode(o.lossMode);
    return `${m.key} · ${m.source}`;
  }
  if (spec.name === 'lossAggMode' && !estimatorReads(o, spec))
    return `policy_loss.loss_mode ${o.policyLossMode} does not read ${spec.key}`;
  if (spec.estimatorField && !estimatorReads(o, spec)) return `${o.advEstimator} does not read ${spec.key}`;
  if (!estimatorReads(o, spec)) return `level ${o.traceAggregatorLevel} does not read ${spec.key}`;
  return `${spec.key}: ${spec.help}`;
}

/** The chosen estimator's or loss mode's formula, typeset (TeX from core's registries), with its plain text. */
function formula(o: TrainerOptions, spec: OptionSpec): { tex: string; text: string } | undefined {
  if (spec.name === 'advEstimator') {
    const e = getAdvEstimator(o.advEstimator);
    return e.tex ? { tex: e.tex, text: e.formula } : undefined;
  }
  if (spec.name === selectsLossMode(o)) {
    const m = getLossMode(o.lossMode);
    return { tex: m.tex, text: m.formula };
  }
  return undefined;
}

/** The control whose value names the loss mode in use: the aggregation under vanilla / dro, else the policy loss. */
function selectsLossMode(o: TrainerOptions): keyof TrainerOptions {
  return o.lossMode === o.lossAggMode ? 'lossAggMode' : 'policyLossMode';
}

/** One control per option the page offers, in core's order. */
export function controlSpecs(o: TrainerOptions): ControlSpec[] {
  const out: ControlSpec[] = [];
  for (const spec of TRAINER_OPTIONS) {
    if (!spec.page) continue;
    const field = spec.name;
    if (spec.kind === 'enum')
      out.push({
        kind: 'select',
        field: field as ControlSpec['field'] & keyof ViewState,
        label: spec.label,
        options: optionChoices(spec, o.referenceStack).map((c) => ({
          value: c.value,
          label: c.unavailable ? `${c.label} (needs inputs a trace does not hold)` : c.label,
          title: c.unavailable ?? c.title,
          disabled: Boolean(c.unavailable),
        })),
        disabled: !estimatorReads(o, spec),
        help: help(o, spec),
        formula: formula(o, spec),
      } as ControlSpec);
    else if (spec.kind === 'bool')
      out.push({
        kind: 'checkbox',
        field: field as never,
        label: spec.label,
        disabled: !estimatorReads(o, spec),
        help: help(o, spec),
      });
    else if (spec.kind !== 'spec')
      out.push({
        kind: 'number',
        field: field as never,
        label: spec.label,
        min: spec.min ?? -1e9,
        max: spec.max ?? 1e9,
        step: spec.kind.endsWith('int') ? 1 : 0.01,
        disabled: !estimatorReads(o, spec),
        help: help(o, spec),
      });
  }
  return out;
}

export function lossModeLabel(name: string): { label: string; formula: string } {
  const m = getLossMode(name);
  return { label: m.label, formula: m.formula };
}
