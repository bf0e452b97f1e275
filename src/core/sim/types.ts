/**
 * The backend-scheduling simulator's inputs and outputs. Keys follow the upstream names where upstream has one
 * (`rollout.n`, `ppo_mini_batch_size`, `trigger_parameter_sync_step`, `staleness_threshold`, `partial_rollout`,
 * `parameter_sync_step`, `max_off_policy_threshold`, `max_off_policy_strategy`, `num_warmup_batches`,
 * `async_train_batch_size`); the rest describe the cluster and the workload physically.
 */

/**
 * Scheduling modes, named as upstream names them:
 * - `sync`: verl's synchronous colocated trainer (hybrid engine; `trainer.v1.trainer_mode=sync`): generate the
 *   whole batch on every GPU, then train on the same GPUs.
 * - `one_step_off`: verl's one-step-off-policy recipe: a rollout pool generates batch k+1 (weights synced at its
 *   launch) while the trainer pool trains on batch k.
 * - `fully_async`: verl's fully_async_policy recipe: rollouter and trainer on separate pools, streaming samples;
 *   `require_batches` × `ppo_mini_batch_size` prompts per local update, a parameter sync every
 *   `trigger_parameter_sync_step` local updates, production bounded by `staleness_threshold`, `partial_rollout`.
 * - `colocate_async`: `trainer.v1.trainer_mode=colocate_async`: one pool; `num_warmup_batches` extra batches in
 *   flight, the batch sampled from finished groups, unfinished ones aborted (tokens kept) and resumed after the update.
 * - `separate_async`: `trainer.v1.trainer_mode=separate_async`: standalone rollout pool generating continuously,
 *   the trainer streaming one PPO mini-batch at a time, a weight sync every `parameter_sync_step` mini-batches.
 * - `agl_async`: Agent Lightning's colocated async rollouts: `async_train_batch_size` groups in flight, train on
 *   the first `train_batch_size` that complete; the proxy is paused and in-flight calls drained (run to their end)
 *   before the update, and the rest carry over.
 */
export const SIM_MODES = [
  'sync',
  'one_step_off',
  'fully_async',
  'colocate_async',
  'separate_async',
  'agl_async',
] as const;
export type SimMode = (typeof SIM_MODES)[number];

/** Modes that run generation and training on one pool (the rest have a rollout pool and a trainer pool). */
export const COLOCATED_MODES: readonly SimMode[] = ['sync', 'colocate_async', 'agl_async'];

export interface ClusterSpec {
  /** all GPUs; a separated mode gives `rollout_gpus` of them to generation and the rest to the trainer */
  gpus: number;
  rollout_gpus: number;
  /** GPUs per rollout replica (tensor parallelism) */
  tp: number;
  /** concurrent sequences per replica (vLLM `max_num_seqs`) */
  max_num_seqs: number;
  /**
   * Decode: one engine step advances every running sequence by one token and takes
   * `decode_base_s + decode_per_seq_s·c + decode_per_ctx_token_s·K` for c running sequences holding K context
   * tokens (weights read once per step; per-sequence compute; the KV cache read).
   */
  decode_base_s: number;
  decode_per_seq_s: number;
  decode_per_ctx_token_s: number;
  /** KV-cache tokens per replica: a call is admitted only while the running ones leave room for its context */
  kv_capacity_tokens: number;
  /** prefill tokens/s per replica (a new call, or a partial rollout resumed, prefills its whole context) */
  prefill_tokens_per_s: number;
  /** trainer tokens/s per GPU (prompt + response tokens) of the actor update and of the old-log-prob forward */
  train_tokens_per_s_per_gpu: number;
  old_log_prob_tokens_per_s_per_gpu: number;
  /** trainer time per step outside those (reward, advantages, reference, bookkeeping), seconds */
  other_s: number;
  /** weight sync: model size (billions of parameters, bf16) over link bandwidth (GB/s), plus a fixed latency */
  model_params_b: number;
  sync_bandwidth_gb_s: number;
  sync_latency_s: number;
  /** colocated modes: sleep + wake of the rollout engine around each update (offload, reload, reshard), s */
  switch_s: number;
}

export interface WorkloadSpec {
  /** prompts (tasks) per training step: `data.train_batch_size` */
  train_batch_size: number;
  /** trajectories per prompt: `actor_rollout_ref.rollout.n` */
  rollout_n: number;
  prompt_tokens: number;
  /** response tokens per trajectory: log-normal with this median and σ, cut at `max_response_length` */
  response_median: number;
  response_sigma: number;
  max_response_length: number;
  /** LLM calls per trajectory (the response is split evenly over them) and the tool's latency after each but the last */
  turns: number;
  tool_latency_s: number;
  tool_latency_sigma: number;
  /** tokens a tool's output adds to the context */
  tool_output_tokens: number;
}

