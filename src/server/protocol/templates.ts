/**
 * The job templates the gateway may submit: a registry keyed by template name. The Ray Jobs API runs any
 * command, so the page only ever sends a template name and parameter values; every parameter is declared here
 * with its bounds, and the choices come from core's registries (advantage estimators, loss aggregation modes,
 * policy losses) and from the harness catalogue the caller passes in. The gateway turns checked values into a
 * job (server/jobs.ts) without ever taking an entrypoint, environment or override from a request.
 *
 * Browser-safe: the page generates its template form from the same specs.
 */
import type { TraceAggregatorLevel } from '../../core/aggregate/buildTrainingBatch';
import { listAdvEstimators, traceUnavailable } from '../../core/algos/advantage';
import { LOSS_AGG_MODES } from '../../core/algos/aggLoss';
import { listPolicyLosses } from '../../core/algos/policyLoss';
import { checkParams, ParamError, type ParamSpec, type ParamValues } from './params';
import { aglVerlSchedule, checkAglVerlParams } from './verlPlan';

/** What the templates offer that is not in core: the harnesses and history behaviours of `lab agent`. */
export interface Catalogue {
  harnesses: readonly string[];
  behaviours: readonly string[];
}

export interface JobTemplate {
  name: TemplateName;
  summary: string;
  params: ParamSpec[];
  /** checks across parameters (e.g. mini-batch ≤ batch); throws ParamError */
  crossCheck?: (p: ParamValues) => void;
}

export const TEMPLATE_NAMES = ['agl-cpu', 'agl-verl'] as const;
export type TemplateName = (typeof TEMPLATE_NAMES)[number];

export function isTemplateName(s: string): s is TemplateName {
  return (TEMPLATE_NAMES as readonly string[]).includes(s);
}

/*
 * `agentlightning.trace_aggregator.level` is a core union type, not a registry: a record keyed by it makes the
 * compiler demand an entry for every level core adds.
 */
const LEVELS: Record<TraceAggregatorLevel, string> = {
  trajectory: 'merge calls whose prompt extends the context into one row',
  transition: 'one training row per call',
};

/**
 * Estimators a trainer fed from recorded traces can run: ReMax needs greedy-baseline rewards that a rollout
 * never carries (the same rule as the page's estimator list).
 */
function traceEstimators(): { value: string; label: string }[] {
  return listAdvEstimators()
    .filter((e) => traceUnavailable(e) === null)
    .map((e) => ({ value: e.name, label: `${e.name} — ${e.label}` }));
}

function algorithmParams(): ParamSpec[] {
  return [
    {
      kind: 'enum',
      name: 'adv_estimator',
      label: 'Advantage estimator',
      help: 'verl estimator, computed on the rows the trace aggregator builds',
      upstream: 'algorithm.adv_estimator',
      values: traceEstimators(),
      default: 'grpo',
    },
    {
      kind: 'bool',
      name: 'norm_adv_by_std_in_grpo',
      label: 'Divide by group std (GRPO)',
      help: 'off = Dr. GRPO',
      upstream: 'algorithm.norm_adv_by_std_in_grpo',
      default: true,
    },
    {
      kind: 'bool',
      name: 'enable_rollout_level_advantage',
      label: 'Rollout-level advantage',
      help: 'one advantage per rollout, broadcast to its rows (Agent Lightning)',
      upstream: 'algorithm.enable_rollout_level_advantage',
      default: true,
    },
    {
      kind: 'enum',
      name: 'loss_agg_mode',
      label: 'Loss aggregation',
      help: 'how token losses are averaged',
      upstream: 'actor_rollout_ref.actor.loss_agg_mode',
      values: LOSS_AGG_MODES.map((m) => ({ value: m, label: m })),
      default: 'token-mean',
    },
    {
      kind: 'enum',
      name: 'policy_loss_mode',
      label: 'Policy loss',
      help: 'per_rollout_mean divides advantages by the rollout’s trainable tokens × rows (Agent Lightning default)',
      upstream: 'actor_rollout_ref.actor.policy_loss.loss_mode',
      values: listPolicyLosses().map((p) => ({ value: p.name, label: `${p.name} — ${p.label}` })),
      default: 'per_rollout_mean',
    },
    {
      kind: 'enum',
      name: 'trace_aggregator_level',
      label: 'Trace aggregation',
      help: 'how recorded calls become training rows',
      upstream: 'agentlightning.trace_aggregator.level',
      values: (Object.keys(LEVELS) as TraceAggregatorLevel[]).map((k) => ({
        value: k,
        label: `${k} — ${LEVELS[k]}`,
      })),
      default: 'trajectory',
    },
    {
      kind: 'number',
      name: 'clip_ratio_low',
      label: 'Clip ratio low',
      help: 'PPO ε below 1',
      upstream: 'actor_rollout_ref.actor.clip_ratio_low',
      min: 0,
      max: 1,
      default: 0.2,
    },
    {
      kind: 'number',
      name: 'clip_ratio_high',
      label: 'Clip ratio high',
      help: 'PPO ε above 1',
      upstream: 'actor_rollout_ref.actor.clip_ratio_high',
      min: 0,
      max: 10,
      default: 0.2,
    },
  ];
}

