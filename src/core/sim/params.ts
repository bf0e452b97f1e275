/**
 * Every simulator input as one `key=value` field (the CLI's overrides, the page's sliders and URL): kind, range
 * and help, declared once. `applySimOverrides` checks each against its field and names the key in the error.
 */
import { checkSimConfig } from './simulate';
import { SIM_MODES, type SimConfig } from './types';

export interface SimField {
  key: string;
  kind: 'int' | 'number' | 'bool' | 'enum';
  min?: number;
  max?: number;
  choices?: readonly string[];
  help: string;
}

const int = (key: string, min: number, max: number, help: string): SimField => ({
  key,
  kind: 'int',
  min,
  max,
  help,
});
const num = (key: string, min: number, max: number, help: string): SimField => ({
  key,
  kind: 'number',
  min,
  max,
  help,
});

export const SIM_FIELDS: SimField[] = [
  { key: 'mode', kind: 'enum', choices: SIM_MODES, help: 'scheduling mode (types.ts)' },
  int('steps', 1, 100000, 'training steps to simulate'),
  int('seed', 0, 2 ** 31 - 1, 'seed of the response lengths and tool latencies'),
  int('trace_step', 0, 100000, 'keep this step for drawing (0: none)'),
  int('cluster.gpus', 1, 100000, 'all GPUs'),
  int('cluster.rollout_gpus', 1, 100000, 'GPUs of the rollout pool (separated modes)'),
  int('cluster.tp', 1, 64, 'GPUs per rollout replica'),
  int('cluster.max_num_seqs', 1, 65536, 'concurrent sequences per replica'),
  num('cluster.decode_base_s', 0, 10, 'decode step: fixed seconds (weights read)'),
  num('cluster.decode_per_seq_s', 0, 1, 'decode step: seconds per running sequence'),
  num('cluster.decode_per_ctx_token_s', 0, 1e-3, 'decode step: seconds per context token held'),
  int('cluster.kv_capacity_tokens', 1, 1e10, 'KV-cache tokens per replica'),
  num('cluster.prefill_tokens_per_s', 1, 1e9, 'prefill tokens/s per replica'),
  num('cluster.train_tokens_per_s_per_gpu', 1e-3, 1e9, 'actor update tokens/s per trainer GPU'),
  num(
    'cluster.old_log_prob_tokens_per_s_per_gpu',
    1e-3,
    1e12,
    'old-log-prob forward tokens/s per trainer GPU',
  ),
  num('cluster.other_s', 0, 1e6, 'other trainer seconds per step'),
  num('cluster.model_params_b', 1e-3, 1e5, 'model size, billions of parameters (bf16)'),
  num('cluster.sync_bandwidth_gb_s', 1e-3, 1e5, 'weight-sync link bandwidth, GB/s'),
  num('cluster.sync_latency_s', 0, 1e4, 'weight-sync fixed latency, s'),
  num('cluster.switch_s', 0, 1e4, 'colocated: sleep + wake of the rollout engine per update, s'),
  int('workload.train_batch_size', 1, 1e6, 'prompts per step (data.train_batch_size)'),
  int('workload.rollout_n', 1, 1024, 'trajectories per prompt (actor_rollout_ref.rollout.n)'),
  int('workload.prompt_tokens', 1, 1e7, 'prompt tokens'),
  num('workload.response_median', 1, 1e7, 'response tokens per trajectory: log-normal median'),
  num('workload.response_sigma', 0, 5, 'response tokens: log-normal σ'),
  int('workload.max_response_length', 1, 1e7, 'response tokens cut here'),
  int('workload.turns', 1, 1000, 'LLM calls per trajectory'),
  num('workload.tool_latency_s', 0, 1e5, 'tool seconds after each call but the last (mean)'),
  num('workload.tool_latency_sigma', 0, 5, 'tool latency: log-normal σ'),
  int('workload.tool_output_tokens', 0, 1e7, 'context tokens a tool output adds'),
  int('schedule.ppo_mini_batch_size', 1, 1e6, 'prompts per PPO mini-batch'),
  int('schedule.require_batches', 1, 1e4, 'fully_async: mini-batches per local update'),
  int('schedule.trigger_parameter_sync_step', 1, 1e4, 'fully_async: local updates per parameter sync'),
  num(
    'schedule.staleness_threshold',
    0,
    100,
    'fully_async: extra share of a step the rollouter may run ahead',
  ),
  {
    key: 'schedule.partial_rollout',
    kind: 'bool',
    help: 'fully_async: abort and resume running calls at a sync',
  },
  int('schedule.parameter_sync_step', 1, 1e4, 'separate_async: mini-batches per global step'),
  int('schedule.max_off_policy_threshold', 0, 1e6, 'trainer.v1.sampler: versions a sample may span'),
  {
    key: 'schedule.max_off_policy_strategy',
    kind: 'enum',
    choices: ['drop', 'wait'],
    help: 'trainer.v1.sampler: drop stale groups, or wait for them',
  },
  int('schedule.num_warmup_batches', 0, 1e4, 'colocate_async / separate_async: batches generated ahead'),
  int('schedule.async_train_batch_size', 1, 1e6, 'agl_async: groups kept in flight'),
  { key: 'schedule.recompute_old_log_prob', kind: 'bool', help: 'recompute old log-probs on the trainer' },
];

