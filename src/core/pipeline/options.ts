/**
 * The trainer options: ONE type for every choice that changes what Agent Lightning 1.0 + verl 0.8.0 do with a
 * batch of rollouts, with upstream names and upstream defaults, as a registry of option specs. The page's controls,
 * the CLI's flags (`lab analyze`) and the URL fields are generated from `TRAINER_OPTIONS`; `resolveTrainerOptions`
 * is the one validator (errors name the upstream key and the CLI flag).
 *
 * Defaults are Agent Lightning 1.0's `agentlightning/verl/config.yaml` over verl 0.8.0's `ppo_trainer.yaml`,
 * except where a recorded trace cannot follow them: `algorithm.adv_estimator` defaults to grpo (verl's default
 * gae needs a critic's values), and the whole trained batch is one PPO mini-batch unless
 * `ppo_mini_batch_size` is given (verl's 256 × rollout.n would leave nothing of a small trace).
 */
import type { TraceAggregatorLevel } from '../aggregate/buildTrainingBatch';
import { getAdvEstimator, listAdvEstimators, traceUnavailable } from '../algos/advantage';
import { listLossModes } from '../algos/lossModes';
import type { FloatDType } from '../algos/numeric';
import type { TokenSource } from '../tokenize/retokenize';

/** The upstream releases whose semantics this reproduces (named in the page and the CLI). */
export const REFERENCE_STACK = {
  agentlightning: '1.0.x',
  verl: '0.8.0',
  label: 'Agent Lightning 1.0.x + verl 0.8.0',
} as const;

export type RolloutIsLevel = 'token' | 'sequence';

export interface TrainerOptions {
  /** agentlightning.trace_aggregator.level */
  traceAggregatorLevel: TraceAggregatorLevel;
  /** agentlightning.trace_aggregator.trajectory_max_prompt_length (data.max_prompt_length at transition level) */
  maxPromptLength: number;
  /** agentlightning.trace_aggregator.trajectory_max_response_length (data.max_response_length at transition level) */
  maxResponseLength: number;
  /** agentlightning.reward_fillna_value: the reward of a rollout that reported none (failed rollouts) */
  rewardFillnaValue: number;
  /** which ids the rows are built from: the engine's (what upstream trains on) or the chat template re-encoded */
  tokenSource: TokenSource;
  /** algorithm.adv_estimator */
  advEstimator: string;
  /** algorithm.norm_adv_by_std_in_grpo */
  normAdvByStdInGrpo: boolean;
  /** algorithm.gamma */
  gamma: number;
  /** algorithm.enable_rollout_level_advantage */
  enableRolloutLevelAdvantage: boolean;
  /** the dtype of token_level_scores and so of the advantages: the adapter's bfloat16, or float32 to compare */
  rewardDtype: FloatDType;
  /** a loss-mode registry name: actor_rollout_ref.actor.loss_agg_mode or ….policy_loss.loss_mode */
  lossMode: string;
  /** actor_rollout_ref.actor.loss_scale_factor (seq-mean-token-sum-norm's divisor; null: max_response_length) */
  lossScaleFactor: number | null;
  /** actor_rollout_ref.actor.clip_ratio / clip_ratio_low / clip_ratio_high / clip_ratio_c */
  clipRatio: number;
  clipRatioLow: number;
  clipRatioHigh: number;
  clipRatioC: number;
  /** actor_rollout_ref.actor.ppo_mini_batch_size × rollout.n (rows per mini-batch); null: the whole batch */
  ppoMiniBatchSize: number | null;
  /** agentlightning.max_ppo_update_times */
  maxPpoUpdateTimes: number | null;
  /** seed of the trimming shuffle (upstream uses Python's unseeded global `random`) */
  trimSeed: number;
  /** trainer.balance_batch: reorder rows by sequence length before advantages and mini-batching */
  balanceBatch: boolean;
  /** algorithm.rollout_correction.* */
  rolloutIs: RolloutIsLevel | null;
  rolloutIsThreshold: number | string | null;
  rolloutIsBatchNormalize: boolean;
  rolloutRs: string | null;
  rolloutRsThreshold: number | string | null;
}

