/**
 * The trainer options: ONE type for every choice that changes what Agent Lightning 1.0 + verl 0.8.0 do with a
 * batch of rollouts. The settings are the `analysis` scope of core's config table (core/config/fields.ts: upstream
 * keys, upstream defaults, one flag each); `TRAINER_OPTIONS` is derived from it, and the page's controls, the CLI's
 * flags (`lab analyze`) and the URL fields are generated from that. `resolveTrainerOptions` is the one validator
 * (errors name the upstream key and the CLI flag) and resolves what upstream resolves from other keys: the
 * sample-building lengths by level, the loss mode from `loss_agg_mode` + `policy_loss.loss_mode`, and
 * `clip_ratio_low` / `clip_ratio_high` null from `clip_ratio`.
 */
import type { TraceAggregatorLevel } from '../aggregate/buildTrainingBatch';
import { getAdvEstimator } from '../algos/advantage';
import { getLossMode, listLossModes } from '../algos/lossModes';
import type { FloatDType } from '../algos/numeric';
import {
  DEFAULT_REFERENCE_STACK,
  getReferenceStack,
  listReferenceStacks,
  type ReferenceStack,
  type ReferenceStackName,
} from '../algos/stacks';
import {
  type ConfigFieldDef,
  DTYPE_CHOICES,
  type FieldChoice,
  fieldsOfScope,
  LEVEL_CHOICES,
  lossModeKeys,
  lossModeOf,
  readsLossAggMode,
  sampleLengths,
  TOKEN_SOURCE_CHOICES,
} from '../config/fields';
import type { TokenSource } from '../tokenize/retokenize';

/** The default reference stack: the upstream releases whose semantics the defaults reproduce (algos/stacks.ts). */
export const REFERENCE_STACK: ReferenceStack = getReferenceStack(DEFAULT_REFERENCE_STACK);

/** The stack the options choose (`lab.reference_stack`). */
export function referenceStackOf(o: Pick<TrainerSettings, 'referenceStack'>): ReferenceStack {
  return getReferenceStack(o.referenceStack);
}

export type RolloutIsLevel = 'token' | 'sequence';

/** The settings the pipeline reads: one per `analysis` field of the config table (its `option` name). */
export interface TrainerSettings {
  /** agentlightning.trace_aggregator.level */
  traceAggregatorLevel: TraceAggregatorLevel;
  /** agentlightning.trace_aggregator.trajectory_max_prompt_length / trajectory_max_response_length */
  trajectoryMaxPromptLength: number;
  trajectoryMaxResponseLength: number;
  /** data.max_prompt_length / data.max_response_length (the limits at transition level) */
  dataMaxPromptLength: number;
  dataMaxResponseLength: number;
  /** agentlightning.reward_fillna_value: the reward of a rollout that reported none (failed rollouts) */
  rewardFillnaValue: number;
  /** lab.token_source: the engine's ids (what upstream trains on) or the chat template re-encoded */
  tokenSource: TokenSource;
  /** algorithm.adv_estimator */
  advEstimator: string;
  /** algorithm.norm_adv_by_std_in_grpo */
  normAdvByStdInGrpo: boolean;
  /** algorithm.gamma */
  gamma: number;
  /** algorithm.enable_rollout_level_advantage */
  enableRolloutLevelAdvantage: boolean;
  /** lab.reward_dtype: the dtype of token_level_scores and so of the advantages */
  rewardDtype: FloatDType;
  /** actor_rollout_ref.actor.loss_agg_mode */
  lossAggMode: string;
  /** actor_rollout_ref.actor.policy_loss.loss_mode */
  policyLossMode: string;
  /** actor_rollout_ref.actor.loss_scale_factor (seq-mean-token-sum-norm's divisor; null: max_response_length) */
  lossScaleFactor: number | null;
  /** actor_rollout_ref.actor.clip_ratio / clip_ratio_low / clip_ratio_high (null: clip_ratio) / clip_ratio_c */
  clipRatio: number;
  clipRatioLow: number | null;
  clipRatioHigh: number | null;
  clipRatioC: number;
  /** lab.mini_batch_rows: ppo_mini_batch_size × rollout.n (rows per mini-batch); null: the whole batch */
  ppoMiniBatchSize: number | null;
  /** agentlightning.max_ppo_update_times */
  maxPpoUpdateTimes: number | null;
  /** lab.trim_seed: seed of the trimming shuffle (upstream uses Python's unseeded global `random`) */
  trimSeed: number;
  /** trainer.balance_batch: reorder rows by sequence length before advantages and mini-batching */
  balanceBatch: boolean;
  /** algorithm.rollout_correction.* */
  rolloutIs: RolloutIsLevel | null;
  rolloutIsThreshold: number | string | null;
  rolloutIsBatchNormalize: boolean;
  rolloutRs: string | null;
  rolloutRsThreshold: number | string | null;
  /** lab.reference_stack: whose semantics (Agent Lightning 1.0 + verl 0.8.0, or verl 0.9.0's algorithms) */
  referenceStack: ReferenceStackName;
  /** actor_rollout_ref.actor.policy_loss.dro_beta (verl 0.9.0; policy_loss.loss_mode dro requires it) */
  droBeta: number | null;
}