function harnessParams(c: Catalogue): ParamSpec[] {
  if (c.harnesses.length === 0) throw new Error('job templates: the harness catalogue is empty');
  return [
    {
      kind: 'enum',
      name: 'harness',
      label: 'Harness',
      help: 'the agent `lab agent` runs for each rollout, behind the thin Python agent class',
      values: c.harnesses.map((h) => ({ value: h, label: h })),
      default: c.harnesses.includes('instruction') ? 'instruction' : c.harnesses[0],
    },
    {
      kind: 'enum',
      name: 'behaviour',
      label: 'History behaviour',
      help: 'how the harness rewrites its history between calls (none = keep it)',
      values: [{ value: 'none', label: 'none' }, ...c.behaviours.map((b) => ({ value: b, label: b }))],
      default: 'none',
    },
  ];
}

const seedParam: ParamSpec = {
  kind: 'int',
  name: 'seed',
  label: 'Seed',
  help: 'task sampling and the run’s random draws',
  upstream: 'data.seed',
  min: 0,
  max: 2 ** 31 - 1,
  default: 0,
};

/** The context length of the agl-cpu template's policy (cli/aglCpu.ts builds it with this). */
export const AGL_CPU_CONTEXT = 256;

/** The templates for a harness catalogue, keyed by name. */
export function jobTemplates(c: Catalogue): Record<TemplateName, JobTemplate> {
  return {
    'agl-cpu': {
      name: 'agl-cpu',
      summary:
        'agl-server + agl-controller (local runner) + the project’s policy on an OpenAI-compatible Node server, trained by the lab train loop from the harness’s shipped SFT checkpoint; CPU only, any Ray cluster',
      params: [
        ...harnessParams(c),
        {
          kind: 'int',
          name: 'total_training_steps',
          label: 'Steps',
          help: 'training steps (each: enqueue, wait for every rollout, pause, update, push weights, resume)',
          upstream: 'trainer.total_training_steps',
          min: 1,
          max: 100_000,
          default: 3,
        },
        {
          kind: 'int',
          name: 'train_batch_size',
          label: 'Tasks per step',
          help: 'tasks drawn from the harness’s train split per step',
          upstream: 'data.train_batch_size',
          min: 1,
          max: 256,
          default: 2,
        },
        {
          kind: 'int',
          name: 'rollout_n',
          label: 'Rollouts per task',
          help: 'the GRPO group size',
          upstream: 'actor_rollout_ref.rollout.n',
          min: 1,
          max: 32,
          default: 2,
        },
        ...algorithmParams(),
        {
          kind: 'number',
          name: 'lr',
          label: 'Learning rate',
          help: 'AdamW',
          upstream: 'actor_rollout_ref.actor.optim.lr',
          min: 1e-7,
          max: 1,
          default: 1e-3,
        },
        {
          kind: 'int',
          name: 'max_response_length',
          label: 'Max response tokens',
          help: 'per call (the policy’s context is 256 tokens)',
          upstream: 'data.max_response_length',
          min: 1,
          max: 255,
          default: 48,
        },
        {
          kind: 'int',
          name: 'max_prompt_length',
          label: 'Max prompt tokens',
          help: 'rows whose first prompt is longer are dropped (is_drop)',
          upstream: 'agentlightning.trace_aggregator.trajectory_max_prompt_length',
          min: 1,
          max: 255,
          default: 200,
        },
        seedParam,
      ],
      crossCheck: (p) => {
        const total = (p.max_prompt_length as number) + (p.max_response_length as number);
        if (total > AGL_CPU_CONTEXT)
          throw new ParamError(
            'params.max_response_length',
            `max_prompt_length + max_response_length must fit the policy's context of ${AGL_CPU_CONTEXT} tokens; got ${total}`,
          );
      },
    },
    'agl-verl': {
      name: 'agl-verl',
      summary:
        'agl-server + agl-controller (local runner) + Agent Lightning’s verl trainer (vLLM rollouts) on a GPU Ray cluster',
      params: [
        {
          kind: 'string',
          name: 'model_path',
          label: 'Model',
          help: 'Hugging Face id or a path on the cluster',
          upstream: 'actor_rollout_ref.model.path',
          // no '=', ',', spaces, quotes, '$' or brackets: the value goes into a Hydra override as it is
          pattern: '/?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*',
          maxLength: 300,
          default: 'Qwen/Qwen2.5-0.5B-Instruct',
        },
        {
          kind: 'int',
          name: 'nnodes',
          label: 'Nodes',
          help: 'GPU nodes',
          upstream: 'trainer.nnodes',
          min: 1,
          max: 256,
          default: 1,
        },
        {
          kind: 'int',
          name: 'n_gpus_per_node',
          label: 'GPUs per node',
          help: '',
          upstream: 'trainer.n_gpus_per_node',
          min: 1,
          max: 16,
          default: 1,
        },
        {
          kind: 'int',
          name: 'tensor_model_parallel_size',
          label: 'vLLM tensor parallel',
          help: 'GPUs per vLLM replica',
          upstream: 'actor_rollout_ref.rollout.tensor_model_parallel_size',
          min: 1,
          max: 16,
          default: 1,
        },
        {
          kind: 'number',
          name: 'gpu_memory_utilization',
          label: 'vLLM GPU memory share',
          help: '',
          upstream: 'actor_rollout_ref.rollout.gpu_memory_utilization',
          min: 0.05,
          max: 0.95,
          default: 0.5,
        },
        ...harnessParams(c),
        {
          kind: 'int',
          name: 'total_training_steps',
          label: 'Steps',
          help: '',
          upstream: 'trainer.total_training_steps',
          min: 1,
          max: 1_000_000,
          default: 100,
        },
        {
          kind: 'int',
          name: 'train_batch_size',
          label: 'Tasks per step',
          help: '',
          upstream: 'data.train_batch_size',
          min: 1,
          max: 65_536,
          default: 16,
        },
        {
          kind: 'int',
          name: 'ppo_mini_batch_size',
          label: 'PPO mini-batch',
          help: 'tasks per mini-batch (at most the tasks per step)',
          upstream: 'actor_rollout_ref.actor.ppo_mini_batch_size',
          min: 1,
          max: 65_536,
          default: 16,
        },
        {
          kind: 'int',
          name: 'micro_batch_size_per_gpu',
          label: 'Micro-batch per GPU',
          help: 'actor update and log-prob micro-batches',
          upstream: 'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu',
          min: 1,
          max: 1024,
          default: 4,
        },
        {
          kind: 'int',
          name: 'rollout_n',
          label: 'Rollouts per task',
          help: 'the GRPO group size',
          upstream: 'actor_rollout_ref.rollout.n',
          min: 1,
          max: 64,
          default: 8,
        },
        ...algorithmParams(),
        {
          kind: 'number',
          name: 'lr',
          label: 'Learning rate',
          help: '',
          upstream: 'actor_rollout_ref.actor.optim.lr',
          min: 1e-9,
          max: 1e-2,
          default: 1e-6,
        },
        {
          kind: 'int',
          name: 'max_prompt_length',
          label: 'Max prompt tokens',
          help: 'data.max_prompt_length and the trajectory limit',
          upstream: 'agentlightning.trace_aggregator.trajectory_max_prompt_length',
          min: 16,
          max: 262_144,
          default: 2048,
        },
        {
          kind: 'int',
          name: 'max_response_length',
          label: 'Max response tokens',
          help: 'data.max_response_length and the trajectory limit',
          upstream: 'agentlightning.trace_aggregator.trajectory_max_response_length',
          min: 16,
          max: 262_144,
          default: 2048,
        },
        {
          kind: 'bool',
          name: 'async_rollout',
          label: 'Async rollouts',
          help: 'keep more groups in flight than a batch',
          upstream: 'agentlightning.async_rollout.enabled',
          default: false,
        },
        seedParam,
      ],
      crossCheck: checkAglVerlParams,
    },
  };
}

