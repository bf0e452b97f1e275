/**
 * The training run's configuration: ONE typed object with defaults, whose keys are the upstream Hydra keys of
 * Agent Lightning 1.0 + verl 0.8.0 (`algorithm.adv_estimator`, `actor_rollout_ref.actor.loss_agg_mode`,
 * `agentlightning.trace_aggregator.level`, …) so a run maps onto a real verl launch one to one; what upstream
 * has no key for lives under `lab.*`. Every leaf is declared once in `CONFIG_FIELDS` (kind, range, choices
 * taken from core's registries, CLI flag, help): the CLI flags, dotlist overrides (`key=value`, as Hydra
 * takes them), the page's form and URL state, presets and REST bodies all go through `resolveTrainConfig`
 * and `setConfigValue`, so a bad value gets the same message everywhere ("actor_rollout_ref.rollout.n must
 * be an integer ≥ 1, got 0").
 */
import { LOSS_AGG_MODES } from '../core/algos/aggLoss';
import { KL_PENALTIES } from '../core/algos/kl';
import { listPolicyLosses } from '../core/algos/policyLoss';
import { WEIGHT_PRECISIONS, type WeightPrecision } from '../engine/onnx/causalLm';
import { BEHAVIOURS, type Behaviour } from '../harness/harness';
import { HARNESSES, type HarnessName } from '../harness/registry';
import { MODEL_PRESETS, type ModelPreset } from './models';
import { objectiveEstimators } from './objective';
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
      rollout_is_threshold: number | null;
      rollout_is_batch_normalize: boolean;
      rollout_rs: string | null;
      rollout_rs_threshold: string | null;
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
  };
}

/** A partial config: every level optional (presets, CLI flags, URL state, REST bodies). */
export type TrainConfigPatch = DeepPartial<TrainConfig>;
type DeepPartial<T> = T extends (infer U)[]
  ? U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

export function defaultTrainConfig(): TrainConfig {
  return {
    algorithm: {
      adv_estimator: 'grpo',
      norm_adv_by_std_in_grpo: true,
      gamma: 1.0,
      enable_rollout_level_advantage: true,
      rollout_correction: {
        rollout_is: null,
        rollout_is_threshold: 2.0,
        rollout_is_batch_normalize: false,
        rollout_rs: null,
        rollout_rs_threshold: null,
        bypass_mode: false,
      },
    },
    data: { train_batch_size: 8, max_prompt_length: 1024, max_response_length: 256, shuffle: true },
    actor_rollout_ref: {
      model: { path: 'sft' },
      actor: {
        ppo_mini_batch_size: 4,
        ppo_micro_batch_size_per_gpu: 8,
        ppo_epochs: 1,
        shuffle: false,
        loss_agg_mode: 'token-mean',
        loss_scale_factor: null,
        clip_ratio: 0.2,
        clip_ratio_low: 0.2,
        clip_ratio_high: 0.2,
        clip_ratio_c: 3.0,
        entropy_coeff: 0,
        use_kl_loss: false,
        kl_loss_coef: 0.001,
        kl_loss_type: 'low_var_kl',
        policy_loss: { loss_mode: 'per_rollout_mean' },
        optim: {
          lr: 1e-4,
          lr_warmup_steps: -1,
          lr_warmup_steps_ratio: 0.0,
          lr_scheduler_type: 'constant',
          min_lr_ratio: 0.0,
          weight_decay: 0.01,
          betas: [0.9, 0.999],
          clip_grad: 1.0,
        },
      },
      rollout: {
        n: 4,
        temperature: 1.0,
        top_p: 1.0,
        max_model_len: 1024,
        name: 'policy',
        val_kwargs: { n: 1, temperature: 0, top_p: 1.0, do_sample: false },
      },
    },
    agentlightning: {
      trace_aggregator: {
        level: 'trajectory',
        trajectory_max_prompt_length: 1024,
        trajectory_max_response_length: 1024,
      },
      async_rollout: { enabled: false, async_train_batch_size: 12 },
      reward_fillna_value: 0.0,
      max_ppo_update_times: null,
    },
    trainer: {
      total_training_steps: 20,
      test_freq: 5,
      save_freq: 0,
      val_before_train: true,
      balance_batch: true,
      v1: { sampler: { max_off_policy_threshold: null, max_off_policy_strategy: 'drop' } },
    },
    lab: {
      harness: 'instruction',
      behaviours: [],
      seed: 0,
      backend: 'cpu',
      model: 'tiny',
      workers: 2,
      train_tasks: 256,
      val_tasks: 16,
      max_turns: null,
      reward_dtype: 'bfloat16',
      token_source: 'engine',
      rollout_timeout_ms: 120_000,
      pass_k: 1,
      keep_traces: true,
      rollout_device: 'auto',
      rollout_precision: 'f32',
    },
  };
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
  /** a number or a string (rollout_rs_threshold takes both upstream) */
  numberOrString?: boolean;
  /** length of a fixed-size numeric list (betas) */
  tuple?: number;
  /** an upstream (verl / Agent Lightning) key; false for lab.* */
  upstream: boolean;
  help: string;
}

