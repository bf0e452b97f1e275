/**
 * Named scenarios: a cluster, a workload and a schedule, each with where its numbers come from. The published
 * ones take their inputs from verl's documentation (per-phase seconds of the runs it reports); what the
 * simulator predicts from them (the trainer's wait, the step time, the speed-up, staleness) is kept apart in
 * `published` so the tests can compare.
 *
 * Hardware: an H20 (96 GB HBM3 at 4.0 TB/s, 148 TFLOP/s dense BF16) serving Qwen2.5-7B (7.6B parameters, bf16;
 * 28 layers, 4 KV heads of 128: 57,344 bytes of KV cache per token). The decode step is memory-bound for few
 * sequences (the weights read once: 15.2 GB / (4.0 TB/s · 0.9)) and compute-bound for many (2 FLOP per
 * parameter per token at half the peak); the KV read at 0.9 of the bandwidth; prefill at 0.7 of the peak.
 * One workload number per published run is fitted: the response-length median (σ fixed) such that the
 * simulated colocated-sync `gen` phase equals the documented one (`calibrateMedian`; the tests check the fit).
 */
import { simulate } from './simulate';
import type { ClusterSpec, ScheduleSpec, SimConfig, SimMode, WorkloadSpec } from './types';

const H20_BW = 4.0e12;
const H20_FLOPS = 148e12;
const QWEN7B_PARAMS = 7.6e9;
const QWEN7B_KV_BYTES = 28 * 4 * 128 * 2 * 2;

/** H20 + Qwen2.5-7B, one replica per GPU (tp 1). */
export function h20Qwen7b(gpus: number, rolloutGpus: number): ClusterSpec {
  return {
    gpus,
    rollout_gpus: rolloutGpus,
    tp: 1,
    max_num_seqs: 1024,
    decode_base_s: (QWEN7B_PARAMS * 2) / (H20_BW * 0.9),
    decode_per_seq_s: (2 * QWEN7B_PARAMS) / (H20_FLOPS * 0.5),
    decode_per_ctx_token_s: QWEN7B_KV_BYTES / (H20_BW * 0.9),
    kv_capacity_tokens: Math.floor(((96 - 15.2) * 0.85 * 1e9) / QWEN7B_KV_BYTES),
    prefill_tokens_per_s: (H20_FLOPS * 0.7) / (2 * QWEN7B_PARAMS),
    train_tokens_per_s_per_gpu: 2000,
    old_log_prob_tokens_per_s_per_gpu: 6000,
    other_s: 0,
    model_params_b: 7.6,
    sync_bandwidth_gb_s: 50,
    sync_latency_s: 0.3,
    switch_s: 0,
  };
}

export const DEFAULT_SCHEDULE: ScheduleSpec = {
  ppo_mini_batch_size: 32,
  require_batches: 1,
  trigger_parameter_sync_step: 16,
  staleness_threshold: 0,
  partial_rollout: false,
  parameter_sync_step: 16,
  max_off_policy_threshold: 8,
  max_off_policy_strategy: 'drop',
  num_warmup_batches: 1,
  async_train_batch_size: 768,
  recompute_old_log_prob: true,
};

/** DAPO on dapo-math-17k as verl's recipes run it: 512 prompts × 16, single turn. */
export function dapoWorkload(maxResponse: number, median: number): WorkloadSpec {
  return {
    train_batch_size: 512,
    rollout_n: 16,
    prompt_tokens: 200,
    response_median: median,
    response_sigma: 1,
    max_response_length: maxResponse,
    turns: 1,
    tool_latency_s: 0,
    tool_latency_sigma: 0,
    tool_output_tokens: 0,
  };
}

/** Phase seconds of one documented run (a row of an upstream table). */
export interface PublishedRun {
  mode: SimMode;
  gpus: string;
  step_s: number;
  gen_s: number;
  old_log_prob_s: number;
  update_actor_s: number;
}

