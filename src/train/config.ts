/**
 * The training run's configuration: ONE typed object with defaults, whose keys are the upstream Hydra keys of
 * Agent Lightning 1.0 + verl 0.8.0 (`algorithm.adv_estimator`, `actor_rollout_ref.actor.loss_agg_mode`,
 * `agentlightning.trace_aggregator.level`, …) so a run maps onto a real verl launch one to one; what upstream
 * has no key for lives under `lab.*`. Every leaf is the `run` scope of core's config table
 * (core/config/fields.ts: kind, default, range, choices, flag, help); `CONFIG_FIELDS` and the defaults are
 * derived from it, and this file supplies the choices whose registries live above core (harnesses, behaviours,
 * model presets, rollout engines and devices, weight precisions). The CLI flags, dotlist overrides (`key=value`,
 * as Hydra takes them), the page's form and URL state, presets and REST bodies all go through
 * `resolveTrainConfig` and `setConfigValue`, so a bad value gets the same message everywhere
 * ("actor_rollout_ref.rollout.n must be an integer ≥ 1, got 0").
 */
import {
  type ConfigFieldDef,
  type ExternalChoices,
  fieldsOfScope,
  isUpstreamKey,
  NULL_SPELLING,
} from '../core/config/fields';
import { isRecord } from '../core/wire';
import { WEIGHT_PRECISIONS, type WeightPrecision } from '../engine/onnx/causalLm';
import { BEHAVIOURS, type Behaviour } from '../harness/harness';
import { getHarness, HARNESSES, type HarnessName } from '../harness/registry';
import { MODEL_PRESETS, type ModelPreset } from './models';
import { ROLLOUT_DEVICES, ROLLOUT_ENGINES, type RolloutDevice, resolveRolloutChoice } from './rolloutEngines';