export interface ScheduleSpec {
  ppo_mini_batch_size: number;
  /** fully_async: mini-batches per local update, local updates per parameter sync, production bound, partial rollout */
  require_batches: number;
  trigger_parameter_sync_step: number;
  staleness_threshold: number;
  partial_rollout: boolean;
  /** separate_async: mini-batches per global step (= train_batch_size / ppo_mini_batch_size upstream) */
  parameter_sync_step: number;
  /** trainer.v1.sampler: model versions a sample may span from first generation to training, and what then */
  max_off_policy_threshold: number;
  max_off_policy_strategy: 'drop' | 'wait';
  /** colocate_async / separate_async: batches generated ahead of the trainer */
  num_warmup_batches: number;
  /** agl_async: groups kept in flight */
  async_train_batch_size: number;
  /** recompute old log-probs on the trainer (sync-style); the streaming recipes use the rollout's */
  recompute_old_log_prob: boolean;
}

export interface SimConfig {
  mode: SimMode;
  steps: number;
  seed: number;
  cluster: ClusterSpec;
  workload: WorkloadSpec;
  schedule: ScheduleSpec;
  /** keep every trajectory and trainer phase of this step for drawing (0: none) */
  trace_step: number;
}

export const PHASES = ['gen', 'pause', 'old_log_prob', 'update_actor', 'update_weights', 'other'] as const;
export type SimPhase = (typeof PHASES)[number];

export interface SimStep {
  step: number;
  /** trainer clock when the step ended, and the step's wall time (since the previous step ended) */
  end_s: number;
  wall_s: number;
  /** the trainer's time by phase: `gen` is waiting for samples (verl's timing_s/gen), `pause` the drain */
  phases: Record<SimPhase, number>;
  /** busy share of each pool over the step: rollout = occupied sequence slots / all slots, trainer = busy time,
   *  pool = all GPUs together (a colocated pool: the two shares added, since they alternate)  */
  utilisation: { rollout: number; trainer: number; pool: number };
  /** verl 0.9's `training/off_policy/*` over the step's trained trajectories */
  off_policy: OffPolicyMetrics;
  /** counts of trained trajectories by `trajectory_staleness_worst` (index = versions) */
  staleness_hist: number[];
  dropped_samples: number;
  trained_trajectories: number;
  generated_tokens: number;
  trained_tokens: number;
}

export interface OffPolicyMetrics {
  'training/off_policy/trajectory_staleness/mean': number;
  'training/off_policy/trajectory_staleness/max': number;
  'training/off_policy/trajectory_staleness/min': number;
  'training/off_policy/trajectory_staleness_worst/mean': number;
  'training/off_policy/trajectory_staleness_worst/max': number;
  'training/off_policy/trajectory_staleness_worst/min': number;
  'training/off_policy/trajectory_spans/mean': number;
  'training/off_policy/trajectory_spans/max': number;
  'training/off_policy/evicted_samples': number;
}

/** One call of a traced trajectory: on a replica lane, served by one policy version. */
export interface SimCallBar {
  start_s: number;
  end_s: number;
  version: number;
  /** resumed after an abort (partial rollout) */
  resumed: boolean;
}

export interface SimTrajectoryBar {
  group: number;
  replica: number;
  calls: SimCallBar[];
  /** the trainer version it was trained at (null: not trained in the traced step) */
  trained_version: number | null;
}

export interface SimTrace {
  step: number;
  t0: number;
  t1: number;
  phases: { phase: SimPhase; start_s: number; end_s: number }[];
  /** trajectories with a call in [t0, t1], and those trained in the step */
  trajectories: SimTrajectoryBar[];
  replicas: number;
}

export interface SimSummary {
  mode: SimMode;
  steps: number;
  total_s: number;
  mean_step_s: number;
  /** steady state: the mean over steps after the first tenth */
  steady_step_s: number;
  utilisation: { rollout: number; trainer: number; pool: number };
  mean_staleness_worst: number;
  mean_staleness: number;
  dropped_samples: number;
  generated_tokens_per_s: number;
  trained_tokens_per_s: number;
  /** time-average prompts in the system (a call started, not yet trained or dropped): Little's law's L */
  mean_prompts_in_system: number;
  staleness_hist: number[];
}

export interface SimResult {
  config: SimConfig;
  steps: SimStep[];
  summary: SimSummary;
  trace: SimTrace | null;
}
