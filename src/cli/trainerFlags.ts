/**
 * CLI flags for the trainer options, generated from core's option registry (core/pipeline/options.ts): one flag
 * per option (`--level`, `--adv`, `--loss-mode`, `--reward-dtype`, …), `--no-<flag>` for booleans, `none` for
 * options that accept null. Errors are UsageErrors naming the flag and the upstream key.
 */
import {
  type OptionSpec,
  resolveTrainerOptions,
  TRAINER_OPTIONS,
  TrainerOptionError,
  type TrainerOptions,
} from '../core/pipeline/options';
import { type FlagSpec, type Parsed, UsageError } from './args';

/** Older spellings still accepted. */
const ALIASES: Record<string, { flag: string; value?: boolean }> = {
  'loss-agg': { flag: 'loss-mode' },
  'no-std': { flag: 'norm-adv-by-std', value: false },
};

export function trainerFlagSpec(): FlagSpec {
  const spec: FlagSpec = {};
  for (const o of TRAINER_OPTIONS) {
    if (o.kind === 'bool') {
      spec[o.flag] = { type: 'bool' };
      spec[`no-${o.flag}`] = { type: 'bool' };
    } else spec[o.flag] = { type: 'string' };
  }
  for (const [alias, a] of Object.entries(ALIASES))
    spec[alias] = { type: a.value === undefined ? spec[a.flag].type : 'bool' };
  return spec;
}

function parseValue(o: OptionSpec, raw: string): unknown {
  const nullable = o.nullable || o.kind.startsWith('nullable') || o.kind === 'spec';
  if (nullable && raw === 'none') return null;
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
        throw new UsageError(`--${o.flag} expects a number${nullable ? ' or none' : ''}, got '${raw}'`);
      return n;
    }
  }
}

/** The trainer options the flags set (the rest at their defaults), validated. */
export function trainerOptionsFromFlags(flags: Parsed['flags']): TrainerOptions {
  const partial: Record<string, unknown> = {};
  const set = (o: OptionSpec, v: unknown, given: string) => {
    if (o.name in partial) throw new UsageError(`--${given} sets ${o.key}, which another flag already set`);
    partial[o.name] = v;
  };
  for (const [name, raw] of Object.entries(flags)) {
    const alias = ALIASES[name];
    const flag = alias ? alias.flag : name.startsWith('no-') ? name.slice(3) : name;
    const o = TRAINER_OPTIONS.find((x) => x.flag === flag);
    if (!o) continue;
    if (o.kind === 'bool') set(o, alias?.value ?? !name.startsWith('no-'), name);
    else set(o, parseValue(o, String(raw)), name);
  }
  try {
    return resolveTrainerOptions(partial as Partial<TrainerOptions>);
  } catch (e) {
    if (e instanceof TrainerOptionError) throw new UsageError(e.message);
    throw e;
  }
}

/** `[--flag VALUE]` for every option, for a command's usage line. */
export function trainerFlagsUsage(): string {
  return TRAINER_OPTIONS.map((o) => {
    if (o.kind === 'bool') return `[--[no-]${o.flag}]`;
    if (o.kind === 'enum') {
      const values = (o.choices?.() ?? []).map((c) => c.value);
      return `[--${o.flag} ${[...values, ...(o.nullable ? ['none'] : [])].join('|')}]`;
    }
    return `[--${o.flag} ${o.kind.startsWith('nullable') || o.kind === 'spec' ? 'VALUE|none' : 'N'}]`;
  }).join(' ');
}