export type OptionKind = 'enum' | 'int' | 'number' | 'bool' | 'nullable-int' | 'nullable-number' | 'spec';

export interface OptionChoice {
  value: string;
  label: string;
  title?: string;
  /** why it cannot be chosen for a recorded trace (the page disables it, the CLI refuses it) */
  unavailable?: string | null;
}

export interface OptionSpec<K extends keyof TrainerOptions = keyof TrainerOptions> {
  name: K;
  /** the upstream config key (ours for options upstream does not have) */
  key: string;
  /** the CLI flag (without --) */
  flag: string;
  /** short key in the page's URL */
  urlKey: string;
  kind: OptionKind;
  label: string;
  help: string;
  /** for enums: the choices, from core's registries */
  choices?: () => OptionChoice[];
  /** enums that accept null (shown as "none") */
  nullable?: boolean;
  min?: number;
  max?: number;
  /** offered by the page (the rest are CLI-only: they need inputs the page does not have) */
  page: boolean;
  /** estimator options: shown only when the estimator declares them */
  estimatorField?: 'normAdvByStd' | 'gamma';
}

export const DEFAULT_TRAINER_OPTIONS: TrainerOptions = {
  traceAggregatorLevel: 'trajectory',
  maxPromptLength: 2048,
  maxResponseLength: 8192,
  rewardFillnaValue: 0,
  tokenSource: 'engine',
  advEstimator: 'grpo',
  normAdvByStdInGrpo: true,
  gamma: 1,
  enableRolloutLevelAdvantage: true,
  rewardDtype: 'bfloat16',
  lossMode: 'per_rollout_mean',
  lossScaleFactor: null,
  clipRatio: 0.2,
  clipRatioLow: 0.2,
  clipRatioHigh: 0.2,
  clipRatioC: 3,
  ppoMiniBatchSize: null,
  maxPpoUpdateTimes: null,
  trimSeed: 0,
  balanceBatch: true,
  rolloutIs: null,
  rolloutIsThreshold: 2,
  rolloutIsBatchNormalize: false,
  rolloutRs: null,
  rolloutRsThreshold: null,
};

/*
 * Token sources and merge levels are core union types, mirrored here in records keyed by those types (the
 * compiler demands an entry, with its meaning, for every member core adds).
 */
const LEVELS: Record<TraceAggregatorLevel, string> = {
  trajectory: 'a call whose prompt extends the context joins the row (observations get mask 0)',
  transition: 'one training row per call',
};
const TOKEN_SOURCES: Record<TokenSource, string> = {
  engine: 'the ids the engine returned: what the policy sampled (what Agent Lightning trains on)',
  retokenize: 'chat template over the messages, encoded again (a text-only trainer)',
};
const DTYPES: Record<FloatDType, string> = {
  bfloat16: 'as Agent Lightning: the adapter builds token_level_scores in bfloat16',
  float32: 'float32 rewards and advantages (to see what bfloat16 costs)',
};
const recordChoices =
  <T extends string>(r: Record<T, string>) =>
  () =>
    (Object.keys(r) as T[]).map((value) => ({ value, label: value, title: r[value] }));

