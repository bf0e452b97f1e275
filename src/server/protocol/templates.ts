/**
 * The job templates the gateway may submit: a registry keyed by template name. The Ray Jobs API runs any
 * command, so the page only ever sends a template name and parameter values. Every parameter sets one key of
 * core's config table (core/config/fields.ts, `template` scope): kind, label, help, bounds and choices come from
 * there (choices from core's registries, harnesses and behaviours from the catalogue the caller passes in); a
 * template only names the parameter on the wire, may narrow the bounds, and sets its own default (a template is
 * a preset of a job). The gateway turns checked values into a job (server/jobs.ts) without ever taking an
 * entrypoint, environment or override from a request.
 *
 * Browser-safe: the page generates its template form from the same specs.
 */
import { type ConfigFieldDef, configField } from '../../core/config/fields';
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

/** What a template adds to a config field: its wire name, narrower bounds, its default, a note on the help. */
interface ParamUse {
  name: string;
  default?: string | number | boolean;
  min?: number;
  max?: number;
  /** enum values (for choices from the caller's catalogue) */
  values?: { value: string; label: string }[];
  /** strings: what the value may look like (it goes into a Hydra override as it is) */
  pattern?: string;
  maxLength?: number;
  note?: string;
}

/** A template parameter from the config table's field for `key` (which must be in the `template` scope). */
export function templateParam(key: string, use: ParamUse): ParamSpec {
  const f: ConfigFieldDef = configField(key);
  if (!f.scopes.includes('template')) throw new Error(`job templates: ${key} is not a template setting`);
  const base = {
    name: use.name,
    label: f.label,
    help: use.note ? `${f.help} — ${use.note}` : f.help,
    upstream: f.key,
  };
  const bound = (which: 'min' | 'max'): number => {
    const own = f[which];
    const mine = use[which];
    if (mine === undefined) {
      if (own === undefined) throw new Error(`job templates: ${use.name} needs a ${which} (${key} has none)`);
      return own;
    }
    if (own !== undefined && (which === 'min' ? mine < own : mine > own))
      throw new Error(`job templates: ${use.name} ${which} ${mine} is outside ${key}'s bound ${own}`);
    return mine;
  };
  switch (f.kind) {
    case 'int':
    case 'float': {
      const def = (use.default ?? f.default) as number;
      return {
        ...base,
        kind: f.kind === 'int' ? 'int' : 'number',
        min: bound('min'),
        max: bound('max'),
        default: def,
      };
    }
    case 'bool':
      return { ...base, kind: 'bool', default: (use.default ?? f.default) as boolean };
    case 'enum':
    case 'list': {
      const values =
        use.values ??
        (f.choices?.() ?? []).filter((c) => !c.unavailable).map((c) => ({ value: c.value, label: c.label }));
      if (values.length === 0) throw new Error(`job templates: ${use.name} has no choices`);
      const def = (use.default ?? f.default) as string;
      return {
        ...base,
        kind: 'enum',
        values,
        default: values.some((v) => v.value === def) ? def : values[0].value,
      };
    }
    case 'string':
      if (!use.pattern || !use.maxLength)
        throw new Error(`job templates: ${use.name} needs a pattern and maxLength`);
      return {
        ...base,
        kind: 'string',
        pattern: use.pattern,
        maxLength: use.maxLength,
        default: (use.default ?? f.default) as string,
      };
    default:
      throw new Error(`job templates: ${key} (${f.kind}) cannot be a template parameter`);
  }
}

function algorithmParams(): ParamSpec[] {
  return [
    templateParam('algorithm.adv_estimator', { name: 'adv_estimator' }),
    templateParam('algorithm.norm_adv_by_std_in_grpo', { name: 'norm_adv_by_std_in_grpo' }),
    templateParam('algorithm.enable_rollout_level_advantage', { name: 'enable_rollout_level_advantage' }),
    templateParam('actor_rollout_ref.actor.loss_agg_mode', { name: 'loss_agg_mode' }),
    templateParam('actor_rollout_ref.actor.policy_loss.loss_mode', { name: 'policy_loss_mode' }),
    templateParam('agentlightning.trace_aggregator.level', { name: 'trace_aggregator_level' }),
    templateParam('actor_rollout_ref.actor.clip_ratio_low', { name: 'clip_ratio_low' }),
    templateParam('actor_rollout_ref.actor.clip_ratio_high', { name: 'clip_ratio_high' }),
  ];
}