export class SimOverrideError extends Error {}

function fieldOf(key: string): SimField {
  const f = SIM_FIELDS.find((x) => x.key === key);
  if (!f) {
    const near = SIM_FIELDS.filter(
      (x) => x.key.endsWith(`.${key}`) || x.key.split('.').pop() === key.split('.').pop(),
    );
    throw new SimOverrideError(
      `unknown key '${key}'${near.length ? ` (did you mean ${near.map((x) => x.key).join(', ')}?)` : ''}`,
    );
  }
  return f;
}

/** A field's value parsed and range-checked. */
export function parseSimValue(key: string, raw: string): number | boolean | string {
  const f = fieldOf(key);
  const bad = (why: string) => new SimOverrideError(`${key}=${raw}: ${why}`);
  if (f.kind === 'bool') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw bad('expected true or false');
  }
  if (f.kind === 'enum') {
    if (!f.choices?.includes(raw)) throw bad(`expected one of ${f.choices?.join(', ')}`);
    return raw;
  }
  if (raw.trim() === '' || !Number.isFinite(Number(raw))) throw bad('expected a number');
  const v = Number(raw);
  if (f.kind === 'int' && !Number.isInteger(v)) throw bad('expected an integer');
  if ((f.min !== undefined && v < f.min) || (f.max !== undefined && v > f.max))
    throw bad(`out of range [${f.min}, ${f.max}]`);
  return v;
}

export function getSimValue(cfg: SimConfig, key: string): number | boolean | string {
  fieldOf(key);
  let o: unknown = cfg;
  for (const part of key.split('.')) o = (o as Record<string, unknown>)[part];
  return o as number | boolean | string;
}

/** A copy of `cfg` with `key=value` overrides applied and the result checked (relations between keys too). */
export function applySimOverrides(cfg: SimConfig, overrides: string[] | Record<string, string>): SimConfig {
  const out = structuredClone(cfg);
  const pairs: [string, string][] = Array.isArray(overrides)
    ? overrides.map((o) => {
        const i = o.indexOf('=');
        if (i <= 0) throw new SimOverrideError(`expected key=value, got '${o}'`);
        return [o.slice(0, i), o.slice(i + 1)];
      })
    : Object.entries(overrides);
  for (const [key, raw] of pairs) {
    const v = parseSimValue(key, raw);
    const parts = key.split('.');
    let o = out as unknown as Record<string, unknown>;
    for (const p of parts.slice(0, -1)) o = o[p] as Record<string, unknown>;
    o[parts[parts.length - 1]] = v;
  }
  try {
    checkSimConfig(out);
  } catch (e) {
    throw new SimOverrideError((e as Error).message);
  }
  return out;
}
