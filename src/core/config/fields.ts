/**
 * The config vocabulary: ONE table of every setting the lab knows, keyed by the upstream Hydra path of Agent
 * Lightning 1.0 + verl 0.8.0 (`algorithm.adv_estimator`, `actor_rollout_ref.actor.loss_agg_mode`,
 * `agentlightning.trace_aggregator.level`, `data.max_prompt_length`, …); what upstream has no key for lives
 * under `lab.*`. Each field has its kind, its one default, bounds, choices (from core's registries, or named
 * for the layer that owns them), its one flag name, help, and the scopes that read it:
 *
 * - `analysis`: the trainer pipeline on a recorded trace (`TrainerOptions`, core/pipeline/options.ts; the page's
 *   Trace and Advantages views and `lab analyze`);
 * - `run`: a training run (`TrainConfig`, train/config.ts; `lab train`, the Train form);
 * - `template`: what a remote job template may set (server/protocol/templates.ts).
 *
 * Every declaration of a setting elsewhere is derived from this table; tests/unit/configFields.test.ts checks
 * that no other one exists. Defaults are upstream's (Agent Lightning's `verl/config.yaml` over verl 0.8.0's
 * `ppo_trainer.yaml`) except where marked with the reason.
 */

import { listAdvEstimators, traceUnavailable } from '../algos/advantage';
import { allAggModes, LOSS_AGG_MODES, listAggModes } from '../algos/aggLoss';
import { KL_PENALTIES } from '../algos/kl';
import { listPolicyLosses } from '../algos/policyLoss';
import { DEFAULT_REFERENCE_STACK, listReferenceStacks, type ReferenceStackName } from '../algos/stacks';

export type FieldKind = 'int' | 'float' | 'bool' | 'enum' | 'string' | 'list' | 'threshold';
export type FieldScope = 'analysis' | 'run' | 'template';
export type FieldValue = string | number | boolean | null | readonly string[] | readonly number[];

export interface FieldChoice {
  value: string;
  label: string;
  title?: string;
  /** why it cannot be chosen for a recorded trace (the page disables it, the CLIs refuse it) */
  unavailable?: string | null;
}

/** Choices whose registry lives above core; the layer that owns it supplies them (train/config.ts). */
export type ExternalChoices =
  | 'harness'
  | 'behaviour'
  | 'model-preset'
  | 'rollout-engine'
  | 'rollout-device'
  | 'weight-precision';

export interface ConfigFieldDef {
  /** the upstream Hydra path, or `lab.<name>` */
  key: string;
  /** the flag (without --): the same flag means this key in every command */
  flag: string;
  kind: FieldKind;
  default: FieldValue;
  /** null is a legal value (spelled `null` in flags, overrides and URLs) */
  nullable?: boolean;
  min?: number;
  /** min is exclusive */
  minExclusive?: boolean;
  max?: number;
  /** length of a fixed-size numeric list (betas) */
  tuple?: number;
  /** enum choices (and list item choices), from core's registries */
  choices?: () => readonly FieldChoice[];
  /** enum / list choices from a registry above core */
  choicesFrom?: ExternalChoices;
  /**
   * analysis scope: the choices on a reference stack (`lab.reference_stack`); `choices` stays the default
   * stack's (what the run and template scopes accept)
   */
  stackChoices?: (stack: ReferenceStackName) => readonly FieldChoice[];
  label: string;
  help: string;
  scopes: readonly FieldScope[];
  /** analysis scope: the `TrainerOptions` field that holds it */
  option?: string;
  /** analysis scope: offered by the page (the rest need inputs the page does not have: CLI only) */
  page?: boolean;
  /** analysis scope: short key in the page's URL */
  urlKey?: string;
  /** analysis scope: shown only when the estimator declares it */
  estimatorField?: 'normAdvByStd' | 'gamma';
}

const plain = (values: readonly string[]) => () => values.map((value) => ({ value, label: value }));
const described = (r: Record<string, string>) => () =>
  Object.entries(r).map(([value, title]) => ({ value, label: value, title }));

const estimatorChoices = () =>
  listAdvEstimators().map((e) => ({
    value: e.name,
    label: `${e.name} — ${e.label}`,
    title: e.formula,
    unavailable: traceUnavailable(e),
  }));

/*
 * Token sources, merge levels and dtypes are core union types; the type checks in core/pipeline/options.ts
 * make the compiler demand an entry here for every member core adds.
 */
export const LEVEL_CHOICES = {
  trajectory: 'a call whose prompt extends the context joins the row (observations get mask 0)',
  transition: 'one training row per call',
} as const;
export const TOKEN_SOURCE_CHOICES = {
  engine: 'the ids the engine returned: what the policy sampled (what Agent Lightning trains on)',
  retokenize: 'chat template over the messages, encoded again (a text-only trainer)',
} as const;
export const DTYPE_CHOICES = {
  bfloat16: 'as Agent Lightning: the adapter builds token_level_scores in bfloat16',
  float32: 'float32 rewards and advantages (to see what bfloat16 costs)',
} as const;