export interface TrainConfig {
  algorithm: {
    adv_estimator: string;
    norm_adv_by_std_in_grpo: boolean;
    gamma: number;
    /** Agent Lightning: the estimator runs on one row per rollout (default true upstream) */
    enable_rollout_level_advantage: boolean;
    rollout_correction: {
      rollout_is: 'token' | 'sequence' | null;
      /** a number, or "lo_hi" (IcePop) */
      rollout_is_threshold: number | string | null;
      rollout_is_batch_normalize: boolean;
      rollout_rs: string | null;
      rollout_rs_threshold: number | string | null;
      bypass_mode: boolean;
    };
  };
  data: {
    /** tasks (GRPO groups) per step; each runs actor_rollout_ref.rollout.n times */
    train_batch_size: number;
    max_prompt_length: number;
    max_response_length: number;
    shuffle: boolean;
  };
  actor_rollout_ref: {
    model: {
      /** 'sft' (the shipped SFT checkpoint of the harness), 'init' (seeded initialisation) or a checkpoint path/URL */
      path: string;
      /** LoRA rank on a Hugging Face folder (verl's key; 0: full fine-tuning) */
      lora_rank: number;
      lora_alpha: number;
      /** 'all-linear' or a comma list of HF module names */
      target_modules: string;
    };
    actor: {
      /** tasks per mini-batch (× rollout.n rows); one optimizer step per mini-batch */
      ppo_mini_batch_size: number;
      /** rows per engine batch (gradients of a mini-batch's micro-batches accumulate) */
      ppo_micro_batch_size_per_gpu: number;
      ppo_epochs: number;
      shuffle: boolean;
      loss_agg_mode: string;
      loss_scale_factor: number | null;
      clip_ratio: number;
      clip_ratio_low: number | null;
      clip_ratio_high: number | null;
      clip_ratio_c: number;
      entropy_coeff: number;
      use_kl_loss: boolean;
      kl_loss_coef: number;
      kl_loss_type: string;
      policy_loss: { loss_mode: string };
      optim: {
        lr: number;
        lr_warmup_steps: number;
        lr_warmup_steps_ratio: number;
        lr_scheduler_type: 'constant' | 'cosine';
        min_lr_ratio: number;
        weight_decay: number;
        betas: [number, number];
        clip_grad: number;
      };
    };
    rollout: {
      n: number;
      temperature: number;
      top_p: number;
      /** the engine's context window (vLLM max_model_len): prompts at or over it are refused */
      max_model_len: number;
      /** the rollout engine (rolloutEngines.ts): 'policy' (the trainer's own, colocated), 'onnxruntime-web', 'transformers.js' */
      name: string;
      val_kwargs: { n: number; temperature: number; top_p: number; do_sample: boolean };
    };
  };
  agentlightning: {
    trace_aggregator: {
      level: 'transition' | 'trajectory';
      trajectory_max_prompt_length: number;
      trajectory_max_response_length: number;
    };
    async_rollout: { enabled: boolean; async_train_batch_size: number };
    reward_fillna_value: number;
    max_ppo_update_times: number | null;
  };
  trainer: {
    total_training_steps: number;
    /** validate every k steps (and after the last); 0: never */
    test_freq: number;
    /** checkpoint every k steps (and after the last); 0: never */
    save_freq: number;
    val_before_train: boolean;
    /** reorder the trained rows by sequence length before advantages and mini-batching (upstream default true) */
    balance_batch: boolean;
    /** verl 0.9's trainer.v1 sampler: async staleness control in policy versions (null: keep all) */
    v1: { sampler: { max_off_policy_threshold: number | null; max_off_policy_strategy: 'drop' | 'wait' } };
  };
  lab: {
    harness: HarnessName;
    behaviours: Behaviour[];
    /** run seed: tasks, shuffles, sampling seeds and (for model.path 'init') the initialisation */
    seed: number;
    backend: 'cpu' | 'webgpu' | 'auto';
    /** the model preset (models.ts) when actor_rollout_ref.model.path is 'init' */
    model: ModelPreset;
    /** harness workers running rollouts */
    workers: number;
    /** size of the training task set (an epoch) and of the validation set */
    train_tasks: number;
    val_tasks: number;
    max_turns: number | null;
    /** difficulty level of the tasks (Harness.levels; null: the harness's mix of levels) */
    task_level: number | null;
    /** dtype of rewards and advantages on Agent Lightning's path (its adapter builds bf16 scores) */
    reward_dtype: 'bfloat16' | 'float32';
    /** 'engine': the recorded ids (what Agent Lightning trains on); 'retokenize': chat template re-encoded */
    token_source: 'engine' | 'retokenize';
    /** per-rollout wall-clock limit of a harness worker */
    rollout_timeout_ms: number;
    /** validation pass@k: k samples per val task are drawn when val_kwargs.n ≥ k */
    pass_k: number;
    /** keep every step's batch as a trace */
    keep_traces: boolean;
    /** the rollout engine's device ('auto': its first on this platform) */
    rollout_device: RolloutDevice;
    /** weights the rollout engine computes with (weight-only: f16 storage or int8 per channel, f32 compute) */
    rollout_precision: WeightPrecision;
    /** compare both engines' whole next-token distributions at each step's response tokens */
    vocab_mismatch: boolean;
    /** a LoRA run's frozen base in f16 / bf16 (packed on WebGPU), or f32 (exact) */
    lora_base_dtype: 'f32' | 'f16' | 'bf16';
    /** what one step of a Hugging Face folder run may hold in all, in MiB (0: the platform's figure or estimate) */
    memory_limit_mib: number;
  };
}

/** A partial config: every level optional (presets, CLI flags, URL state, REST bodies). */
export type TrainConfigPatch = DeepPartial<TrainConfig>;
type DeepPartial<T> = T extends (infer U)[]
  ? U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** The run's config at the table's defaults. */
export function defaultTrainConfig(): TrainConfig {
  const c: Record<string, unknown> = {};
  for (const f of CONFIG_FIELDS) {
    const d = f.def.default;
    setPath(c, f.path, Array.isArray(d) ? [...d] : d);
  }
  return c as unknown as TrainConfig;
}

export type FieldKind = 'int' | 'float' | 'bool' | 'enum' | 'string' | 'list';