export const TRAINER_OPTIONS: OptionSpec[] = [
  {
    name: 'tokenSource',
    key: 'token source',
    flag: 'token-source',
    urlKey: 'tokens',
    kind: 'enum',
    label: 'Token source',
    help: 'which ids the rows are built from',
    choices: recordChoices(TOKEN_SOURCES),
    page: true,
  },
  {
    name: 'traceAggregatorLevel',
    key: 'agentlightning.trace_aggregator.level',
    flag: 'level',
    urlKey: 'level',
    kind: 'enum',
    label: 'Aggregation level',
    help: 'how calls become training rows',
    choices: recordChoices(LEVELS),
    page: true,
  },
  {
    name: 'maxPromptLength',
    key: 'agentlightning.trace_aggregator.trajectory_max_prompt_length',
    flag: 'max-prompt-length',
    urlKey: 'maxp',
    kind: 'int',
    label: 'Max prompt length',
    help: 'a longer first prompt is truncated and its row marked is_drop (removed before advantages)',
    min: 1,
    max: 1 << 24,
    page: true,
  },
  {
    name: 'maxResponseLength',
    key: 'agentlightning.trace_aggregator.trajectory_max_response_length',
    flag: 'max-response-length',
    urlKey: 'maxr',
    kind: 'int',
    label: 'Max response length',
    help: 'responses are truncated to it; also the padded width seq-mean-token-sum-norm divides by',
    min: 1,
    max: 1 << 24,
    page: true,
  },
  {
    name: 'rewardFillnaValue',
    key: 'agentlightning.reward_fillna_value',
    flag: 'reward-fillna-value',
    urlKey: 'fillna',
    kind: 'number',
    label: 'Reward of rollouts without one',
    help: 'failed rollouts are still trained on, with this reward',
    min: -1e6,
    max: 1e6,
    page: true,
  },
  {
    name: 'advEstimator',
    key: 'algorithm.adv_estimator',
    flag: 'adv',
    urlKey: 'adv',
    kind: 'enum',
    label: 'Advantage estimator',
    help: 'verl estimator',
    choices: () =>
      listAdvEstimators().map((e) => ({
        value: e.name,
        label: `${e.name} — ${e.label}`,
        title: e.formula,
        unavailable: traceUnavailable(e),
      })),
    page: true,
  },
  {
    name: 'normAdvByStdInGrpo',
    key: 'algorithm.norm_adv_by_std_in_grpo',
    flag: 'norm-adv-by-std',
    urlKey: 'std',
    kind: 'bool',
    label: 'Normalize by std',
    help: 'divide by the group std (false: Dr. GRPO)',
    page: true,
    estimatorField: 'normAdvByStd',
  },
  {
    name: 'gamma',
    key: 'algorithm.gamma',
    flag: 'gamma',
    urlKey: 'gamma',
    kind: 'number',
    label: 'Discount γ',
    help: 'discount of the running return',
    min: 0,
    max: 1,
    page: true,
    estimatorField: 'gamma',
  },
  {
    name: 'enableRolloutLevelAdvantage',
    key: 'algorithm.enable_rollout_level_advantage',
    flag: 'rollout-level-adv',
    urlKey: 'rla',
    kind: 'bool',
    label: 'Rollout-level advantage',
    help: 'the estimator sees one row per rollout, so each rollout counts once in its group',
    page: true,
  },
  {
    name: 'rewardDtype',
    key: 'reward dtype (token_level_scores)',
    flag: 'reward-dtype',
    urlKey: 'dtype',
    kind: 'enum',
    label: 'Reward dtype',
    help: 'the dtype rewards and advantages are computed in',
    choices: recordChoices(DTYPES),
    page: true,
  },
  {
    name: 'lossMode',
    key: 'actor_rollout_ref.actor.loss_agg_mode | actor_rollout_ref.actor.policy_loss.loss_mode',
    flag: 'loss-mode',
    urlKey: 'loss',
    kind: 'enum',
    label: 'Loss mode',
    help: 'how per-token losses become the scalar the actor minimises',
    choices: () =>
      listLossModes().map((m) => ({ value: m.name, label: m.name, title: `${m.key}: ${m.formula}` })),
    page: true,
  },
  {
    name: 'lossScaleFactor',
    key: 'actor_rollout_ref.actor.loss_scale_factor',
    flag: 'loss-scale-factor',
    urlKey: 'lsf',
    kind: 'nullable-number',
    label: 'Loss scale factor',
    help: 'seq-mean-token-sum-norm divides by it (default: max_response_length, the padded width)',
    min: 1e-9,
    page: false,
  },
  {
    name: 'clipRatio',
    key: 'actor_rollout_ref.actor.clip_ratio',
    flag: 'clip-ratio',
    urlKey: 'clip',
    kind: 'number',
    label: 'Clip ratio',
    help: 'the fallback of clip_ratio_low / clip_ratio_high',
    min: 0,
    max: 10,
    page: false,
  },
  {
    name: 'clipRatioLow',
    key: 'actor_rollout_ref.actor.clip_ratio_low',
    flag: 'clip-ratio-low',
    urlKey: 'clo',
    kind: 'number',
    label: 'Clip ratio low',
    help: 'only changes tokens whose ratio leaves the clip range',
    min: 0,
    max: 1,
    page: true,
  },
  {
    name: 'clipRatioHigh',
    key: 'actor_rollout_ref.actor.clip_ratio_high',
    flag: 'clip-ratio-high',
    urlKey: 'chi',
    kind: 'number',
    label: 'Clip ratio high',
    help: 'only changes tokens whose ratio leaves the clip range',
    min: 0,
    max: 10,
    page: true,
  },
  {
    name: 'clipRatioC',
    key: 'actor_rollout_ref.actor.clip_ratio_c',
    flag: 'clip-ratio-c',
    urlKey: 'cc',
    kind: 'number',
    label: 'Dual-clip bound c',
    help: 'for A < 0 the loss is capped at −A·c (must exceed 1)',
    min: 1.000001,
    max: 100,
    page: true,
  },
  {
    name: 'ppoMiniBatchSize',
    key: 'actor_rollout_ref.actor.ppo_mini_batch_size × actor_rollout_ref.rollout.n',
    flag: 'ppo-mini-batch-size',
    urlKey: 'mb',
    kind: 'nullable-int',
    label: 'Mini-batch rows',
    help: 'the batch is trimmed to a multiple of it and split into mini-batches (default: one mini-batch)',
    min: 1,
    page: false,
  },
  {
    name: 'maxPpoUpdateTimes',
    key: 'agentlightning.max_ppo_update_times',
    flag: 'max-ppo-update-times',
    urlKey: 'mput',
    kind: 'nullable-int',
    label: 'Max PPO updates',
    help: 'keep at most this many mini-batches',
    min: 1,
    page: false,
  },
  {
    name: 'trimSeed',
    key: 'trimming seed',
    flag: 'trim-seed',
    urlKey: 'tseed',
    kind: 'int',
    label: 'Trimming seed',
    help: 'seed of the shuffle that picks the rows trimming drops (upstream: unseeded random.shuffle)',
    min: 0,
    max: 2 ** 31 - 1,
    page: false,
  },
  {
    name: 'balanceBatch',
    key: 'trainer.balance_batch',
    flag: 'balance-batch',
    urlKey: 'bal',
    kind: 'bool',
    label: 'Balance batch',
    help: 'reorder rows by sequence length (decides rollout-level representatives and mini-batches)',
    page: false,
  },
  {
    name: 'rolloutIs',
    key: 'algorithm.rollout_correction.rollout_is',
    flag: 'rollout-is',
    urlKey: 'ris',
    kind: 'enum',
    nullable: true,
    label: 'Rollout IS',
    help: 'truncated importance sampling between trainer and engine log-probs',
    choices: () => [
      { value: 'token', label: 'token' },
      { value: 'sequence', label: 'sequence' },
    ],
    page: false,
  },
  {
    name: 'rolloutIsThreshold',
    key: 'algorithm.rollout_correction.rollout_is_threshold',
    flag: 'rollout-is-threshold',
    urlKey: 'rist',
    kind: 'spec',
    label: 'Rollout IS threshold',
    help: 'upper bound, or "lo_hi" (IcePop)',
    page: false,
  },
  {
    name: 'rolloutIsBatchNormalize',
    key: 'algorithm.rollout_correction.rollout_is_batch_normalize',
    flag: 'rollout-is-batch-normalize',
    urlKey: 'risbn',
    kind: 'bool',
    label: 'Normalize IS weights',
    help: 'divide the IS weights by their batch mean',
    page: false,
  },
  {
    name: 'rolloutRs',
    key: 'algorithm.rollout_correction.rollout_rs',
    flag: 'rollout-rs',
    urlKey: 'rrs',
    kind: 'spec',
    label: 'Rejection sampling',
    help: 'options such as token_k1, seq_max_k2 (comma-separated)',
    page: false,
  },
  {
    name: 'rolloutRsThreshold',
    key: 'algorithm.rollout_correction.rollout_rs_threshold',
    flag: 'rollout-rs-threshold',
    urlKey: 'rrst',
    kind: 'spec',
    label: 'Rejection threshold',
    help: 'one per option; "lo_hi" for k1 options',
    page: false,
  },
];