/** The settings resolved as upstream resolves them: what the pipeline computes with. */
export interface TrainerOptions extends TrainerSettings {
  /** the sample-building limits at the chosen level (trajectory_max_* or data.max_*) */
  maxPromptLength: number;
  maxResponseLength: number;
  /** the loss-mode registry name loss_agg_mode + policy_loss.loss_mode select */
  lossMode: string;
  clipRatioLow: number;
  clipRatioHigh: number;
}

/** Derived fields a caller may still give as a shorthand: they set the keys they resolve from. */
const SHORTHANDS = ['maxPromptLength', 'maxResponseLength', 'lossMode'] as const;

/** What `resolveTrainerOptions` takes: settings, and the shorthands. */
export type TrainerOptionsInput = Partial<TrainerSettings> &
  Partial<Pick<TrainerOptions, (typeof SHORTHANDS)[number]>>;

export type OptionKind = 'enum' | 'int' | 'number' | 'bool' | 'nullable-int' | 'nullable-number' | 'spec';

export type OptionChoice = FieldChoice;

export interface OptionSpec<K extends keyof TrainerSettings = keyof TrainerSettings> {
  name: K;
  /** the upstream config key (`lab.*` for options upstream does not have) */
  key: string;
  /** the CLI flag (without --): the same flag means the same key in every command */
  flag: string;
  /** short key in the page's URL */
  urlKey: string;
  kind: OptionKind;
  label: string;
  help: string;
  /** for enums: the choices, from core's registries */
  choices?: () => readonly OptionChoice[];
  /** enums that accept null */
  nullable?: boolean;
  min?: number;
  minExclusive?: boolean;
  max?: number;
  /** offered by the page (the rest are CLI-only: they need inputs the page does not have) */
  page: boolean;
  /** estimator options: shown only when the estimator declares them */
  estimatorField?: 'normAdvByStd' | 'gamma';
  /** the config table's field */
  field: ConfigFieldDef;
}

/*
 * Token sources, merge levels and dtypes are core union types; their choice records in the config table must
 * name every member (the compiler checks these assignments).
 */
const _levels: Record<TraceAggregatorLevel, string> = LEVEL_CHOICES;
const _tokenSources: Record<TokenSource, string> = TOKEN_SOURCE_CHOICES;
const _dtypes: Record<FloatDType, string> = DTYPE_CHOICES;
void [_levels, _tokenSources, _dtypes];

function optionKind(f: ConfigFieldDef): OptionKind {
  switch (f.kind) {
    case 'enum':
      return 'enum';
    case 'bool':
      return 'bool';
    case 'int':
      return f.nullable ? 'nullable-int' : 'int';
    case 'float':
      return f.nullable ? 'nullable-number' : 'number';
    case 'threshold':
    case 'string':
      return 'spec';
    default:
      throw new Error(`config table: ${f.key} (${f.kind}) cannot be a trainer option`);
  }
}