export interface ConfigField {
  /** dotted path, e.g. 'algorithm.adv_estimator' */
  path: string;
  /** the `lab train` flag (without --) */
  flag: string;
  kind: FieldKind;
  /** null is a legal value */
  nullable?: boolean;
  min?: number;
  /** min is exclusive */
  minExclusive?: boolean;
  max?: number;
  /** enum choices (and list item choices), from the registries */
  choices?: () => readonly string[];
  /** a number or a string (the rollout-correction thresholds: a bound or "lo_hi") */
  numberOrString?: boolean;
  /** length of a fixed-size numeric list (betas) */
  tuple?: number;
  /** an upstream (verl / Agent Lightning) key; false for lab.* */
  upstream: boolean;
  help: string;
  /** the config table's field */
  def: ConfigFieldDef;
}

/** Choices whose registries live above core. */
const EXTERNAL_CHOICES: Record<ExternalChoices, () => readonly string[]> = {
  harness: () => HARNESSES.names(),
  behaviour: () => BEHAVIOURS,
  'model-preset': () => Object.keys(MODEL_PRESETS),
  'rollout-engine': () => ROLLOUT_ENGINES.names(),
  'rollout-device': () => ROLLOUT_DEVICES,
  'weight-precision': () => WEIGHT_PRECISIONS,
};

function runField(d: ConfigFieldDef): ConfigField {
  const { choices, choicesFrom } = d;
  return {
    path: d.key,
    flag: d.flag,
    kind: d.kind === 'threshold' ? 'string' : d.kind,
    nullable: d.nullable,
    min: d.min,
    minExclusive: d.minExclusive,
    max: d.max,
    // a run trains on its own rollouts as on recorded ones: what a trace cannot feed, a run cannot either
    choices: choicesFrom
      ? EXTERNAL_CHOICES[choicesFrom]
      : choices
        ? () =>
            choices()
              .filter((c) => !c.unavailable)
              .map((c) => c.value)
        : undefined,
    numberOrString: d.kind === 'threshold' ? true : undefined,
    tuple: d.tuple,
    upstream: isUpstreamKey(d.key),
    help: d.help,
    def: d,
  };
}

/** Every leaf of TrainConfig (the table's `run` scope), in the order help text lists them. */
export const CONFIG_FIELDS: readonly ConfigField[] = fieldsOfScope('run').map(runField);

