/**
 * The scheduling simulator (core/sim/) fitted to a local run's own timeline: the loop's TrainEvents give the
 * engine's decode rate (tokens over the time any call was running: the CPU engine samples one call at a time,
 * so throughput is constant and the running calls share it), the response-length distribution (log-normal by
 * the moments of the log), calls per rollout, and the trainer's phase seconds. The fitted config predicts the
 * step time of the same run under another schedule (sync → Agent Lightning's async with pause/drain).
 */
import { clippedLognormalMean } from '../core/sim/scenarios';
import { simulate } from '../core/sim/simulate';
import type { SimConfig, SimMode } from '../core/sim/types';
import type { TrainConfig } from './config';
import type { TrainEvent } from './events';

type RolloutEvent = Extract<TrainEvent, { type: 'rollout' }>;

export interface LocalFit {
  /** seconds of engine time per generated token (all running calls together) */
  secondsPerToken: number;
  responseMedian: number;
  responseSigma: number;
  maxResponse: number;
  promptTokens: number;
  turns: number;
  /** mean seconds per step of the trainer's phases */
  phases: { old_log_prob: number; update_actor: number; other: number };
  steps: number;
}

/** Union length of intervals (ms). */
function unionMs(iv: [number, number][]): number {
  const s = [...iv].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  let start = 0;
  for (const [a, b] of s) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else if (b > end) end = b;
  }
  if (end > start) total += end - start;
  return total;
}

export function fitLocalTimeline(events: TrainEvent[]): LocalFit {
  const rollouts = events.filter((e): e is RolloutEvent => e.type === 'rollout' && e.split === 'train');
  const phases = events.filter((e) => e.type === 'phase') as Extract<TrainEvent, { type: 'phase' }>[];
  const stepNums = [...new Set(phases.map((p) => p.step))];
  if (rollouts.length === 0 || stepNums.length === 0)
    throw new Error('the timeline has no training rollouts or no phases to fit');
  const calls = rollouts.flatMap((r) => r.calls.filter((c) => c.httpStatus === 200));
  if (calls.length === 0) throw new Error('the timeline has no successful calls to fit the decode rate');
  const tokens = calls.reduce((a, c) => a + c.responseTokens, 0);
  const busy = unionMs(calls.map((c) => [c.startMs, c.endMs])) / 1000;
  const lens = rollouts
    .map((r) => r.calls.reduce((a, c) => a + (c.httpStatus === 200 ? c.responseTokens : 0), 0))
    .filter((x) => x > 0);
  const logs = lens.map(Math.log);
  const mu = logs.reduce((a, b) => a + b, 0) / logs.length;
  const sigma = Math.sqrt(logs.reduce((a, b) => a + (b - mu) ** 2, 0) / Math.max(1, logs.length - 1));
  const first = rollouts.map((r) => r.calls[0]).filter((c) => c !== undefined);
  const per = (name: string) =>
    phases.filter((p) => p.phase === name).reduce((a, p) => a + (p.endMs - p.startMs) / 1000, 0) /
    stepNums.length;
  return {
    secondsPerToken: busy / Math.max(1, tokens),
    responseMedian: Math.exp(mu),
    responseSigma: Math.max(0.01, sigma),
    maxResponse: Math.max(...lens),
    promptTokens: Math.max(
      1,
      Math.round(first.reduce((a, c) => a + c.promptTokens, 0) / Math.max(1, first.length)),
    ),
    turns: Math.max(1, Math.round(calls.length / rollouts.length)),
    phases: {
      old_log_prob: per('old_log_prob'),
      update_actor: per('update_actor'),
      other: per('ref') + per('adv') + per('update_weights') + per('resume'),
    },
    steps: stepNums.length,
  };
}

/** The simulator config of a local run: one engine (one replica) serving `concurrency` rollouts at a time. */
export function localSimConfig(
  fit: LocalFit,
  cfg: TrainConfig,
  o: { concurrency: number; steps?: number },
): SimConfig {
  const ar = cfg.agentlightning.async_rollout;
  const mode: SimMode = ar.enabled ? 'agl_async' : 'sync';
  const B = cfg.data.train_batch_size;
  const n = cfg.actor_rollout_ref.rollout.n;
  const meanResp = clippedLognormalMean(fit.responseMedian, fit.responseSigma, fit.maxResponse);
  const tokens = B * n * (fit.promptTokens + meanResp);
  return {
    mode,
    steps: o.steps ?? fit.steps,
    seed: cfg.lab.seed,
    trace_step: 0,
    cluster: {
      gpus: 1,
      rollout_gpus: 1,
      tp: 1,
      max_num_seqs: o.concurrency,
      decode_base_s: 0,
      decode_per_seq_s: fit.secondsPerToken,
      decode_per_ctx_token_s: 0,
      kv_capacity_tokens: 1e9,
      prefill_tokens_per_s: 1e12,
      train_tokens_per_s_per_gpu: tokens / Math.max(1e-9, fit.phases.update_actor),
      old_log_prob_tokens_per_s_per_gpu:
        fit.phases.old_log_prob > 0 ? tokens / fit.phases.old_log_prob : 1e12,
      other_s: fit.phases.other,
      model_params_b: 0.001,
      sync_bandwidth_gb_s: 1e6,
      sync_latency_s: 0,
      switch_s: 0,
    },
    workload: {
      train_batch_size: B,
      rollout_n: n,
      prompt_tokens: fit.promptTokens,
      response_median: fit.responseMedian,
      response_sigma: fit.responseSigma,
      max_response_length: fit.maxResponse,
      turns: fit.turns,
      tool_latency_s: 0,
      tool_latency_sigma: 0,
      tool_output_tokens: 0,
    },
    schedule: {
      ppo_mini_batch_size: cfg.actor_rollout_ref.actor.ppo_mini_batch_size,
      require_batches: 1,
      trigger_parameter_sync_step: 1,
      staleness_threshold: 0,
      partial_rollout: false,
      parameter_sync_step: 1,
      max_off_policy_threshold: 8,
      max_off_policy_strategy: 'drop',
      num_warmup_batches: 0,
      async_train_batch_size: ar.async_train_batch_size,
      recompute_old_log_prob: fit.phases.old_log_prob > 0,
    },
  };
}

/** Mean measured seconds per step of a recorded run (its `timing_s/step`). */
export function measuredStepSeconds(events: TrainEvent[]): number {
  const s = events
    .filter((e): e is Extract<TrainEvent, { type: 'step' }> => e.type === 'step')
    .map((e) => e.metrics['timing_s/step'])
    .filter((x): x is number => typeof x === 'number');
  if (s.length === 0) throw new Error('the timeline has no step events with timing_s/step');
  return s.reduce((a, b) => a + b, 0) / s.length;
}

/** Fit on the sync run's timeline; simulate the sync and the async configs; mean seconds per step of each. */
export function predictLocalSteps(
  syncEvents: TrainEvent[],
  syncCfg: TrainConfig,
  asyncCfg: TrainConfig,
  o: { concurrency: number; steps?: number },
): { sync: number; async: number; fit: LocalFit } {
  const fit = fitLocalTimeline(syncEvents);
  const run = (cfg: TrainConfig) => simulate(localSimConfig(fit, cfg, o)).summary.mean_step_s;
  return { sync: run(syncCfg), async: run(asyncCfg), fit };
}