const F = (f: Omit<ConfigField, 'upstream'> & { upstream?: boolean }): ConfigField => ({
  upstream: !f.path.startsWith('lab.'),
  ...f,
});

/** Every leaf of TrainConfig, in the order help text lists them. */
export const CONFIG_FIELDS: readonly ConfigField[] = [
  F({
    path: 'lab.harness',
    flag: 'harness',
    kind: 'enum',
    choices: () => Object.keys(HARNESSES),
    help: 'the harness whose tasks are trained on',
  }),
  F({
    path: 'lab.behaviours',
    flag: 'behaviour',
    kind: 'list',
    choices: () => BEHAVIOURS,
    help: 'history behaviours of the harness (comma list)',
  }),
  F({ path: 'lab.seed', flag: 'seed', kind: 'int', help: 'run seed (tasks, shuffles, sampling)' }),
  F({
    path: 'lab.backend',
    flag: 'backend',
    kind: 'enum',
    choices: () => ['cpu', 'webgpu', 'auto'],
    help: 'policy engine backend',
  }),
  F({
    path: 'lab.model',
    flag: 'model-preset',
    kind: 'enum',
    choices: () => Object.keys(MODEL_PRESETS),
    help: "model shape for actor_rollout_ref.model.path 'init'",
  }),
  F({ path: 'lab.workers', flag: 'workers', kind: 'int', min: 1, max: 64, help: 'harness workers' }),
  F({ path: 'lab.train_tasks', flag: 'train-tasks', kind: 'int', min: 1, help: 'training task set size' }),
  F({ path: 'lab.val_tasks', flag: 'val-tasks', kind: 'int', min: 1, help: 'validation task set size' }),
  F({
    path: 'lab.max_turns',
    flag: 'max-turns',
    kind: 'int',
    min: 1,
    nullable: true,
    help: "harness turn limit (null: the harness's own)",
  }),
  F({
    path: 'lab.reward_dtype',
    flag: 'reward-dtype',
    kind: 'enum',
    choices: () => ['bfloat16', 'float32'],
    help: "rewards/advantages dtype (Agent Lightning's adapter: bfloat16)",
  }),
  F({
    path: 'lab.token_source',
    flag: 'token-source',
    kind: 'enum',
    choices: () => ['engine', 'retokenize'],
    help: 'training ids: recorded engine ids or the re-encoded chat template',
  }),
  F({
    path: 'trainer.v1.sampler.max_off_policy_threshold',
    flag: 'max-off-policy-threshold',
    kind: 'int',
    min: 0,
    nullable: true,
    help: 'async: most policy versions a group may span from its first call to training (null: keep all)',
  }),
  F({
    path: 'trainer.v1.sampler.max_off_policy_strategy',
    flag: 'max-off-policy-strategy',
    kind: 'enum',
    choices: () => ['drop', 'wait'],
    help: 'async, past the threshold: drop the group, or wait for in-flight groups reaching it and train them first',
  }),
  F({
    path: 'lab.rollout_timeout_ms',
    flag: 'rollout-timeout-ms',
    kind: 'int',
    min: 1,
    max: 2 ** 31 - 1,
    help: 'per-rollout time limit of a harness worker',
  }),
  F({ path: 'lab.pass_k', flag: 'pass-k', kind: 'int', min: 1, help: 'k of the validation pass@k' }),
  F({
    path: 'lab.keep_traces',
    flag: 'keep-traces',
    kind: 'bool',
    help: "keep each step's batch as a trace",
  }),
  F({
    path: 'algorithm.adv_estimator',
    flag: 'adv-estimator',
    kind: 'enum',
    choices: objectiveEstimators,
    help: 'advantage estimator',
  }),
  F({
    path: 'algorithm.norm_adv_by_std_in_grpo',
    flag: 'norm-adv-by-std-in-grpo',
    kind: 'bool',
    help: 'GRPO: divide by the group std (false: Dr. GRPO)',
  }),
  F({
    path: 'algorithm.gamma',
    flag: 'gamma',
    kind: 'float',
    min: 0,
    max: 1,
    help: 'discount (REINFORCE++)',
  }),
  F({
    path: 'algorithm.enable_rollout_level_advantage',
    flag: 'enable-rollout-level-advantage',
    kind: 'bool',
    help: 'estimator on one row per rollout, broadcast to its rows',
  }),
  F({
    path: 'algorithm.rollout_correction.rollout_is',
    flag: 'rollout-is',
    kind: 'enum',
    nullable: true,
    choices: () => ['token', 'sequence'],
    help: 'truncated importance sampling level',
  }),
  F({
    path: 'algorithm.rollout_correction.rollout_is_threshold',
    flag: 'rollout-is-threshold',
    kind: 'float',
    min: 0,
    minExclusive: true,
    nullable: true,
    help: 'IS truncation threshold',
  }),
  F({
    path: 'algorithm.rollout_correction.rollout_is_batch_normalize',
    flag: 'rollout-is-batch-normalize',
    kind: 'bool',
    help: 'divide IS weights by their batch mean',
  }),
  F({
    path: 'algorithm.rollout_correction.rollout_rs',
    flag: 'rollout-rs',
    kind: 'string',
    nullable: true,
    help: 'rejection sampling option(s), comma list (token_k1, seq_mean_k3, …)',
  }),
  F({
    path: 'algorithm.rollout_correction.rollout_rs_threshold',
    flag: 'rollout-rs-threshold',
    kind: 'string',
    numberOrString: true,
    nullable: true,
    help: 'rejection threshold(s) ("lo_hi" for k1)',
  }),
  F({
    path: 'algorithm.rollout_correction.bypass_mode',
    flag: 'bypass-mode',
    kind: 'bool',
    help: 'use the rollout log-probs as old_log_prob (no recomputation)',
  }),
  F({ path: 'data.train_batch_size', flag: 'train-batch-size', kind: 'int', min: 1, help: 'tasks per step' }),
  F({
    path: 'data.max_prompt_length',
    flag: 'max-prompt-length',
    kind: 'int',
    min: 1,
    help: 'transition level',
  }),
  F({
    path: 'data.max_response_length',
    flag: 'max-response-length',
    kind: 'int',
    min: 1,
    help: 'per-call response cap (and the transition-level row limit)',
  }),
  F({ path: 'data.shuffle', flag: 'shuffle', kind: 'bool', help: 'shuffle the task set each epoch' }),
  F({
    path: 'actor_rollout_ref.model.path',
    flag: 'model',
    kind: 'string',
    help: "initial weights: 'sft' (shipped SFT checkpoint), 'init', or a checkpoint file",
  }),
  F({
    path: 'actor_rollout_ref.actor.ppo_mini_batch_size',
    flag: 'ppo-mini-batch-size',
    kind: 'int',
    min: 1,
    help: 'tasks per optimizer step (× rollout.n rows)',
  }),
  F({
    path: 'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu',
    flag: 'ppo-micro-batch-size-per-gpu',
    kind: 'int',
    min: 1,
    help: 'rows per engine batch (gradient accumulation)',
  }),
  F({
    path: 'actor_rollout_ref.actor.ppo_epochs',
    flag: 'ppo-epochs',
    kind: 'int',
    min: 1,
    help: 'PPO epochs',
  }),
  F({
    path: 'actor_rollout_ref.actor.shuffle',
    flag: 'actor-shuffle',
    kind: 'bool',
    help: 'shuffle mini-batches',
  }),
  F({
    path: 'actor_rollout_ref.actor.loss_agg_mode',
    flag: 'loss-agg-mode',
    kind: 'enum',
    choices: () => LOSS_AGG_MODES,
    help: 'loss aggregation',
  }),
  F({
    path: 'actor_rollout_ref.actor.loss_scale_factor',
    flag: 'loss-scale-factor',
    kind: 'float',
    min: 0,
    minExclusive: true,
    nullable: true,
    help: 'seq-mean-token-sum-norm divisor (null: padded width)',
  }),
  F({
    path: 'actor_rollout_ref.actor.clip_ratio',
    flag: 'clip-ratio',
    kind: 'float',
    min: 0,
    help: 'PPO clip',
  }),
  F({
    path: 'actor_rollout_ref.actor.clip_ratio_low',
    flag: 'clip-ratio-low',
    kind: 'float',
    min: 0,
    nullable: true,
    help: 'lower clip (null: clip_ratio)',
  }),
  F({
    path: 'actor_rollout_ref.actor.clip_ratio_high',
    flag: 'clip-ratio-high',
    kind: 'float',
    min: 0,
    nullable: true,
    help: 'upper clip (null: clip_ratio)',
  }),
  F({
    path: 'actor_rollout_ref.actor.clip_ratio_c',
    flag: 'clip-ratio-c',
    kind: 'float',
    min: 1,
    minExclusive: true,
    help: 'dual-clip bound',
  }),
  F({
    path: 'actor_rollout_ref.actor.entropy_coeff',
    flag: 'entropy-coeff',
    kind: 'float',
    min: 0,
    max: 0,
    help: 'entropy bonus (only 0: the engine backpropagates through chosen-token log-probs only)',
  }),
  F({
    path: 'actor_rollout_ref.actor.use_kl_loss',
    flag: 'use-kl-loss',
    kind: 'bool',
    help: 'KL loss to the initial policy',
  }),
  F({
    path: 'actor_rollout_ref.actor.kl_loss_coef',
    flag: 'kl-loss-coef',
    kind: 'float',
    min: 0,
    help: 'KL loss weight',
  }),
  F({
    path: 'actor_rollout_ref.actor.kl_loss_type',
    flag: 'kl-loss-type',
    kind: 'enum',
    choices: () => KL_PENALTIES,
    help: 'KL estimator',
  }),
  F({
    path: 'actor_rollout_ref.actor.policy_loss.loss_mode',
    flag: 'loss-mode',
    kind: 'enum',
    choices: () => listPolicyLosses().map((p) => p.name),
    help: "policy loss (Agent Lightning's default: per_rollout_mean)",
  }),
  F({ path: 'actor_rollout_ref.actor.optim.lr', flag: 'lr', kind: 'float', min: 0, help: 'learning rate' }),
  F({
    path: 'actor_rollout_ref.actor.optim.lr_warmup_steps',
    flag: 'lr-warmup-steps',
    kind: 'int',
    min: -1,
    help: 'warmup steps (-1: lr_warmup_steps_ratio × total steps)',
  }),
  F({
    path: 'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio',
    flag: 'lr-warmup-steps-ratio',
    kind: 'float',
    min: 0,
    max: 1,
    help: 'warmup fraction',
  }),
  F({
    path: 'actor_rollout_ref.actor.optim.lr_scheduler_type',
    flag: 'lr-scheduler-type',
    kind: 'enum',
    choices: () => ['constant', 'cosine'],
    help: 'after warmup: constant or cosine decay',
  }),
  F({
    path: 'actor_rollout_ref.actor.optim.min_lr_ratio',
    flag: 'min-lr-ratio',
    kind: 'float',
    min: 0,
    max: 1,
    help: 'cosine floor',
  }),
  F({
    path: 'actor_rollout_ref.actor.optim.weight_decay',
    flag: 'weight-decay',
    kind: 'float',
    min: 0,
    help: 'AdamW weight decay',
  }),
  F({
    path: 'actor_rollout_ref.actor.optim.betas',
    flag: 'betas',
    kind: 'list',
    tuple: 2,
    help: 'AdamW betas "b1,b2"',
  }),
  F({
    path: 'actor_rollout_ref.actor.optim.clip_grad',
    flag: 'clip-grad',
    kind: 'float',
    min: 0,
    help: 'global gradient-norm clip (0: none)',
  }),
  F({
    path: 'actor_rollout_ref.rollout.n',
    flag: 'rollout-n',
    kind: 'int',
    min: 1,
    help: 'rollouts per task',
  }),
  F({
    path: 'actor_rollout_ref.rollout.temperature',
    flag: 'temperature',
    kind: 'float',
    min: 0,
    minExclusive: true,
    help: 'sampling temperature (the trainer recomputes log-probs at it)',
  }),
  F({
    path: 'actor_rollout_ref.rollout.top_p',
    flag: 'top-p',
    kind: 'float',
    min: 0,
    minExclusive: true,
    max: 1,
    help: 'nucleus sampling',
  }),
  F({
    path: 'actor_rollout_ref.rollout.max_model_len',
    flag: 'max-model-len',
    kind: 'int',
    min: 2,
    help: "the engine's context window",
  }),
  F({
    path: 'actor_rollout_ref.rollout.name',
    flag: 'rollout-name',
    kind: 'enum',
    choices: () => Object.keys(ROLLOUT_ENGINES),
    help: "rollout engine (policy: the trainer's own, colocated; the others sample apart and get weights each step)",
  }),
  F({
    path: 'lab.rollout_device',
    flag: 'rollout-device',
    kind: 'enum',
    choices: () => ROLLOUT_DEVICES,
    help: 'rollout engine device (auto: its first here; ORT wasm/webgpu, transformers.js cpu in Node, wasm/webgpu in the page)',
  }),
  F({
    path: 'lab.rollout_precision',
    flag: 'rollout-precision',
    kind: 'enum',
    choices: () => WEIGHT_PRECISIONS,
    help: 'rollout engine weights: f32, f16 or int8 (weight-only; a controlled engine/trainer mismatch)',
  }),
  F({
    path: 'actor_rollout_ref.rollout.val_kwargs.n',
    flag: 'val-n',
    kind: 'int',
    min: 1,
    help: 'samples per val task',
  }),
  F({
    path: 'actor_rollout_ref.rollout.val_kwargs.temperature',
    flag: 'val-temperature',
    kind: 'float',
    min: 0,
    help: 'validation temperature (0: greedy)',
  }),
  F({
    path: 'actor_rollout_ref.rollout.val_kwargs.top_p',
    flag: 'val-top-p',
    kind: 'float',
    min: 0,
    minExclusive: true,
    max: 1,
    help: 'validation nucleus',
  }),
  F({
    path: 'actor_rollout_ref.rollout.val_kwargs.do_sample',
    flag: 'val-do-sample',
    kind: 'bool',
    help: 'sample at validation (false: greedy)',
  }),
  F({
    path: 'agentlightning.trace_aggregator.level',
    flag: 'trace-aggregator-level',
    kind: 'enum',
    choices: () => ['transition', 'trajectory'],
    help: 'sample merging level',
  }),
  F({
    path: 'agentlightning.trace_aggregator.trajectory_max_prompt_length',
    flag: 'trajectory-max-prompt-length',
    kind: 'int',
    min: 1,
    help: 'trajectory level: first-prompt limit (longer rows are dropped)',
  }),
  F({
    path: 'agentlightning.trace_aggregator.trajectory_max_response_length',
    flag: 'trajectory-max-response-length',
    kind: 'int',
    min: 1,
    help: 'trajectory level: response part limit (truncated)',
  }),
  F({
    path: 'agentlightning.async_rollout.enabled',
    flag: 'async',
    kind: 'bool',
    help: 'asynchronous rollouts',
  }),
  F({
    path: 'agentlightning.async_rollout.async_train_batch_size',
    flag: 'async-train-batch-size',
    kind: 'int',
    min: 1,
    help: 'async: groups in flight (> train_batch_size)',
  }),
  F({
    path: 'agentlightning.reward_fillna_value',
    flag: 'reward-fillna-value',
    kind: 'float',
    help: 'reward of rollouts that reported none',
  }),
  F({
    path: 'agentlightning.max_ppo_update_times',
    flag: 'max-ppo-update-times',
    kind: 'int',
    min: 1,
    nullable: true,
    help: 'cap on mini-batches per step',
  }),
  F({
    path: 'trainer.total_training_steps',
    flag: 'total-training-steps',
    kind: 'int',
    min: 0,
    help: 'RL steps',
  }),
  F({
    path: 'trainer.test_freq',
    flag: 'test-freq',
    kind: 'int',
    min: 0,
    help: 'validate every k steps (0: never)',
  }),
  F({
    path: 'trainer.save_freq',
    flag: 'save-freq',
    kind: 'int',
    min: 0,
    help: 'checkpoint every k steps (0: never)',
  }),
  F({ path: 'trainer.val_before_train', flag: 'val-before-train', kind: 'bool', help: 'validate at step 0' }),
  F({
    path: 'trainer.balance_batch',
    flag: 'balance-batch',
    kind: 'bool',
    help: 'reorder rows by sequence length (decides mini-batches and rollout-level representatives)',
  }),
];

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

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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
      if (f.numberOrString && typeof v === 'number' && Number.isFinite(v)) return String(v);
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
  if (f.nullable && (s === 'null' || s === 'None' || s === '~')) return null;
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