const A: FieldScope[] = ['analysis'];
const R: FieldScope[] = ['run'];
const T: FieldScope[] = ['template'];
const AR: FieldScope[] = ['analysis', 'run'];
const RT: FieldScope[] = ['run', 'template'];
const ART: FieldScope[] = ['analysis', 'run', 'template'];

/** Every setting, in the order help texts list them. */
export const CONFIG_TABLE: readonly ConfigFieldDef[] = [
  // lab.* (no upstream key)
  {
    key: 'lab.harness',
    flag: 'harness',
    kind: 'enum',
    // the one default run of `lab train` and the page: the harness whose shipped SFT start RL measurably
    // improves on a CPU in minutes (tests/unit/train/learning.test.ts); the multi-turn ones start at reward 0
    default: 'instruction-short',
    choicesFrom: 'harness',
    label: 'Harness',
    help: 'the harness whose tasks are trained on',
    scopes: RT,
  },
  {
    key: 'lab.behaviours',
    flag: 'behaviour',
    kind: 'list',
    default: [],
    choicesFrom: 'behaviour',
    label: 'History behaviours',
    help: 'how the harness rewrites its history between calls (comma list; none: keep it)',
    scopes: RT,
  },
  {
    key: 'lab.seed',
    flag: 'seed',
    kind: 'int',
    default: 0,
    min: 0,
    max: 2 ** 31 - 1,
    label: 'Seed',
    help: 'run seed (tasks, shuffles, sampling)',
    scopes: R,
  },
  {
    key: 'lab.backend',
    flag: 'backend',
    kind: 'enum',
    default: 'cpu',
    choices: plain(['cpu', 'webgpu', 'auto']),
    label: 'Backend',
    help: 'policy engine backend',
    scopes: R,
  },
  {
    key: 'lab.model',
    flag: 'model-preset',
    kind: 'enum',
    default: 'tiny',
    choicesFrom: 'model-preset',
    label: 'Model preset',
    help: "model shape for actor_rollout_ref.model.path 'init'",
    scopes: R,
  },
  {
    key: 'lab.workers',
    flag: 'workers',
    kind: 'int',
    default: 2,
    min: 1,
    max: 64,
    label: 'Workers',
    help: 'harness workers',
    scopes: R,
  },
  {
    key: 'lab.train_tasks',
    flag: 'train-tasks',
    kind: 'int',
    default: 256,
    min: 1,
    label: 'Train tasks',
    help: 'training task set size',
    scopes: R,
  },
  {
    key: 'lab.val_tasks',
    flag: 'val-tasks',
    kind: 'int',
    default: 16,
    min: 1,
    label: 'Validation tasks',
    help: 'validation task set size',
    scopes: R,
  },
  {
    key: 'lab.max_turns',
    flag: 'max-turns',
    kind: 'int',
    default: null,
    nullable: true,
    min: 1,
    label: 'Max turns',
    help: "harness turn limit (null: the harness's own)",
    scopes: R,
  },
  {
    key: 'lab.task_level',
    flag: 'task-level',
    kind: 'int',
    default: null,
    nullable: true,
    min: 1,
    label: 'Task level',
    help: "difficulty level of the train and val tasks (search: hops, coding: program size and tests, instruction: constraints; null: the harness's mix)",
    scopes: R,
  },
  {
    key: 'lab.reward_dtype',
    flag: 'reward-dtype',
    kind: 'enum',
    default: 'bfloat16',
    choices: described(DTYPE_CHOICES),
    label: 'Reward dtype',
    help: "the dtype rewards and advantages are computed in (Agent Lightning's adapter: bfloat16)",
    scopes: AR,
    option: 'rewardDtype',
    page: true,
    urlKey: 'dtype',
  },
  {
    key: 'lab.token_source',
    flag: 'token-source',
    kind: 'enum',
    default: 'engine',
    choices: described(TOKEN_SOURCE_CHOICES),
    label: 'Token source',
    help: 'which ids the rows are built from: the recorded engine ids or the re-encoded chat template',
    scopes: AR,
    option: 'tokenSource',
    page: true,
    urlKey: 'tokens',
  },
  {
    key: 'trainer.v1.sampler.max_off_policy_threshold',
    flag: 'max-off-policy-threshold',
    kind: 'int',
    default: null,
    nullable: true,
    min: 0,
    label: 'Max off-policy threshold',
    help: 'async: most policy versions a group may span from its first call to training (null: keep all)',
    scopes: R,
  },
  {
    key: 'trainer.v1.sampler.max_off_policy_strategy',
    flag: 'max-off-policy-strategy',
    kind: 'enum',
    default: 'drop',
    choices: described({
      drop: 'drop a group past the threshold',
      wait: 'wait for in-flight groups reaching the threshold and train them first',
    }),
    label: 'Max off-policy strategy',
    help: 'async, past the threshold: drop the group, or wait for in-flight groups reaching it and train them first',
    scopes: R,
  },
  {
    key: 'lab.rollout_timeout_ms',
    flag: 'rollout-timeout-ms',
    kind: 'int',
    default: 120_000,
    min: 1,
    max: 2 ** 31 - 1,
    label: 'Rollout timeout (ms)',
    help: 'per-rollout time limit of a harness worker',
    scopes: R,
  },
  {
    key: 'lab.pass_k',
    flag: 'pass-k',
    kind: 'int',
    default: 1,
    min: 1,
    label: 'pass@k',
    help: 'k of the validation pass@k',
    scopes: R,
  },
  {
    key: 'lab.keep_traces',
    flag: 'keep-traces',
    kind: 'bool',
    default: true,
    label: 'Keep traces',
    help: "keep each step's batch as a trace",
    scopes: R,
  },
  {
    key: 'lab.trim_seed',
    flag: 'trim-seed',
    kind: 'int',
    default: 0,
    min: 0,
    max: 2 ** 31 - 1,
    label: 'Trimming seed',
    help: 'seed of the shuffle that picks the rows trimming drops (upstream: unseeded random.shuffle; a run uses its step)',
    scopes: A,
    option: 'trimSeed',
    page: false,
    urlKey: 'tseed',
  },
  {
    key: 'lab.mini_batch_rows',
    flag: 'mini-batch-rows',
    kind: 'int',
    // a recorded trace is one mini-batch unless asked: verl's 256 tasks × rollout.n would leave nothing of it
    default: null,
    nullable: true,
    min: 1,
    label: 'Mini-batch rows',
    help: 'rows per PPO mini-batch (a run: ppo_mini_batch_size × rollout.n); the batch is trimmed to a multiple (null: one mini-batch)',
    scopes: A,
    option: 'ppoMiniBatchSize',
    page: false,
    urlKey: 'mb',
  },
  // algorithm.*
  {
    key: 'algorithm.adv_estimator',
    flag: 'adv-estimator',
    kind: 'enum',
    // verl's default gae needs a critic's values, which no recorded trace holds
    default: 'grpo',
    choices: estimatorChoices,
    label: 'Advantage estimator',
    help: 'verl estimator, computed on the rows the trace aggregator builds',
    scopes: ART,
    option: 'advEstimator',
    page: true,
    urlKey: 'adv',
  },
  {
    key: 'algorithm.norm_adv_by_std_in_grpo',
    flag: 'norm-adv-by-std-in-grpo',
    kind: 'bool',
    default: true,
    label: 'Normalize by std',
    help: 'GRPO: divide by the group std (false: Dr. GRPO)',
    scopes: ART,
    option: 'normAdvByStdInGrpo',
    page: true,
    urlKey: 'std',
    estimatorField: 'normAdvByStd',
  },
  {
    key: 'algorithm.gamma',
    flag: 'gamma',
    kind: 'float',
    default: 1,
    min: 0,
    max: 1,
    label: 'Discount γ',
    help: 'discount of the running return (REINFORCE++)',
    scopes: AR,
    option: 'gamma',
    page: true,
    urlKey: 'gamma',
    estimatorField: 'gamma',
  },
  {
    key: 'algorithm.enable_rollout_level_advantage',
    flag: 'enable-rollout-level-advantage',
    kind: 'bool',
    default: true,
    label: 'Rollout-level advantage',
    help: 'the estimator sees one row per rollout, broadcast to its rows, so each rollout counts once in its group',
    scopes: ART,
    option: 'enableRolloutLevelAdvantage',
    page: true,
    urlKey: 'rla',
  },
  {
    key: 'algorithm.rollout_correction.rollout_is',
    flag: 'rollout-is',
    kind: 'enum',
    default: null,
    nullable: true,
    choices: plain(['token', 'sequence']),
    label: 'Rollout IS',
    help: 'truncated importance sampling between trainer and engine log-probs',
    scopes: AR,
    option: 'rolloutIs',
    page: false,
    urlKey: 'ris',
  },
  {
    key: 'algorithm.rollout_correction.rollout_is_threshold',
    flag: 'rollout-is-threshold',
    kind: 'threshold',
    default: 2,
    nullable: true,
    label: 'Rollout IS threshold',
    help: 'upper bound, or "lo_hi" (IcePop)',
    scopes: AR,
    option: 'rolloutIsThreshold',
    page: false,
    urlKey: 'rist',
  },
  {
    key: 'algorithm.rollout_correction.rollout_is_batch_normalize',
    flag: 'rollout-is-batch-normalize',
    kind: 'bool',
    default: false,
    label: 'Normalize IS weights',
    help: 'divide the IS weights by their batch mean',
    scopes: AR,
    option: 'rolloutIsBatchNormalize',
    page: false,
    urlKey: 'risbn',
  },
  {
    key: 'algorithm.rollout_correction.rollout_rs',
    flag: 'rollout-rs',
    kind: 'string',
    default: null,
    nullable: true,
    label: 'Rejection sampling',
    help: 'rejection sampling option(s), comma list (token_k1, seq_mean_k3, …)',
    scopes: AR,
    option: 'rolloutRs',
    page: false,
    urlKey: 'rrs',
  },
  {
    key: 'algorithm.rollout_correction.rollout_rs_threshold',
    flag: 'rollout-rs-threshold',
    kind: 'threshold',
    default: null,
    nullable: true,
    label: 'Rejection threshold',
    help: 'one per option; "lo_hi" for k1 options',
    scopes: AR,
    option: 'rolloutRsThreshold',
    page: false,
    urlKey: 'rrst',
  },
  {
    key: 'algorithm.rollout_correction.bypass_mode',
    flag: 'bypass-mode',
    kind: 'bool',
    default: false,
    label: 'Bypass mode',
    help: 'use the rollout log-probs as old_log_prob (no recomputation)',
    scopes: R,
  },
  // data.*
  {
    key: 'data.train_batch_size',
    flag: 'train-batch-size',
    kind: 'int',
    // verl: 1024 tasks; the lab's runs are small
    default: 8,
    min: 1,
    label: 'Tasks per step',
    help: 'tasks (GRPO groups) per step',
    scopes: RT,
  },
  {
    key: 'data.max_prompt_length',
    flag: 'max-prompt-length',
    kind: 'int',
    default: 512,
    min: 1,
    label: 'Max prompt length',
    help: 'transition level: a longer prompt is truncated and its row marked is_drop',
    scopes: AR,
    option: 'dataMaxPromptLength',
    page: true,
    urlKey: 'dmaxp',
  },
  {
    key: 'data.max_response_length',
    flag: 'max-response-length',
    kind: 'int',
    default: 512,
    min: 1,
    label: 'Max response length',
    help: 'per-call response cap; transition level: the row limit (and the width seq-mean-token-sum-norm divides by)',
    scopes: ART,
    option: 'dataMaxResponseLength',
    page: true,
    urlKey: 'dmaxr',
  },
  {
    key: 'data.shuffle',
    flag: 'shuffle',
    kind: 'bool',
    default: true,
    label: 'Shuffle tasks',
    help: 'shuffle the task set each epoch',
    scopes: R,
  },
  {
    key: 'data.seed',
    flag: 'data-seed',
    kind: 'int',
    default: 0,
    min: 0,
    max: 2 ** 31 - 1,
    label: 'Seed',
    help: 'task sampling and the run’s random draws',
    scopes: T,
  },
  // actor_rollout_ref.*
  {
    key: 'actor_rollout_ref.model.path',
    flag: 'model',
    kind: 'string',
    default: 'sft',
    label: 'Model',
    help: "initial weights: 'sft' (shipped SFT checkpoint), 'init', or a checkpoint file (a template: a Hugging Face id or a cluster path); lab train: a Hugging Face folder; the page: 'shipped:<name>' or 'opfs:<name>' (a brought folder)",
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.model.lora_rank',
    flag: 'lora-rank',
    kind: 'int',
    default: 0,
    min: 0,
    label: 'LoRA rank',
    help: 'LoRA rank r on a Hugging Face model folder (PEFT semantics); 0: full fine-tuning',
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.model.lora_alpha',
    flag: 'lora-alpha',
    kind: 'float',
    default: 16,
    min: 0,
    minExclusive: true,
    label: 'LoRA alpha',
    help: 'LoRA lora_alpha; the update is scaled by lora_alpha / lora_rank',
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.model.target_modules',
    flag: 'target-modules',
    kind: 'string',
    default: 'all-linear',
    label: 'LoRA target modules',
    help: "modules LoRA adapts: 'all-linear' or a comma list of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
    scopes: RT,
  },
  {
    key: 'lab.lora_base_dtype',
    flag: 'lora-base-dtype',
    kind: 'enum',
    default: 'f32',
    choices: plain(['f32', 'f16', 'bf16']),
    label: 'LoRA base dtype',
    help: 'the frozen base of a LoRA run in f16 or bf16 (rounded to nearest even; f32 accumulation): the WebGPU engine stores it packed, half the weight memory; the CPU engine computes on the same rounded values; f32: the exact path',
    scopes: R,
  },
  {
    key: 'lab.memory_limit_mib',
    flag: 'memory-limit-mib',
    kind: 'int',
    default: 0,
    min: 0,
    label: 'Step memory limit (MiB)',
    help: "what one training step of a Hugging Face folder may hold in all, in MiB, checked before the run starts; 0: the platform's figure (the machine's memory for the CLI's CPU engine, else a stated estimate: 4 GiB for a page's CPU engine or for WebGPU, which reports no memory size)",
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.ppo_mini_batch_size',
    flag: 'ppo-mini-batch-size',
    kind: 'int',
    default: 4,
    min: 1,
    label: 'PPO mini-batch',
    help: 'tasks per optimizer step (× rollout.n rows)',
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu',
    flag: 'ppo-micro-batch-size-per-gpu',
    kind: 'int',
    default: 8,
    min: 1,
    label: 'Micro-batch per GPU',
    help: 'rows per engine batch (gradient accumulation)',
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.actor.ppo_epochs',
    flag: 'ppo-epochs',
    kind: 'int',
    default: 1,
    min: 1,
    label: 'PPO epochs',
    help: 'PPO epochs',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.shuffle',
    flag: 'actor-shuffle',
    kind: 'bool',
    default: false,
    label: 'Shuffle mini-batches',
    help: 'shuffle mini-batches',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.loss_agg_mode',
    flag: 'loss-agg-mode',
    kind: 'enum',
    default: 'token-mean',
    choices: plain(LOSS_AGG_MODES),
    stackChoices: (stack) =>
      listAggModes(stack).map((m) => ({ value: m.name, label: m.name, title: m.label })),
    label: 'Loss aggregation',
    help: 'how token losses become the scalar the actor minimises (policy_loss.loss_mode vanilla or dro)',
    scopes: ART,
    option: 'lossAggMode',
    page: true,
    urlKey: 'agg',
  },
  {
    key: 'actor_rollout_ref.actor.policy_loss.loss_mode',
    flag: 'loss-mode',
    kind: 'enum',
    default: 'per_rollout_mean',
    choices: () => listPolicyLosses().map((p) => ({ value: p.name, label: `${p.name} — ${p.label}` })),
    stackChoices: (stack) =>
      listPolicyLosses(stack).map((p) => ({ value: p.name, label: `${p.name} — ${p.label}` })),
    label: 'Policy loss',
    help: 'per_rollout_mean divides advantages by the rollout’s trainable tokens × rows and ignores loss_agg_mode (Agent Lightning default)',
    scopes: ART,
    option: 'policyLossMode',
    page: true,
    urlKey: 'pl',
  },
  {
    key: 'actor_rollout_ref.actor.loss_scale_factor',
    flag: 'loss-scale-factor',
    kind: 'float',
    default: null,
    nullable: true,
    min: 0,
    minExclusive: true,
    label: 'Loss scale factor',
    help: 'seq-mean-token-sum-norm divides by it (null: max_response_length, the padded width)',
    scopes: AR,
    option: 'lossScaleFactor',
    page: false,
    urlKey: 'lsf',
  },
  {
    key: 'actor_rollout_ref.actor.clip_ratio',
    flag: 'clip-ratio',
    kind: 'float',
    default: 0.2,
    min: 0,
    max: 10,
    label: 'Clip ratio',
    help: 'PPO clip: the fallback of clip_ratio_low / clip_ratio_high',
    scopes: AR,
    option: 'clipRatio',
    page: false,
    urlKey: 'clip',
  },
  {
    key: 'actor_rollout_ref.actor.clip_ratio_low',
    flag: 'clip-ratio-low',
    kind: 'float',
    default: 0.2,
    nullable: true,
    min: 0,
    max: 1,
    label: 'Clip ratio low',
    help: 'PPO ε below 1 (null: clip_ratio); only changes tokens whose ratio leaves the clip range',
    scopes: ART,
    option: 'clipRatioLow',
    page: true,
    urlKey: 'clo',
  },
  {
    key: 'actor_rollout_ref.actor.clip_ratio_high',
    flag: 'clip-ratio-high',
    kind: 'float',
    default: 0.2,
    nullable: true,
    min: 0,
    max: 10,
    label: 'Clip ratio high',
    help: 'PPO ε above 1 (null: clip_ratio); only changes tokens whose ratio leaves the clip range',
    scopes: ART,
    option: 'clipRatioHigh',
    page: true,
    urlKey: 'chi',
  },
  {
    key: 'actor_rollout_ref.actor.clip_ratio_c',
    flag: 'clip-ratio-c',
    kind: 'float',
    default: 3,
    min: 1,
    minExclusive: true,
    max: 100,
    label: 'Dual-clip bound c',
    help: 'for A < 0 the loss is capped at −A·c (must exceed 1)',
    scopes: AR,
    option: 'clipRatioC',
    page: true,
    urlKey: 'cc',
  },
  {
    key: 'actor_rollout_ref.actor.entropy_coeff',
    flag: 'entropy-coeff',
    kind: 'float',
    default: 0,
    min: 0,
    max: 0,
    label: 'Entropy coefficient',
    help: 'entropy bonus (only 0: the engine backpropagates through chosen-token log-probs only)',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.use_kl_loss',
    flag: 'use-kl-loss',
    kind: 'bool',
    default: false,
    label: 'KL loss',
    help: 'KL loss to the initial policy',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.kl_loss_coef',
    flag: 'kl-loss-coef',
    kind: 'float',
    default: 0.001,
    min: 0,
    label: 'KL loss weight',
    help: 'KL loss weight',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.kl_loss_type',
    flag: 'kl-loss-type',
    kind: 'enum',
    default: 'low_var_kl',
    choices: plain(KL_PENALTIES),
    label: 'KL estimator',
    help: 'KL estimator',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.lr',
    flag: 'lr',
    kind: 'float',
    default: 1e-4,
    min: 0,
    label: 'Learning rate',
    help: 'AdamW learning rate',
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.actor.optim.lr_warmup_steps',
    flag: 'lr-warmup-steps',
    kind: 'int',
    default: -1,
    min: -1,
    label: 'Warmup steps',
    help: 'warmup steps (-1: lr_warmup_steps_ratio × total steps)',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio',
    flag: 'lr-warmup-steps-ratio',
    kind: 'float',
    default: 0,
    min: 0,
    max: 1,
    label: 'Warmup ratio',
    help: 'warmup fraction',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.lr_scheduler_type',
    flag: 'lr-scheduler-type',
    kind: 'enum',
    default: 'constant',
    choices: plain(['constant', 'cosine']),
    label: 'LR schedule',
    help: 'after warmup: constant or cosine decay',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.min_lr_ratio',
    flag: 'min-lr-ratio',
    kind: 'float',
    default: 0,
    min: 0,
    max: 1,
    label: 'Min LR ratio',
    help: 'cosine floor',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.weight_decay',
    flag: 'weight-decay',
    kind: 'float',
    default: 0.01,
    min: 0,
    label: 'Weight decay',
    help: 'AdamW weight decay',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.betas',
    flag: 'betas',
    kind: 'list',
    default: [0.9, 0.999],
    tuple: 2,
    label: 'AdamW betas',
    help: 'AdamW betas "b1,b2"',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.actor.optim.clip_grad',
    flag: 'clip-grad',
    kind: 'float',
    default: 1,
    min: 0,
    label: 'Gradient clip',
    help: 'global gradient-norm clip (0: none)',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.n',
    flag: 'rollout-n',
    kind: 'int',
    default: 4,
    min: 1,
    label: 'Rollouts per task',
    help: 'rollouts per task (the GRPO group size)',
    scopes: RT,
  },
  {
    key: 'actor_rollout_ref.rollout.temperature',
    flag: 'temperature',
    kind: 'float',
    default: 1,
    min: 0,
    minExclusive: true,
    label: 'Temperature',
    help: 'sampling temperature (the trainer recomputes log-probs at it)',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.top_p',
    flag: 'top-p',
    kind: 'float',
    default: 1,
    min: 0,
    minExclusive: true,
    max: 1,
    label: 'Top-p',
    help: 'nucleus sampling',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.max_model_len',
    flag: 'max-model-len',
    kind: 'int',
    default: 1024,
    min: 2,
    label: 'Context window',
    help: "the engine's context length: prompts at or over it are refused",
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.name',
    flag: 'rollout-name',
    kind: 'enum',
    default: 'policy',
    choicesFrom: 'rollout-engine',
    label: 'Rollout engine',
    help: "rollout engine (policy: the trainer's own, colocated; the others sample apart and get weights each step)",
    scopes: R,
  },
  {
    key: 'lab.rollout_device',
    flag: 'rollout-device',
    kind: 'enum',
    default: 'auto',
    choicesFrom: 'rollout-device',
    label: 'Rollout device',
    help: 'rollout engine device (auto: its first here; ORT wasm/webgpu, transformers.js cpu in Node, wasm/webgpu in the page)',
    scopes: R,
  },
  {
    key: 'lab.rollout_precision',
    flag: 'rollout-precision',
    kind: 'enum',
    default: 'f32',
    choicesFrom: 'weight-precision',
    label: 'Rollout precision',
    help: 'rollout engine weights: f32, f16 or int8 (weight-only; a controlled engine/trainer mismatch)',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.tensor_model_parallel_size',
    flag: 'tensor-model-parallel-size',
    kind: 'int',
    default: 2,
    min: 1,
    max: 16,
    label: 'vLLM tensor parallel',
    help: 'GPUs per vLLM replica',
    scopes: T,
  },
  {
    key: 'actor_rollout_ref.rollout.gpu_memory_utilization',
    flag: 'gpu-memory-utilization',
    kind: 'float',
    default: 0.5,
    min: 0.05,
    max: 0.95,
    label: 'vLLM GPU memory share',
    help: 'share of GPU memory vLLM may take',
    scopes: T,
  },
  {
    key: 'actor_rollout_ref.rollout.val_kwargs.n',
    flag: 'val-n',
    kind: 'int',
    default: 1,
    min: 1,
    label: 'Validation samples',
    help: 'samples per val task',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.val_kwargs.temperature',
    flag: 'val-temperature',
    kind: 'float',
    default: 0,
    min: 0,
    label: 'Validation temperature',
    help: 'validation temperature (0: greedy)',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.val_kwargs.top_p',
    flag: 'val-top-p',
    kind: 'float',
    default: 1,
    min: 0,
    minExclusive: true,
    max: 1,
    label: 'Validation top-p',
    help: 'validation nucleus',
    scopes: R,
  },
  {
    key: 'actor_rollout_ref.rollout.val_kwargs.do_sample',
    flag: 'val-do-sample',
    kind: 'bool',
    default: false,
    label: 'Validation sampling',
    help: 'sample at validation (false: greedy)',
    scopes: R,
  },
  // agentlightning.*
  {
    key: 'agentlightning.trace_aggregator.level',
    flag: 'trace-aggregator-level',
    kind: 'enum',
    default: 'trajectory',
    choices: described(LEVEL_CHOICES),
    label: 'Aggregation level',
    help: 'how recorded calls become training rows',
    scopes: ART,
    option: 'traceAggregatorLevel',
    page: true,
    urlKey: 'level',
  },
  {
    key: 'agentlightning.trace_aggregator.trajectory_max_prompt_length',
    flag: 'trajectory-max-prompt-length',
    kind: 'int',
    default: 2048,
    min: 1,
    max: 1 << 24,
    label: 'Trajectory max prompt length',
    help: 'trajectory level: a longer first prompt is truncated and its row marked is_drop (removed before advantages)',
    scopes: ART,
    option: 'trajectoryMaxPromptLength',
    page: true,
    urlKey: 'maxp',
  },
  {
    key: 'agentlightning.trace_aggregator.trajectory_max_response_length',
    flag: 'trajectory-max-response-length',
    kind: 'int',
    default: 8192,
    min: 1,
    max: 1 << 24,
    label: 'Trajectory max response length',
    help: 'trajectory level: the response part is truncated to it; also the padded width seq-mean-token-sum-norm divides by',
    scopes: ART,
    option: 'trajectoryMaxResponseLength',
    page: true,
    urlKey: 'maxr',
  },
  {
    key: 'agentlightning.async_rollout.enabled',
    flag: 'async',
    kind: 'bool',
    default: false,
    label: 'Async rollouts',
    help: 'asynchronous rollouts: keep more groups in flight than a batch',
    scopes: RT,
  },
  {
    key: 'agentlightning.async_rollout.async_train_batch_size',
    flag: 'async-train-batch-size',
    kind: 'int',
    // upstream: null (train_batch_size); the lab keeps more in flight than a batch
    default: 12,
    min: 1,
    label: 'Async groups in flight',
    help: 'async: groups in flight (> train_batch_size)',
    scopes: R,
  },
  {
    key: 'agentlightning.reward_fillna_value',
    flag: 'reward-fillna-value',
    kind: 'float',
    default: 0,
    min: -1e6,
    max: 1e6,
    label: 'Reward of rollouts without one',
    help: 'failed rollouts are still trained on, with this reward',
    scopes: AR,
    option: 'rewardFillnaValue',
    page: true,
    urlKey: 'fillna',
  },
  {
    key: 'agentlightning.max_ppo_update_times',
    flag: 'max-ppo-update-times',
    kind: 'int',
    default: null,
    nullable: true,
    min: 1,
    label: 'Max PPO updates',
    help: 'keep at most this many mini-batches per step',
    scopes: AR,
    option: 'maxPpoUpdateTimes',
    page: false,
    urlKey: 'mput',
  },
  // trainer.*
  {
    key: 'trainer.total_training_steps',
    flag: 'total-training-steps',
    kind: 'int',
    default: 20,
    min: 0,
    label: 'Steps',
    help: 'RL steps',
    scopes: RT,
  },
  {
    key: 'trainer.test_freq',
    flag: 'test-freq',
    kind: 'int',
    default: 5,
    min: 0,
    label: 'Validate every',
    help: 'validate every k steps and after the last (0: never)',
    scopes: R,
  },
  {
    key: 'trainer.save_freq',
    flag: 'save-freq',
    kind: 'int',
    default: 0,
    min: 0,
    label: 'Checkpoint every',
    help: 'checkpoint every k steps and after the last (0: never)',
    scopes: R,
  },
  {
    key: 'trainer.val_before_train',
    flag: 'val-before-train',
    kind: 'bool',
    default: true,
    label: 'Validate first',
    help: 'validate at step 0',
    scopes: R,
  },
  {
    key: 'trainer.balance_batch',
    flag: 'balance-batch',
    kind: 'bool',
    default: true,
    label: 'Balance batch',
    help: 'reorder rows by sequence length (decides mini-batches and rollout-level representatives)',
    scopes: AR,
    option: 'balanceBatch',
    page: false,
    urlKey: 'bal',
  },
  {
    key: 'trainer.nnodes',
    flag: 'nnodes',
    kind: 'int',
    default: 1,
    min: 1,
    max: 256,
    label: 'Nodes',
    help: 'GPU nodes',
    scopes: T,
  },
  {
    key: 'trainer.n_gpus_per_node',
    flag: 'n-gpus-per-node',
    kind: 'int',
    default: 8,
    min: 1,
    max: 16,
    label: 'GPUs per node',
    help: 'GPUs per node',
    scopes: T,
  },
  {
    key: 'lab.reference_stack',
    flag: 'reference-stack',
    kind: 'enum',
    default: DEFAULT_REFERENCE_STACK,
    choices: () =>
      listReferenceStacks().map((st) => ({
        value: st.name,
        label: st.label,
        title: st.changes.length
          ? st.changes.map((c) => `${c.summary} (${c.madeBy})`).join('; ')
          : 'the releases Agent Lightning 1.0 runs on',
      })),
    label: 'Reference stack',
    help: "whose semantics the numbers follow: Agent Lightning 1.0 on verl 0.8.0 (what it pins), or the same rows on verl 0.9.0's algorithms",
    scopes: A,
    option: 'referenceStack',
    page: true,
    urlKey: 'stack',
  },
  {
    key: 'actor_rollout_ref.actor.policy_loss.dro_beta',
    flag: 'dro-beta',
    kind: 'float',
    default: null,
    nullable: true,
    min: 0,
    minExclusive: true,
    label: 'DRO β',
    help: "DRO's quadratic log-ratio penalty ½β(logπ − logπ_old)² (verl 0.9.0; required by policy_loss.loss_mode dro; no effect while logπ = logπ_old, so a recorded trace's first mini-batch weights equal vanilla's)",
    scopes: A,
    option: 'droBeta',
    page: true,
    urlKey: 'dro',
  },
  {
    key: 'lab.vocab_mismatch',
    flag: 'vocab-mismatch',
    kind: 'bool',
    default: false,
    label: 'Full-vocabulary mismatch',
    help: "compare the rollout engine's and the trainer's whole next-token distributions at every response token of each step (KL, TV, most disagreeing tokens; one extra forward per call on each engine)",
    scopes: R,
  },
];