export class TrainerOptionError extends Error {
  constructor(
    readonly option: OptionSpec,
    message: string,
  ) {
    super(`${option.key} (--${option.flag}): ${message}`);
    this.name = 'TrainerOptionError';
  }
}

export function getOptionSpec(name: keyof TrainerOptions): OptionSpec {
  const s = TRAINER_OPTIONS.find((o) => o.name === name);
  if (!s) throw new Error(`no trainer option '${name}'`);
  return s;
}

/** Checks one value against its spec; returns it (numbers from strings where the kind allows) or throws. */
function checkValue(spec: OptionSpec, v: unknown): unknown {
  const fail = (msg: string): never => {
    throw new TrainerOptionError(spec, msg);
  };
  const show = (x: unknown) => (typeof x === 'string' ? `'${x}'` : JSON.stringify(x));
  switch (spec.kind) {
    case 'enum': {
      if (v === null && spec.nullable) return null;
      const choices = spec.choices?.() ?? [];
      const c = choices.find((x) => x.value === v);
      if (!c)
        fail(
          `must be one of ${choices.map((x) => x.value).join(', ')}${spec.nullable ? ' or none' : ''}, got ${show(v)}`,
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
      if (spec.min !== undefined && x < spec.min) fail(`must be ≥ ${spec.min}, got ${x}`);
      if (spec.max !== undefined && x > spec.max) fail(`must be ≤ ${spec.max}, got ${x}`);
      return x;
    }
    case 'spec':
      if (v !== null && typeof v !== 'string' && (typeof v !== 'number' || !Number.isFinite(v)))
        fail(`must be a number, a string or none, got ${show(v)}`);
      return v;
  }
}

/**
 * Options from a partial set: missing fields take the defaults; every given value is checked against its spec
 * (unknown names, wrong types, out-of-range numbers, an estimator a trace cannot feed: TrainerOptionError).
 */
export function resolveTrainerOptions(partial: Partial<TrainerOptions> = {}): TrainerOptions {
  const out = { ...DEFAULT_TRAINER_OPTIONS } as Record<string, unknown>;
  for (const [k, v] of Object.entries(partial)) {
    if (v === undefined) continue;
    const spec = TRAINER_OPTIONS.find((o) => o.name === k);
    if (!spec) throw new Error(`unknown trainer option '${k}'`);
    out[k] = checkValue(spec, v);
  }
  const o = out as unknown as TrainerOptions;
  if (o.clipRatioC <= 1)
    throw new TrainerOptionError(getOptionSpec('clipRatioC'), `must be greater than 1, got ${o.clipRatioC}`);
  getAdvEstimator(o.advEstimator);
  return o;
}

/**
 * The page's variant: a value that does not pass its spec (an old or hand-edited link) falls back to the
 * default instead of failing.
 */
export function resolveTrainerOptionsLenient(partial: Partial<Record<keyof TrainerOptions, unknown>>): {
  options: TrainerOptions;
  /** the options whose value was replaced by the default, with why */
  replaced: { name: keyof TrainerOptions; reason: string }[];
} {
  const out = { ...DEFAULT_TRAINER_OPTIONS } as Record<string, unknown>;
  const replaced: { name: keyof TrainerOptions; reason: string }[] = [];
  for (const spec of TRAINER_OPTIONS) {
    const v = partial[spec.name];
    if (v === undefined) continue;
    try {
      out[spec.name] = checkValue(spec, v);
    } catch (e) {
      replaced.push({ name: spec.name, reason: (e as Error).message });
    }
  }
  const o = out as unknown as TrainerOptions;
  if (o.clipRatioC <= 1) o.clipRatioC = DEFAULT_TRAINER_OPTIONS.clipRatioC;
  return { options: o, replaced };
}

/** The estimator options that apply to the chosen estimator (the others are shown disabled / ignored). */
export function estimatorReads(o: TrainerOptions, spec: OptionSpec): boolean {
  if (!spec.estimatorField) return true;
  return getAdvEstimator(o.advEstimator).options.some((x) => x.field === spec.estimatorField);
}
