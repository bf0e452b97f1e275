/**
 * The Train tab's config form as URL state: one field per `CONFIG_FIELDS` entry (a field added to the loop's
 * config appears in the form and the URL without code here), keyed in the URL by its full upstream path
 * (`#tab=train&algorithm.adv_estimator=rloo&actor_rollout_ref.rollout.n=8`, as Hydra overrides read), held in
 * the store as the canonical string each value formats to. A link reproduces the run's config; values the loop
 * refuses fall back to the tab's defaults and are named in the page's note.
 */
import {
  CONFIG_FIELDS,
  type ConfigField,
  checkConsistency,
  cloneConfig,
  getPath,
  resolveTrainConfig,
  setConfigValue,
  type TrainConfig,
  type TrainConfigPatch,
} from '../../train/config';
import type { Codec, Schema } from '../urlState';

/** Store keys of the form's fields: `cfg.` + the config path. */
export const FORM_PREFIX = 'cfg.';
export type TrainFormFields = { [K in `cfg.${string}`]: string };
export const formKey = (path: string): `cfg.${string}` => `cfg.${path}`;

/**
 * Where the tab starts (on top of the config table's defaults, whose harness and sizes are `lab train`'s too):
 * from the harness's shipped SFT checkpoint, WebGPU where a hardware adapter exists, and a checkpoint after
 * every step so an interrupted run resumes where it stopped.
 */
export const TRAIN_TAB_PATCH: TrainConfigPatch = {
  lab: { backend: 'auto' },
  actor_rollout_ref: { model: { path: 'sft' } },
  trainer: { save_freq: 1 },
};

export function trainTabDefaults(): TrainConfig {
  return resolveTrainConfig(TRAIN_TAB_PATCH);
}

/** A config value as the string the form, the URL and `setConfigValue` use. */
export function formatFieldValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return v.join(',');
  return String(v);
}

/** What a valid value of a field looks like (for notes on a bad link). */
export function describeField(f: ConfigField): string {
  const orNull = f.nullable ? ' or null' : '';
  const range =
    f.min !== undefined || f.max !== undefined
      ? ` ${[f.min !== undefined ? `${f.minExclusive ? '>' : '≥'} ${f.min}` : '', f.max !== undefined ? `≤ ${f.max}` : ''].filter(Boolean).join(' and ')}`
      : '';
  switch (f.kind) {
    case 'enum':
      return `one of ${(f.choices?.() ?? []).join(', ')}${orNull}`;
    case 'int':
      return `an integer${range}${orNull}`;
    case 'float':
      return `a number${range}${orNull}`;
    case 'bool':
      return 'true or false';
    case 'list':
      return f.tuple !== undefined
        ? `${f.tuple} comma-separated numbers in [0, 1)`
        : `a comma list of ${(f.choices?.() ?? []).join(', ')}`;
    default:
      return `a non-empty string${orNull}`;
  }
}

/** The canonical string of `raw` for field `f`, or a TrainConfigError naming the key. */
export function canonicalValue(f: ConfigField, raw: string): string {
  const c = defaultsCache();
  setConfigValue(c, f.path, raw);
  return formatFieldValue(getPath(c, f.path));
}

let defaults: TrainConfig | null = null;
function defaultsCache(): TrainConfig {
  defaults ??= trainTabDefaults();
  return cloneConfig(defaults);
}

function codecOf(f: ConfigField): Codec<string> {
  return {
    parse: (raw) => {
      try {
        return canonicalValue(f, raw);
      } catch {
        return undefined;
      }
    },
    format: (v) => v,
    expects: describeField(f),
  };
}

/** The URL schema of the form: one field per config leaf, its default the tab's default. */
export function trainFormSchema(): Schema<TrainFormFields> {
  const d = trainTabDefaults();
  return Object.fromEntries(
    CONFIG_FIELDS.map((f) => [
      formKey(f.path),
      { key: f.path, codec: codecOf(f), default: formatFieldValue(getPath(d, f.path)) },
    ]),
  ) as Schema<TrainFormFields>;
}

export function formFromConfig(c: TrainConfig): TrainFormFields {
  return Object.fromEntries(
    CONFIG_FIELDS.map((f) => [formKey(f.path), formatFieldValue(getPath(c, f.path))]),
  ) as TrainFormFields;
}

export interface FormProblem {
  path: string;
  message: string;
}

/** The config the form describes, or the problems that keep it from being one (each naming its key). */
export function configFromForm(form: Partial<TrainFormFields>): {
  config: TrainConfig | null;
  problems: FormProblem[];
} {
  const c = defaultsCache();
  const problems: FormProblem[] = [];
  for (const f of CONFIG_FIELDS) {
    const raw = form[formKey(f.path)];
    if (raw === undefined) continue;
    try {
      setConfigValue(c, f.path, raw);
    } catch (e) {
      problems.push({ path: f.path, message: (e as Error).message });
    }
  }
  if (problems.length === 0)
    try {
      checkConsistency(c);
    } catch (e) {
      const err = e as Error & { path?: string };
      problems.push({ path: err.path ?? 'config', message: err.message });
    }
  return { config: problems.length ? null : c, problems };
}

/** Form sections: a field's parent path cut to two segments (`algorithm.rollout_correction`, `actor_rollout_ref.actor`). */
export function sectionOf(path: string): string {
  const parts = path.split('.').slice(0, -1);
  return parts.slice(0, 2).join('.');
}

export function formSections(): { section: string; fields: ConfigField[] }[] {
  const out: { section: string; fields: ConfigField[] }[] = [];
  for (const f of CONFIG_FIELDS) {
    const s = sectionOf(f.path);
    let group = out.find((g) => g.section === s);
    if (!group) {
      group = { section: s, fields: [] };
      out.push(group);
    }
    group.fields.push(f);
  }
  return out;
}