/** Validates template name + params; throws ParamError naming the field. */
export function checkTemplateParams(
  templates: Record<TemplateName, JobTemplate>,
  name: string,
  raw: unknown,
): { template: JobTemplate; params: ParamValues } {
  if (!isTemplateName(name))
    throw new ParamError(
      'template',
      `unknown template ${JSON.stringify(name)} (known: ${TEMPLATE_NAMES.join(', ')})`,
    );
  const template = templates[name];
  const params = checkParams(template.params, raw);
  template.crossCheck?.(params);
  return { template, params };
}

/** The Python agent class Agent Lightning's local runner loads (python/harness_lab_cluster/agent.py). */
export const AGENT_CLASS = 'harness_lab_cluster.agent:HarnessLabAgent';

/**
 * How each rollout's input reaches the agent process: Agent Lightning's local runner sets these environment
 * variables from the rollout input (`agentlightning.local.env_map`: name → path in the input).
 */
export const AGENT_ENV_MAP: Record<string, string> = {
  HL_HARNESS: 'input.harness',
  HL_SPLIT: 'input.split',
  HL_SEED: 'input.seed',
  HL_INDEX: 'input.index',
  HL_BEHAVIOUR: 'input.behaviour',
};

/**
 * The Hydra overrides of the agl-verl template (Agent Lightning's verl trainer config: agentlightning's
 * `verl/config.yaml` on top of verl 0.8.0's `ppo_trainer`). Values come only from checked parameters; the
 * launcher adds the run-time keys (`agentlightning.agl_base_url`, `agentlightning.agl_key`) itself.
 */