export interface Scenario {
  name: string;
  title: string;
  /** where the numbers come from: URL and which table / figure */
  source: string;
  /** the modes this scenario is meant to compare, first the baseline */
  modes: SimMode[];
  /** the config for a mode (the published phase times of that mode's run become its trainer throughputs) */
  config(mode: SimMode): SimConfig;
  /** what upstream measured, for comparison (not read by the simulator) */
  published?: {
    runs: PublishedRun[];
    /** baseline wall time over the faster mode's (the "2.66×"), and what it is measured on */
    speedup: number;
    speedup_of: string;
    /** the documented total-time gain where it differs from the step ratio */
    notes?: string;
    /**
     * mean step seconds of each documented 100-step window, [baseline, faster mode] (from the cumulative
     * totals). The runs are not stationary: the simulator takes one workload per run, fitted to the mean step.
     */
    window_step_s?: number[][];
  };
  /** the closed-form staleness applies here (streaming, steady state) */
  closedForm?: boolean;
}

/** E[min(X, M)] of a log-normal X with median m and σ: the mean response length after the cut. */
export function clippedLognormalMean(median: number, sigma: number, max: number): number {
  const mu = Math.log(median);
  const phi = (x: number) => 0.5 * (1 + erf(x / Math.SQRT2));
  const lm = Math.log(max);
  return (
    Math.exp(mu + (sigma * sigma) / 2) * phi((lm - mu - sigma * sigma) / sigma) +
    max * (1 - phi((lm - mu) / sigma))
  );
}

/** Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7). */
function erf(x: number): number {
  const s = Math.sign(x);
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y =
    1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) *
      t *
      Math.exp(-a * a);
  return s * y;
}

/** Trainer throughputs that reproduce a run's documented old_log_prob / update_actor seconds on `gpus` GPUs. */
export function trainerFrom(
  cluster: ClusterSpec,
  workload: WorkloadSpec,
  run: { old_log_prob_s: number; update_actor_s: number; other_s: number },
  gpus: number,
): ClusterSpec {
  const tokens =
    workload.train_batch_size *
    workload.rollout_n *
    (workload.prompt_tokens +
      clippedLognormalMean(workload.response_median, workload.response_sigma, workload.max_response_length));
  return {
    ...cluster,
    train_tokens_per_s_per_gpu: tokens / (run.update_actor_s * gpus),
    old_log_prob_tokens_per_s_per_gpu: run.old_log_prob_s > 0 ? tokens / (run.old_log_prob_s * gpus) : 1e12,
    other_s: run.other_s,
  };
}

/** The response median whose simulated colocated-sync `gen` phase (mean over `steps`) is `genS`: bisection. */
export function calibrateMedian(base: SimConfig, genS: number, steps = 3): number {
  let lo = 16;
  let hi = base.workload.max_response_length;
  const genAt = (m: number) => {
    const r = simulate({
      ...base,
      mode: 'sync',
      steps,
      trace_step: 0,
      workload: { ...base.workload, response_median: m },
    });
    return r.steps.reduce((a, s) => a + s.phases.gen, 0) / r.steps.length;
  };
  for (let i = 0; i < 30; i++) {
    const mid = Math.sqrt(lo * hi);
    if (genAt(mid) < genS) lo = mid;
    else hi = mid;
  }
  return Math.round(Math.sqrt(lo * hi));
}

const FULLY_ASYNC_URL =
  'https://github.com/volcengine/verl/blob/main/docs/advance/fully_async.md ("Asynchronous Training on 7B Model" table: H20, Qwen2.5-Math-7B, DAPO, max_response_length 28K, rollout.n 16, ppo_mini_batch_size 32; colocate sync train_batch_size 512; fully_async require_batches 4, trigger_parameter_sync_step 4, staleness_threshold 0.5, partial_rollout True)';
const ONE_STEP_OFF_URL =
  'https://github.com/volcengine/verl/blob/main/docs/advance/one_step_off.md ("Experimental Results": 2 × 16 H20... 16 GPUs, generation 4, training 12; Qwen2.5-Math-7B, DAPO, vLLM; the batch is the DAPO recipe\'s 512 prompts × 16)';