function specOf(f: ConfigFieldDef): OptionSpec {
  if (!f.option || !f.urlKey || f.page === undefined)
    throw new Error(`config table: analysis field ${f.key} needs option, urlKey and page`);
  return {
    name: f.option as keyof TrainerSettings,
    key: f.key,
    flag: f.flag,
    urlKey: f.urlKey,
    kind: optionKind(f),
    label: f.label,
    help: f.help,
    choices: f.choices,
    nullable: f.kind === 'enum' ? f.nullable : undefined,
    min: f.min,
    minExclusive: f.minExclusive,
    max: f.max,
    page: f.page,
    estimatorField: f.estimatorField,
    field: f,
  };
}

/** The trainer options: the `analysis` scope of the config table, in its order. */
export const TRAINER_OPTIONS: readonly OptionSpec[] = fieldsOfScope('analysis').map(specOf);

/** The settings at their table defaults. */
export const DEFAULT_TRAINER_SETTINGS: TrainerSettings = Object.fromEntries(
  TRAINER_OPTIONS.map((o) => [o.name, o.field.default]),
) as unknown as TrainerSettings;

/** The defaults resolved (what `resolveTrainerOptions()` returns). */
export const DEFAULT_TRAINER_OPTIONS: TrainerOptions = derive(DEFAULT_TRAINER_SETTINGS);

/** What upstream resolves from other keys, from the settings. */
function derive(s: TrainerSettings): TrainerOptions {
  return {
    ...s,
    ...sampleLengths({ level: s.traceAggregatorLevel, ...s }),
    lossMode: lossModeOf(s.lossAggMode, s.policyLossMode),
    clipRatioLow: s.clipRatioLow ?? s.clipRatio,
    clipRatioHigh: s.clipRatioHigh ?? s.clipRatio,
  };
}

/** The settings of resolved options (their derived fields dropped). */
export function settingsOf(o: TrainerSettings): TrainerSettings {
  return Object.fromEntries(TRAINER_OPTIONS.map((s) => [s.name, o[s.name]])) as unknown as TrainerSettings;
}

export class TrainerOptionError extends Error {
  constructor(
    readonly option: OptionSpec,
    message: string,
  ) {
    super(`${option.key} (--${option.flag}): ${message}`);
    this.name = 'TrainerOptionError';
  }
}

export function getOptionSpec(name: keyof TrainerSettings): OptionSpec {
  const s = TRAINER_OPTIONS.find((o) => o.name === name);
  if (!s) throw new Error(`no trainer option '${name}'`);
  return s;
}

/** An option's choices on a reference stack (the stack's own for the stack-dependent ones). */
export function optionChoices(spec: OptionSpec, stack: ReferenceStackName): readonly OptionChoice[] {
  return spec.field.stackChoices?.(stack) ?? spec.choices?.() ?? [];
}

/** The stacks whose choices of an option hold a value. */
function stacksWith(spec: OptionSpec, value: unknown): ReferenceStackName[] {
  return listReferenceStacks()
    .filter((st) => optionChoices(spec, st.name).some((c) => c.value === value))
    .map((st) => st.name);
}

/**
 * What one option's check cannot see: a value another reference stack has (token-sum, dro on verl-0.9.0 only),
 * and dro without its β. Throws TrainerOptionError naming the stack.
 */
function checkAcrossOptions(o: TrainerSettings): void {
  for (const spec of TRAINER_OPTIONS) {
    if (!spec.field.stackChoices) continue;
    const v = o[spec.name];
    if (optionChoices(spec, o.referenceStack).some((c) => c.value === v)) continue;
    throw new TrainerOptionError(
      spec,
      `${String(v)} exists only on reference stack ${stacksWith(spec, v).join(', ')}; lab.reference_stack (--reference-stack) is ${o.referenceStack}, which has ${optionChoices(
        spec,
        o.referenceStack,
      )
        .map((c) => c.value)
        .join(', ')}`,
    );
  }
  if (o.policyLossMode === 'dro' && o.droBeta == null)
    throw new TrainerOptionError(
      getOptionSpec('droBeta'),
      'must be a positive value when policy_loss.loss_mode is dro (verl 0.9.0 raises ValueError otherwise)',
    );
}