const byKey = new Map<string, ConfigFieldDef>();
const byFlag = new Map<string, ConfigFieldDef>();
for (const f of CONFIG_TABLE) {
  if (byKey.has(f.key)) throw new Error(`config table: key '${f.key}' is declared twice`);
  if (byFlag.has(f.flag)) throw new Error(`config table: flag --${f.flag} names two keys`);
  byKey.set(f.key, f);
  byFlag.set(f.flag, f);
}

/** The field of a key; throws naming the known keys when there is none. */
export function configField(key: string): ConfigFieldDef {
  const f = byKey.get(key);
  if (!f) throw new Error(`unknown config key '${key}' (known: ${[...byKey.keys()].join(', ')})`);
  return f;
}

export function findConfigField(key: string): ConfigFieldDef | undefined {
  return byKey.get(key);
}

export function configFieldByFlag(flag: string): ConfigFieldDef | undefined {
  return byFlag.get(flag);
}

export function fieldsOfScope(scope: FieldScope): ConfigFieldDef[] {
  return CONFIG_TABLE.filter((f) => f.scopes.includes(scope));
}

/** Upstream keys (verl / Agent Lightning) versus the lab's own. */
export function isUpstreamKey(key: string): boolean {
  return !key.startsWith('lab.');
}

/** How null is written in flags, overrides and URLs (Hydra's spelling). Old links' `none` is read with a note. */
export const NULL_SPELLING = 'null';

