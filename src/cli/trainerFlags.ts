/**
 * CLI flags for the trainer options, generated from core's config table (core/config/fields.ts) through its
 * `analysis` scope: one flag per key, the same flag `lab train` takes for that key (`--trace-aggregator-level`,
 * `--adv-estimator`, `--loss-agg-mode`, `--loss-mode`, …), `--no-<flag>` for booleans, `null` for keys that
 * accept null. A flag of a run-only key is refused with what the analysis reads instead. Errors are UsageErrors
 * naming the flag and the upstream key.
 */
import { listReferenceStacks } from '../core/algos/stacks';
import { CONFIG_TABLE, configFieldByFlag, NULL_SPELLING } from '../core/config/fields';
import {
  estimatorReads,
  type OptionSpec,
  optionChoices,
  resolveTrainerOptions,
  TRAINER_OPTIONS,
  TrainerOptionError,
  type TrainerOptions,
} from '../core/pipeline/options';
import { type FlagSpec, type Parsed, UsageError } from './args';

/** Older `lab analyze` spellings, each the same key under another name (none of them names another key). */
export const TRAINER_FLAG_ALIASES: Record<string, { flag: string; value?: boolean }> = {
  level: { flag: 'trace-aggregator-level' },
  adv: { flag: 'adv-estimator' },
  'norm-adv-by-std': { flag: 'norm-adv-by-std-in-grpo' },
  'no-norm-adv-by-std': { flag: 'norm-adv-by-std-in-grpo', value: false },
  'no-std': { flag: 'norm-adv-by-std-in-grpo', value: false },
  'rollout-level-adv': { flag: 'enable-rollout-level-advantage' },
  'no-rollout-level-adv': { flag: 'enable-rollout-level-advantage', value: false },
  'loss-agg': { flag: 'loss-agg-mode' },
};

/** What the analysis reads instead of a run-only key, where there is a counterpart. */
const INSTEAD: Record<string, string> = {
  'actor_rollout_ref.actor.ppo_mini_batch_size': '--mini-batch-rows (ppo_mini_batch_size × rollout.n)',
};

const runOnly = () => CONFIG_TABLE.filter((f) => !f.scopes.includes('analysis'));

export function trainerFlagSpec(own: FlagSpec = {}): FlagSpec {
  const spec: FlagSpec = {};
  for (const o of TRAINER_OPTIONS) {
    if (o.kind === 'bool') {
      spec[o.flag] = { type: 'bool' };
      spec[`no-${o.flag}`] = { type: 'bool' };
    } else spec[o.flag] = { type: 'string' };
  }
  for (const [alias, a] of Object.entries(TRAINER_FLAG_ALIASES))
    spec[alias] = { type: a.value === undefined ? spec[a.flag].type : 'bool' };
  // run-only keys are accepted by the parser so that the refusal can say what they are
  for (const f of runOnly())
    if (!(f.flag in own)) spec[f.flag] = { type: f.kind === 'bool' ? 'bool' : 'string' };
  return { ...spec, ...own };
}

function parseValue(o: OptionSpec, raw: string): unknown {
  const nullable = o.nullable || o.kind.startsWith('nullable') || o.kind === 'spec';
  if (nullable && raw === NULL_SPELLING) return null;
  if (nullable && raw === 'none')
    throw new UsageError(
      `--${o.flag}: null is spelled '${NULL_SPELLING}' (as in lab train and Hydra), got 'none'`,
    );
  switch (o.kind) {
    case 'enum':
    case 'bool':
      return raw;
    case 'spec': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
    }
    default: {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n))
        throw new UsageError(
          `--${o.flag} expects a number${nullable ? ` or ${NULL_SPELLING}` : ''}, got '${raw}'`,
        );
      return n;
    }
  }
}

/**
 * The trainer options the flags set (the rest at their defaults), validated, and notes on flags the chosen settings do not read (a data.* length at trajectory level, an
 * aggregation under per_rollout_mean): given, checked, but not used.
 */
export function trainerFlags(
  flags: Parsed['flags'],
  own: FlagSpec = {},
): { options: TrainerOptions; unread: string[] } {
  const partial: Record<string, unknown> = {};
  const given: { o: OptionSpec; flag: string }[] = [];
  const set = (o: OptionSpec, v: unknown, flag: string) => {
    if (o.name in partial) throw new UsageError(`--${flag} sets ${o.key}, which another flag already set`);
    partial[o.name] = v;
    given.push({ o, flag });
  };
  for (const [name, raw] of Object.entries(flags)) {
    if (name in own) continue;
    const alias = TRAINER_FLAG_ALIASES[name];
    const flag = alias ? alias.flag : name.startsWith('no-') ? name.slice(3) : name;
    const o = TRAINER_OPTIONS.find((x) => x.flag === flag);
    if (!o) {
      const f = configFieldByFlag(name);
      if (f)
        throw new UsageError(
          `--${name} sets ${f.key}, a setting of a training run (lab train); the analysis of a recorded trace does not read it${
            INSTEAD[f.key] ? `: use ${INSTEAD[f.key]}` : ''
          }`,
        );
      continue;
    }
    if (o.kind === 'bool') set(o, alias?.value ?? !name.startsWith('no-'), name);
    else set(o, parseValue(o, String(raw)), name);
  }
  let options: TrainerOptions;
  try {
    options = resolveTrainerOptions(partial as Partial<TrainerOptions>);
  } catch (e) {
    if (e instanceof TrainerOptionError) {
      const agg = TRAINER_OPTIONS.find((x) => x.name === 'lossAggMode');
      const hint =
        e.option.name === 'policyLossMode' && agg?.choices?.().some((c) => c.value === partial.policyLossMode)
          ? ` (${String(partial.policyLossMode)} is a loss_agg_mode: --loss-agg-mode ${String(partial.policyLossMode)} --loss-mode vanilla)`
          : '';
      throw new UsageError(e.message + hint);
    }
    throw e;
  }
  const unread = given
    .filter(({ o }) => !estimatorReads(options, o))
    .map(({ o, flag }) => `--${flag} sets ${o.key}, which these settings do not read`);
  return { options, unread };
}

/** `[--flag VALUE]` for every option, for a command's usage line. */
export function trainerFlagsUsage(): string {
  return TRAINER_OPTIONS.map((o) => {
    if (o.kind === 'bool') return `[--[no-]${o.flag}]`;
    if (o.kind === 'enum') {
      // every stack's values (a value of another stack is refused naming it)
      const values = [
        ...new Set(
          listReferenceStacks().flatMap((st) =>
            optionChoices(o, st.name)
              .filter((c) => !c.unavailable)
              .map((c) => c.value),
          ),
        ),
      ];
      return `[--${o.flag} ${[...values, ...(o.nullable ? [NULL_SPELLING] : [])].join('|')}]`;
    }
    return `[--${o.flag} ${o.kind.startsWith('nullable') || o.kind === 'spec' ? `VALUE|${NULL_SPELLING}` : 'N'}]`;
  }).join(' ');
}