/** Checks one value against its spec; returns it or throws. */
function checkValue(spec: OptionSpec, v: unknown): unknown {
  const fail = (msg: string): never => {
    throw new TrainerOptionError(spec, msg);
  };
  const show = (x: unknown) => (typeof x === 'string' ? `'${x}'` : JSON.stringify(x));
  switch (spec.kind) {
    case 'enum': {
      if (v === null && spec.nullable) return null;
      // a stack-dependent option takes any stack's value here; checkAcrossOptions holds it to the chosen stack
      const choices = spec.field.stackChoices
        ? [
            ...new Map(
              listReferenceStacks().flatMap((st) =>
                optionChoices(spec, st.name).map((c) => [c.value, c] as const),
              ),
            ).values(),
          ]
        : (spec.choices?.() ?? []);
      const c = choices.find((x) => x.value === v);
      if (!c)
        fail(
          `must be one of ${choices.map((x) => x.value).join(', ')}${spec.nullable ? ' or null' : ''}, got ${show(v)}`,
        );
      if (c?.unavailable) fail(`${c.value} cannot run on a recorded trace: ${c.unavailable}`);
      return v;
    }
    case 'bool':
      if (typeof v !== 'boolean') fail(`must be true or false, got ${show(v)}`);
      return v;
    case 'int':
    case 'number':
    case 'nullable-int':
    case 'nullable-number': {
      if (v === null && spec.kind.startsWith('nullable')) return null;
      if (typeof v !== 'number' || !Number.isFinite(v)) fail(`must be a finite number, got ${show(v)}`);
      const x = v as number;
      if (spec.kind.endsWith('int') && !Number.isInteger(x)) fail(`must be an integer, got ${x}`);
      if (spec.min !== undefined && (spec.minExclusive ? !(x > spec.min) : x < spec.min))
        fail(`must be ${spec.minExclusive ? '>' : '≥'} ${spec.min}, got ${x}`);
      if (spec.max !== undefined && x > spec.max) fail(`must be ≤ ${spec.max}, got ${x}`);
      return x;
    }
    case 'spec':
      if (v !== null && typeof v !== 'string' && (typeof v !== 'number' || !Number.isFinite(v)))
        fail(`must be a number, a string or null, got ${show(v)}`);
      if (v === '') fail('must not be empty (null turns it off)');
      return v;
  }
}

/** A shorthand (a derived field given as input) → the setting it stands for at these settings. */
function shorthand(o: Record<string, unknown>, name: (typeof SHORTHANDS)[number], v: unknown): void {
  if (name === 'lossMode') {
    if (typeof v !== 'string' || !listLossModes().some((m) => m.name === v))
      throw new TrainerOptionError(
        getOptionSpec('policyLossMode'),
        `must be a loss mode (${listLossModes()
          .map((m) => m.name)
          .join(', ')}), got ${JSON.stringify(v)}`,
      );
    const k = lossModeKeys(getLossMode(v).name);
    // an aggregation under dro stays dro's
    if (!(k.lossAggMode !== null && readsLossAggMode(String(o.policyLossMode))))
      o.policyLossMode = k.policyLossMode;
    if (k.lossAggMode !== null) o.lossAggMode = k.lossAggMode;
    return;
  }
  const trajectory = String(o.traceAggregatorLevel).startsWith('trajectory');
  const prompt = name === 'maxPromptLength';
  const target = trajectory
    ? prompt
      ? 'trajectoryMaxPromptLength'
      : 'trajectoryMaxResponseLength'
    : prompt
      ? 'dataMaxPromptLength'
      : 'dataMaxResponseLength';
  o[target] = checkValue(getOptionSpec(target), v);
}