interface FullyAsyncRow {
  gpus: number;
  sync: { step_s: number; gen_s: number; old_log_prob_s: number; update_actor_s: number };
  async: { step_s: number; gen_s: number; update_actor_s: number };
  speedup: number;
  /** the table's "total time" columns after 100, 200, 300 and 400 steps, in minutes: [sync, fully_async] */
  totals_min: [number[], number[]];
  /** fitted: see calibrateMedian (tests/unit/sim/published.test.ts checks it) */
  median: number;
}

const FULLY_ASYNC_ROWS: FullyAsyncRow[] = [
  {
    // the 32-GPU update_actor values as the table first gave them (sync 313.81, fully_async 269.80); later
    // versions of the page swap the two, which leaves the fully_async row longer in gen + update_actor than its
    // step. These values leave 11 s (sync) and 4 s (async) of other time, like the 64- and 128-GPU rows.
    gpus: 32,
    sync: { step_s: 790.1, gen_s: 357.41, old_log_prob_s: 107.71, update_actor_s: 313.81 },
    async: { step_s: 294.77, gen_s: 21.26, update_actor_s: 269.8 },
    speedup: 2.66,
    totals_min: [
      [824, 1663, 3442, 5345],
      [478, 981, 1493, 2006],
    ],
    median: 620,
  },
  {
    gpus: 64,
    sync: { step_s: 365.28, gen_s: 150.72, old_log_prob_s: 70.26, update_actor_s: 133.41 },
    async: { step_s: 189.26, gen_s: 28.46, update_actor_s: 156.98 },
    speedup: 1.92,
    totals_min: [
      [622, 1245, 1866, 2492],
      [297, 614, 1018, 1300],
    ],
    median: 260,
  },
  {
    gpus: 128,
    sync: { step_s: 356.3, gen_s: 177.85, old_log_prob_s: 53.92, update_actor_s: 113.81 },
    async: { step_s: 150.63, gen_s: 33.14, update_actor_s: 113.16 },
    speedup: 2.35,
    totals_min: [
      [516, 1076, 1746, 2448],
      [193, 406, 653, 1042],
    ],
    median: 305,
  },
];

function fullyAsyncScenario(row: FullyAsyncRow): Scenario {
  const other = row.sync.step_s - row.sync.gen_s - row.sync.old_log_prob_s - row.sync.update_actor_s;
  const asyncOther = row.async.step_s - row.async.gen_s - row.async.update_actor_s;
  const half = row.gpus / 2;
  return {
    name: `verl-fully-async-7b-${row.gpus}`,
    title: `verl fully_async_policy vs colocate sync, Qwen2.5-Math-7B on ${row.gpus} H20 (${half}:${half})`,
    source: FULLY_ASYNC_URL,
    modes: ['sync', 'fully_async'],
    published: {
      runs: [
        { mode: 'sync', gpus: String(row.gpus), ...row.sync },
        { mode: 'fully_async', gpus: `${half}:${half}`, old_log_prob_s: 0, ...row.async },
      ],
      speedup: row.speedup,
      speedup_of: 'total time of 400 steps, colocate sync over fully_async_policy',
      window_step_s: row.totals_min.map((t) => t.map((m, i) => ((m - (i > 0 ? t[i - 1] : 0)) * 60) / 100)),
    },
    config(mode) {
      const workload = dapoWorkload(28 * 1024, row.median);
      const colocated = mode === 'sync' || mode === 'colocate_async' || mode === 'agl_async';
      const base = h20Qwen7b(row.gpus, half);
      const cluster = colocated
        ? trainerFrom(base, workload, { ...row.sync, other_s: other }, row.gpus)
        : trainerFrom(
            base,
            workload,
            // the rest of the documented step (step − gen − update_actor: sync, bookkeeping) as the other phase
            { old_log_prob_s: 0, update_actor_s: row.async.update_actor_s, other_s: asyncOther },
            half,
          );
      return {
        mode,
        steps: 400,
        seed: 0,
        cluster,
        workload,
        schedule: {
          ...DEFAULT_SCHEDULE,
          require_batches: 4,
          trigger_parameter_sync_step: 4,
          staleness_threshold: 0.5,
          partial_rollout: true,
          recompute_old_log_prob: colocated,
        },
        trace_step: 0,
      };
    },
  };
}