function harnessParams(c: Catalogue): ParamSpec[] {
  if (c.harnesses.length === 0) throw new Error('job templates: the harness catalogue is empty');
  return [
    templateParam('lab.harness', {
      name: 'harness',
      values: c.harnesses.map((h) => ({ value: h, label: h })),
      note: 'the agent `lab agent` runs for each rollout, behind the thin Python agent class',
    }),
    templateParam('lab.behaviours', {
      name: 'behaviour',
      values: [{ value: 'none', label: 'none' }, ...c.behaviours.map((b) => ({ value: b, label: b }))],
      default: 'none',
      note: 'one behaviour per job',
    }),
  ];
}

const seedParam = (): ParamSpec => templateParam('data.seed', { name: 'seed' });

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
        templateParam('trainer.total_training_steps', {
          name: 'total_training_steps',
          min: 1,
          max: 100_000,
          default: 3,
          note: 'each: enqueue, wait for every rollout, pause, update, push weights, resume',
        }),
        templateParam('data.train_batch_size', { name: 'train_batch_size', max: 256, default: 2 }),
        templateParam('actor_rollout_ref.rollout.n', { name: 'rollout_n', max: 32, default: 2 }),
        ...algorithmParams(),
        templateParam('actor_rollout_ref.actor.optim.lr', { name: 'lr', min: 1e-7, max: 1, default: 1e-3 }),
        templateParam('data.max_response_length', {
          name: 'max_response_length',
          max: 255,
          default: 48,
          note: 'the policy’s context is 256 tokens',
        }),
        templateParam('agentlightning.trace_aggregator.trajectory_max_prompt_length', {
          name: 'max_prompt_length',
          max: 255,
          default: 200,
        }),
        seedParam(),
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
        templateParam('actor_rollout_ref.model.path', {
          name: 'model_path',
          // no '=', ',', spaces, quotes, '$' or brackets: the value goes into a Hydra override as it is
          pattern: '/?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*',
          maxLength: 300,
          default: 'Qwen/Qwen2.5-0.5B-Instruct',
        }),
        templateParam('trainer.nnodes', { name: 'nnodes' }),
        templateParam('trainer.n_gpus_per_node', { name: 'n_gpus_per_node', default: 1 }),
        templateParam('actor_rollout_ref.rollout.tensor_model_parallel_size', {
          name: 'tensor_model_parallel_size',
          default: 1,
        }),
        templateParam('actor_rollout_ref.rollout.gpu_memory_utilization', { name: 'gpu_memory_utilization' }),
        ...harnessParams(c),
        templateParam('trainer.total_training_steps', {
          name: 'total_training_steps',
          min: 1,
          max: 1_000_000,
          default: 100,
        }),
        templateParam('data.train_batch_size', { name: 'train_batch_size', max: 65_536, default: 16 }),
        templateParam('actor_rollout_ref.actor.ppo_mini_batch_size', {
          name: 'ppo_mini_batch_size',
          max: 65_536,
          default: 16,
          note: 'at most the tasks per step',
        }),
        templateParam('actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu', {
          name: 'micro_batch_size_per_gpu',
          max: 1024,
          default: 4,
          note: 'also the log-prob micro-batches',
        }),
        templateParam('actor_rollout_ref.rollout.n', { name: 'rollout_n', max: 64, default: 8 }),
        ...algorithmParams(),
        templateParam('actor_rollout_ref.actor.optim.lr', {
          name: 'lr',
          min: 1e-9,
          max: 1e-2,
          default: 1e-6,
        }),
        templateParam('agentlightning.trace_aggregator.trajectory_max_prompt_length', {
          name: 'max_prompt_length',
          min: 16,
          max: 262_144,
          note: 'also data.max_prompt_length',
        }),
        templateParam('agentlightning.trace_aggregator.trajectory_max_response_length', {
          name: 'max_response_length',
          min: 16,
          max: 262_144,
          default: 2048,
          note: 'also data.max_response_length',
        }),
        templateParam('agentlightning.async_rollout.enabled', { name: 'async_rollout' }),
        seedParam(),
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