/**
 * Options from a partial set: missing fields take the table defaults; every given value is checked against its
 * spec (unknown names, wrong types, out-of-range numbers, an estimator a trace cannot feed: TrainerOptionError);
 * then what upstream resolves from other keys is resolved. The derived `maxPromptLength` / `maxResponseLength` /
 * `lossMode`, when given with a value other than the defaults' resolved one, are shorthands for the keys they
 * resolve from (the level's lengths; the two loss keys).
 */
export function resolveTrainerOptions(partial: TrainerOptionsInput = {}): TrainerOptions {
  const out = { ...DEFAULT_TRAINER_SETTINGS } as Record<string, unknown>;
  const late: [(typeof SHORTHANDS)[number], unknown][] = [];
  for (const [k, v] of Object.entries(partial)) {
    if (v === undefined) continue;
    if ((SHORTHANDS as readonly string[]).includes(k)) {
      late.push([k as (typeof SHORTHANDS)[number], v]);
      continue;
    }
    const spec = TRAINER_OPTIONS.find((o) => o.name === k);
    if (!spec) throw new Error(`unknown trainer option '${k}'`);
    out[k] = checkValue(spec, v);
  }
  for (const [k, v] of late) {
    // a shorthand that equals the defaults' resolved value came with them (`{ ...DEFAULT_TRAINER_OPTIONS, … }`):
    // the settings decide it
    if (v === DEFAULT_TRAINER_OPTIONS[k]) continue;
    const derived = derive(out as unknown as TrainerSettings);
    if (derived[k] !== v) shorthand(out, k, v);
  }
  const o = derive(out as unknown as TrainerSettings);
  getAdvEstimator(o.advEstimator);
  checkAcrossOptions(o);
  return o;
}

/**
 * The page's variant: a value that does not pass its spec (an old or hand-edited link) falls back to the
 * default instead of failing.
 */
export function resolveTrainerOptionsLenient(partial: Partial<Record<keyof TrainerSettings, unknown>>): {
  options: TrainerOptions;
  /** the options whose value was replaced by the default, with why */
  replaced: { name: keyof TrainerSettings; reason: string }[];
} {
  const out = { ...DEFAULT_TRAINER_SETTINGS } as Record<string, unknown>;
  const replaced: { name: keyof TrainerSettings; reason: string }[] = [];
  for (const spec of TRAINER_OPTIONS) {
    const v = partial[spec.name];
    if (v === undefined) continue;
    try {
      out[spec.name] = checkValue(spec, v);
    } catch (e) {
      replaced.push({ name: spec.name, reason: (e as Error).message });
    }
  }
  // what the chosen stack or dro's β refuses falls back too, one option at a time
  for (let guard = 0; guard < TRAINER_OPTIONS.length; guard++) {
    try {
      checkAcrossOptions(out as unknown as TrainerSettings);
      break;
    } catch (e) {
      if (!(e instanceof TrainerOptionError)) throw e;
      const name = e.option.name;
      // dro without β: the policy loss falls back (the β was never set)
      const back = name === 'droBeta' ? 'policyLossMode' : name;
      out[back] = DEFAULT_TRAINER_SETTINGS[back];
      replaced.push({ name: back, reason: e.message });
    }
  }
  return { options: derive(out as unknown as TrainerSettings), replaced };
}

/** The estimator options that apply to the chosen estimator (the others are shown disabled / ignored). */
export function estimatorReads(o: TrainerSettings, spec: OptionSpec): boolean {
  if (spec.estimatorField)
    return getAdvEstimator(o.advEstimator).options.some((x) => x.field === spec.estimatorField);
  // what the level does not read, and the aggregation a policy loss other than vanilla ignores
  const trajectory = o.traceAggregatorLevel === 'trajectory';
  if (spec.name === 'dataMaxPromptLength') return !trajectory;
  if (spec.name === 'trajectoryMaxPromptLength' || spec.name === 'trajectoryMaxResponseLength')
    return trajectory;
  if (spec.name === 'lossAggMode') return readsLossAggMode(o.policyLossMode);
  if (spec.name === 'droBeta') return o.policyLossMode === 'dro';
  return true;
}