interface OneStepRow {
  engine: string;
  max_response: number;
  sync: { step_s: number; gen_s: number; old_log_prob_s: number; update_actor_s: number };
  async: {
    step_s: number;
    wait_prev_gen_s: number;
    generate_sequences_s: number;
    old_log_prob_s: number;
    update_actor_s: number;
  };
  total_gain: number;
  median: number;
}

const ONE_STEP_ROWS: OneStepRow[] = [
  {
    engine: 'fsdp2',
    max_response: 20480,
    sync: { step_s: 749, gen_s: 321, old_log_prob_s: 88, update_actor_s: 286 },
    async: {
      step_s: 520,
      wait_prev_gen_s: 45,
      generate_sequences_s: 458,
      old_log_prob_s: 108,
      update_actor_s: 337,
    },
    total_gain: 1.23,
    median: 583,
  },
  {
    engine: 'megatron',
    max_response: 8192,
    sync: { step_s: 699, gen_s: 207, old_log_prob_s: 119, update_actor_s: 344 },
    async: {
      step_s: 566,
      wait_prev_gen_s: 59,
      generate_sequences_s: 501,
      old_log_prob_s: 120,
      update_actor_s: 347,
    },
    total_gain: 1.4,
    median: 429,
  },
];

function oneStepScenario(row: OneStepRow): Scenario {
  const other = row.sync.step_s - row.sync.gen_s - row.sync.old_log_prob_s - row.sync.update_actor_s;
  return {
    name: `verl-one-step-off-7b-${row.engine}`,
    title: `verl one_step_off vs colocate sync, Qwen2.5-Math-7B, vLLM + ${row.engine === 'fsdp2' ? 'FSDP2' : 'Megatron'} on 16 H20 (4 generation : 12 training)`,
    source: ONE_STEP_OFF_URL,
    modes: ['sync', 'one_step_off'],
    published: {
      runs: [
        { mode: 'sync', gpus: '16', ...row.sync },
        {
          mode: 'one_step_off',
          gpus: '4:12',
          step_s: row.async.step_s,
          gen_s: row.async.wait_prev_gen_s,
          old_log_prob_s: row.async.old_log_prob_s,
          update_actor_s: row.async.update_actor_s,
        },
      ],
      speedup: row.sync.step_s / row.async.step_s,
      speedup_of: "step time, colocate sync over one-step-overlap async (the table's step column)",
      notes: `the table's total-time gain is +${Math.round((row.total_gain - 1) * 100)}% (${row.total_gain}×), over runs of unstated, different step counts`,
    },
    config(mode) {
      const workload = dapoWorkload(row.max_response, row.median);
      const colocated = mode === 'sync' || mode === 'colocate_async' || mode === 'agl_async';
      const base = h20Qwen7b(16, 4);
      const cluster = colocated
        ? trainerFrom(base, workload, { ...row.sync, other_s: other }, 16)
        : trainerFrom(base, workload, { ...row.async, other_s: other }, 12);
      return {
        mode,
        steps: 50,
        seed: 0,
        cluster,
        workload,
        schedule: { ...DEFAULT_SCHEDULE, recompute_old_log_prob: true },
        trace_step: 0,
      };
    },
  };
}