/**
 * Sample-building limits as Agent Lightning's trainer resolves them (agentlightning/verl/trainer.py): at
 * trajectory level the `trajectory_max_*` lengths, at transition level `data.max_prompt_length` /
 * `data.max_response_length`.
 */
export function sampleLengths(s: {
  level: string;
  trajectoryMaxPromptLength: number;
  trajectoryMaxResponseLength: number;
  dataMaxPromptLength: number;
  dataMaxResponseLength: number;
}): { maxPromptLength: number; maxResponseLength: number } {
  const trajectory = s.level.startsWith('trajectory');
  return {
    maxPromptLength: trajectory ? s.trajectoryMaxPromptLength : s.dataMaxPromptLength,
    maxResponseLength: trajectory ? s.trajectoryMaxResponseLength : s.dataMaxResponseLength,
  };
}

/** The policy losses that aggregate their token losses with `loss_agg_mode` (verl's agg_loss). */
const AGGREGATING_POLICY_LOSSES: readonly string[] = ['vanilla', 'dro'];

/** Whether a `policy_loss.loss_mode` reads `loss_agg_mode`. */
export function readsLossAggMode(policyLossMode: string): boolean {
  return AGGREGATING_POLICY_LOSSES.includes(policyLossMode);
}

/**
 * The loss-mode registry name (core/algos/lossModes.ts) the two upstream keys select: `policy_loss.loss_mode`
 * per_rollout_mean replaces the aggregation; vanilla and dro aggregate with `loss_agg_mode` (their row
 * coefficients are the aggregation's).
 */
export function lossModeOf(lossAggMode: string, policyLossMode: string): string {
  return readsLossAggMode(policyLossMode) ? lossAggMode : policyLossMode;
}

/** The inverse: the two upstream keys of a loss-mode registry name. */
export function lossModeKeys(lossMode: string): { lossAggMode: string | null; policyLossMode: string } {
  return allAggModes().some((m) => m.name === lossMode)
    ? { lossAggMode: lossMode, policyLossMode: 'vanilla' }
    : { lossAggMode: null, policyLossMode: lossMode };
}