export class TrainConfigError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path} ${message}`);
  }
}

const byPath = new Map(CONFIG_FIELDS.map((f) => [f.path, f]));
const byFlag = new Map(CONFIG_FIELDS.map((f) => [f.flag, f]));

export function fieldByPath(path: string): ConfigField | undefined {
  return byPath.get(path);
}
export function fieldByFlag(flag: string): ConfigField | undefined {
  return byFlag.get(flag);
}

export function getPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const k of path.split('.')) {
    if (!isRecord(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let cur = obj;
  for (const k of keys.slice(0, -1)) {
    if (!isRecord(cur[k])) cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]] = value;
}

function describeValue(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : JSON.stringify(v);
}

/** Checks one value against its field; returns it (numbers as given) or throws TrainConfigError. */
function checkValue(f: ConfigField, v: unknown): unknown {
  if (v === null) {
    if (f.nullable) return null;
    throw new TrainConfigError(f.path, 'must not be null');
  }
  const range = (x: number) => {
    if (f.min !== undefined && (f.minExclusive ? !(x > f.min) : !(x >= f.min)))
      throw new TrainConfigError(
        f.path,
        `must be ${f.minExclusive ? '>' : '≥'} ${f.min}${f.max !== undefined ? ` and ≤ ${f.max}` : ''}, got ${x}`,
      );
    if (f.max !== undefined && !(x <= f.max))
      throw new TrainConfigError(f.path, `must be ≤ ${f.max}, got ${x}`);
  };
  switch (f.kind) {
    case 'int':
      if (typeof v !== 'number' || !Number.isInteger(v))
        throw new TrainConfigError(
          f.path,
          `must be an integer${f.min !== undefined ? ` ≥ ${f.min}` : ''}, got ${describeValue(v)}`,
        );
      range(v);
      return v;
    case 'float':
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw new TrainConfigError(f.path, `must be a finite number, got ${describeValue(v)}`);
      range(v);
      return v;
    case 'bool':
      if (typeof v !== 'boolean')
        throw new TrainConfigError(f.path, `must be true or false, got ${describeValue(v)}`);
      return v;
    case 'enum': {
      const choices = f.choices?.() ?? [];
      if (typeof v !== 'string' || !choices.includes(v))
        throw new TrainConfigError(
          f.path,
          `must be one of ${choices.join(', ')}${f.nullable ? ' or null' : ''}, got ${describeValue(v)}`,
        );
      return v;
    }
    case 'string':
      if (f.numberOrString && typeof v === 'number' && Number.isFinite(v)) return v;
      if (typeof v !== 'string' || v === '')
        throw new TrainConfigError(f.path, `must be a non-empty string, got ${describeValue(v)}`);
      return v;
    case 'list': {
      if (!Array.isArray(v)) throw new TrainConfigError(f.path, `must be a list, got ${describeValue(v)}`);
      if (f.tuple !== undefined) {
        if (v.length !== f.tuple || !v.every((x) => typeof x === 'number' && x >= 0 && x < 1))
          throw new TrainConfigError(f.path, `must be ${f.tuple} numbers in [0, 1), got ${describeValue(v)}`);
        return [...v];
      }
      const choices = f.choices?.() ?? [];
      for (const x of v)
        if (typeof x !== 'string' || !choices.includes(x))
          throw new TrainConfigError(
            f.path,
            `items must be among ${choices.join(', ')}, got ${describeValue(x)}`,
          );
      return [...new Set(v as string[])];
    }
  }
}

/** Parses a string (CLI flag, dotlist override, URL field) into a value of the field's kind. */
export function parseFieldValue(f: ConfigField, raw: string): unknown {
  const s = raw.trim();
  if (f.nullable && (s === NULL_SPELLING || s === 'None' || s === '~')) return null;
  if (f.numberOrString && s !== '' && Number.isFinite(Number(s))) return Number(s);
  switch (f.kind) {
    case 'int':
    case 'float': {
      const n = s === '' ? Number.NaN : Number(s);
      return Number.isNaN(n) ? s : n;
    }
    case 'bool':
      if (/^(true|1|yes)$/i.test(s)) return true;
      if (/^(false|0|no)$/i.test(s)) return false;
      return s;
    case 'list': {
      const inner = s.startsWith('[') && s.endsWith(']') ? s.slice(1, -1) : s;
      const items = inner === '' ? [] : inner.split(',').map((x) => x.trim().replace(/^['"]|['"]$/g, ''));
      return f.tuple !== undefined ? items.map((x) => (x === '' ? Number.NaN : Number(x))) : items;
    }
    default:
      return s;
  }
}

/** Sets one field from a string, with the field's parsing and checks. */
export function setConfigValue(config: TrainConfig, path: string, raw: string): void {
  const f = byPath.get(path);
  if (!f)
    throw new TrainConfigError(
      path,
      `is not a known key (known: ${CONFIG_FIELDS.map((x) => x.path).join(', ')})`,
    );
  setPath(config as unknown as Record<string, unknown>, path, checkValue(f, parseFieldValue(f, raw)));
}

/** Applies Hydra-style `key=value` overrides. */
export function applyDotlist(config: TrainConfig, overrides: string[]): void {
  for (const o of overrides) {
    const eq = o.indexOf('=');
    if (eq <= 0) throw new TrainConfigError(o, "is not a 'key=value' override");
    setConfigValue(config, o.slice(0, eq).trim().replace(/^\+/, ''), o.slice(eq + 1));
  }
}

/** Leaf paths present in a patch (so a patch with a typo'd key is an error, not silently ignored). */
function leafPaths(obj: unknown, prefix = ''): string[] {
  if (!isRecord(obj)) return [prefix];
  const out: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    const p = prefix ? `${prefix}.${k}` : k;
    if (byPath.has(p)) out.push(p);
    else if (isRecord(v)) out.push(...leafPaths(v, p));
    else out.push(p);
  }
  return out;
}

/** Defaults, then the patch (checked field by field), then cross-field checks. */
export function resolveTrainConfig(patch: TrainConfigPatch | unknown = {}): TrainConfig {
  if (!isRecord(patch)) throw new TrainConfigError('config', 'must be an object');
  const c = defaultTrainConfig();
  for (const p of leafPaths(patch)) {
    const f = byPath.get(p);
    if (!f) throw new TrainConfigError(p, 'is not a known key');
    setPath(c as unknown as Record<string, unknown>, p, checkValue(f, getPath(patch, p)));
  }
  checkConsistency(c);
  return c;
}

/** Rules between fields (upstream raises on the same combinations where it has them). */
export function checkConsistency(c: TrainConfig): void {
  const a = c.actor_rollout_ref.actor;
  if (a.ppo_mini_batch_size > c.data.train_batch_size)
    throw new TrainConfigError(
      'actor_rollout_ref.actor.ppo_mini_batch_size',
      `(${a.ppo_mini_batch_size}) must be ≤ data.train_batch_size (${c.data.train_batch_size})`,
    );
  const ar = c.agentlightning.async_rollout;
  if (ar.enabled && ar.async_train_batch_size <= c.data.train_batch_size)
    throw new TrainConfigError(
      'agentlightning.async_rollout.async_train_batch_size',
      `(${ar.async_train_batch_size}) must be > data.train_batch_size (${c.data.train_batch_size})`,
    );
  if (c.trainer.v1.sampler.max_off_policy_threshold !== null && !ar.enabled)
    throw new TrainConfigError(
      'trainer.v1.sampler.max_off_policy_threshold',
      'applies only with agentlightning.async_rollout.enabled',
    );
  const rc = c.algorithm.rollout_correction;
  if (rc.rollout_rs !== null && rc.rollout_rs_threshold === null)
    throw new TrainConfigError(
      'algorithm.rollout_correction.rollout_rs_threshold',
      'must be set when rollout_rs is enabled',
    );
  if (c.lab.pass_k > c.actor_rollout_ref.rollout.val_kwargs.n)
    throw new TrainConfigError(
      'lab.pass_k',
      `(${c.lab.pass_k}) must be ≤ actor_rollout_ref.rollout.val_kwargs.n (${c.actor_rollout_ref.rollout.val_kwargs.n})`,
    );
  const rollout = resolveRolloutChoice(c).problem;
  if (rollout) throw new TrainConfigError(rollout.path, rollout.message);
  const levels = getHarness(c.lab.harness).levels.map((l) => l.level);
  if (c.lab.task_level !== null && !levels.includes(c.lab.task_level))
    throw new TrainConfigError(
      'lab.task_level',
      `must be null or one of the levels of harness '${c.lab.harness}' (${levels.join(', ')}), got ${c.lab.task_level}`,
    );
  if (c.lab.train_tasks < c.data.train_batch_size)
    throw new TrainConfigError(
      'lab.train_tasks',
      `(${c.lab.train_tasks}) must be ≥ data.train_batch_size (${c.data.train_batch_size})`,
    );
}

/** `key=value` for every field that differs from the defaults (upstream keys only, or all). */
export function configDiff(c: TrainConfig, opts: { upstreamOnly?: boolean } = {}): string[] {
  const d = defaultTrainConfig();
  const out: string[] = [];
  for (const f of CONFIG_FIELDS) {
    if (opts.upstreamOnly && !f.upstream) continue;
    const v = getPath(c, f.path);
    if (JSON.stringify(v) === JSON.stringify(getPath(d, f.path))) continue;
    out.push(`${f.path}=${Array.isArray(v) ? `[${v.join(',')}]` : v === null ? 'null' : String(v)}`);
  }
  return out;
}

/** A deep copy (configs are plain JSON). */
export function cloneConfig(c: TrainConfig): TrainConfig {
  return JSON.parse(JSON.stringify(c)) as TrainConfig;
}