/** A multi-turn agent workload on 8 GPUs (no published run): the scheduling modes side by side. */
const agentic: Scenario = {
  name: 'agentic-8gpu',
  title: 'A multi-turn tool-using agent, Qwen2.5-7B on 8 H20 (separated modes: 4 rollout : 4 training)',
  source:
    'illustrative: hardware as the published scenarios; 4 turns with a 2 s (σ 1) tool call between them, 64 prompts × 8',
  modes: ['sync', 'agl_async', 'colocate_async', 'one_step_off', 'separate_async', 'fully_async'],
  closedForm: false,
  config(mode) {
    const workload: WorkloadSpec = {
      train_batch_size: 64,
      rollout_n: 8,
      prompt_tokens: 1024,
      response_median: 2000,
      response_sigma: 0.9,
      max_response_length: 16384,
      turns: 4,
      tool_latency_s: 2,
      tool_latency_sigma: 1,
      tool_output_tokens: 300,
    };
    const cluster: ClusterSpec = {
      ...h20Qwen7b(8, 4),
      train_tokens_per_s_per_gpu: 3000,
      old_log_prob_tokens_per_s_per_gpu: 9000,
      other_s: 5,
      switch_s: 8,
    };
    return {
      mode,
      steps: 40,
      seed: 0,
      cluster,
      workload,
      schedule: {
        ...DEFAULT_SCHEDULE,
        ppo_mini_batch_size: 16,
        require_batches: 1,
        trigger_parameter_sync_step: 4,
        staleness_threshold: 0.5,
        partial_rollout: true,
        parameter_sync_step: 4,
        max_off_policy_threshold: 2,
        async_train_batch_size: 96,
        recompute_old_log_prob:
          mode === 'sync' || mode === 'colocate_async' || mode === 'agl_async' || mode === 'one_step_off',
      },
      trace_step: 0,
    };
  },
};

/**
 * The closed-form case (staleness.ts): verl v1 separate_async on 128 GPUs with the active-prompt cap
 * `(1 + num_warmup_batches) · train_batch_size` holding the pipeline full; two splits and two caps.
 */
function closedFormScenario(name: string, rolloutGpus: number, warmup: number): Scenario {
  return {
    name,
    title: `verl v1 separate_async, Qwen2.5-7B on 128 H20 (${rolloutGpus} rollout : ${128 - rolloutGpus} training), num_warmup_batches ${warmup}`,
    source:
      "closed form: Little's law over the prompt groups in the system (staleness.ts; the approach of https://www.appliedcompute.com/research/staleness-in-fully-async-rl); hardware as the published scenarios",
    modes: ['separate_async'],
    closedForm: true,
    config(mode) {
      const workload = dapoWorkload(16384, 3000);
      workload.train_batch_size = 256;
      const cluster: ClusterSpec = {
        ...h20Qwen7b(128, rolloutGpus),
        train_tokens_per_s_per_gpu: 4000,
        other_s: 2,
      };
      return {
        mode,
        steps: 200,
        seed: 0,
        cluster,
        workload,
        schedule: {
          ...DEFAULT_SCHEDULE,
          ppo_mini_batch_size: 32,
          parameter_sync_step: 8,
          num_warmup_batches: warmup,
          max_off_policy_threshold: 1000,
          recompute_old_log_prob: false,
        },
        trace_step: 0,
      };
    },
  };
}

export const SCENARIOS: Scenario[] = [
  ...FULLY_ASYNC_ROWS.map(fullyAsyncScenario),
  ...ONE_STEP_ROWS.map(oneStepScenario),
  agentic,
  closedFormScenario('separate-async-128-cap-w1', 96, 1),
  closedFormScenario('separate-async-128-cap-w2', 24, 2),
];

export function scenarioNames(): string[] {
  return SCENARIOS.map((s) => s.name);
}

export function getScenario(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new Error(`unknown scenario '${name}' (one of: ${scenarioNames().join(', ')})`);
  return s;
}

/** For refitting the stored medians: the scenario's sync config and its documented colocated gen seconds. */
export const CALIBRATION_TARGETS = [
  ...FULLY_ASYNC_ROWS.map((r) => ({ name: `verl-fully-async-7b-${r.gpus}`, gen_s: r.sync.gen_s, row: r })),
  ...ONE_STEP_ROWS.map((r) => ({ name: `verl-one-step-off-7b-${r.engine}`, gen_s: r.sync.gen_s, row: r })),
];