export function aglVerlOverrides(p: ParamValues): string[] {
  const micro = p.micro_batch_size_per_gpu;
  return [
    `actor_rollout_ref.model.path=${p.model_path}`,
    `trainer.nnodes=${p.nnodes}`,
    `trainer.n_gpus_per_node=${p.n_gpus_per_node}`,
    `trainer.total_training_steps=${p.total_training_steps}`,
    `trainer.logger=[console,file]`,
    `trainer.val_before_train=false`,
    `trainer.save_freq=${aglVerlSchedule(p).saveFreq}`,
    `trainer.test_freq=${aglVerlSchedule(p).testFreq}`,
    `trainer.project_name=harness-lab`,
    `trainer.experiment_name=agl-verl`,
    `data.train_batch_size=${p.train_batch_size}`,
    `data.max_prompt_length=${p.max_prompt_length}`,
    `data.max_response_length=${p.max_response_length}`,
    `data.seed=${p.seed}`,
    `actor_rollout_ref.rollout.name=vllm`,
    `actor_rollout_ref.rollout.n=${p.rollout_n}`,
    `actor_rollout_ref.rollout.tensor_model_parallel_size=${p.tensor_model_parallel_size}`,
    `actor_rollout_ref.rollout.gpu_memory_utilization=${p.gpu_memory_utilization}`,
    `actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=${micro}`,
    `actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=${micro}`,
    `actor_rollout_ref.actor.ppo_mini_batch_size=${p.ppo_mini_batch_size}`,
    `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${micro}`,
    `actor_rollout_ref.actor.optim.lr=${p.lr}`,
    `actor_rollout_ref.actor.loss_agg_mode=${p.loss_agg_mode}`,
    `actor_rollout_ref.actor.policy_loss.loss_mode=${p.policy_loss_mode}`,
    `actor_rollout_ref.actor.clip_ratio_low=${p.clip_ratio_low}`,
    `actor_rollout_ref.actor.clip_ratio_high=${p.clip_ratio_high}`,
    `algorithm.adv_estimator=${p.adv_estimator}`,
    `algorithm.norm_adv_by_std_in_grpo=${p.norm_adv_by_std_in_grpo}`,
    `algorithm.enable_rollout_level_advantage=${p.enable_rollout_level_advantage}`,
    `agentlightning.trace_aggregator.level=${p.trace_aggregator_level}`,
    `agentlightning.trace_aggregator.trajectory_max_prompt_length=${p.max_prompt_length}`,
    `agentlightning.trace_aggregator.trajectory_max_response_length=${p.max_response_length}`,
    `agentlightning.async_rollout.enabled=${p.async_rollout}`,
    `agentlightning.local.agent_class=${AGENT_CLASS}`,
    // env_map is an empty dict in the config: new keys are appended one by one (`+key=value`)
    ...Object.entries(AGENT_ENV_MAP).map(([k, v]) => `+agentlightning.local.env_map.${k}=${v}`),
  ];
}
