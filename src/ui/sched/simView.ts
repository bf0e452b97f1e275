/**
 * The Scheduling view's model: a scenario (or a local run's fit) with `key=value` overrides, simulated in every
 * mode it compares, and the traced step of the shown mode as the same StepTimeline a real run's Timeline view
 * draws (the trainer lane, rollout-pool lanes of trajectories with their calls coloured by policy version, stale
 * ones marked).
 */
import {
  applySimOverrides,
  getScenario,
  SCENARIOS,
  SIM_FIELDS,
  SIM_MODES,
  type SimConfig,
  type SimMode,
  type SimResult,
  simulate,
} from '../../core/sim';
import { packLanes, type RolloutBar, type StepTimeline } from '../train/timeline';

/** The sliders: which fields, and their ranges in the page. */
export const SIM_SLIDERS: { key: string; label: string; min: number; max: number; step: number }[] = [
  { key: 'cluster.gpus', label: 'GPUs', min: 2, max: 256, step: 2 },
  { key: 'cluster.rollout_gpus', label: 'rollout GPUs (separated modes)', min: 1, max: 255, step: 1 },
  { key: 'workload.train_batch_size', label: 'prompts per step', min: 8, max: 1024, step: 8 },
  { key: 'workload.rollout_n', label: 'rollout.n', min: 1, max: 32, step: 1 },
  { key: 'workload.response_median', label: 'response median (tokens)', min: 16, max: 16384, step: 16 },
  { key: 'workload.response_sigma', label: 'response σ (tail)', min: 0, max: 2, step: 0.05 },
  { key: 'workload.turns', label: 'turns', min: 1, max: 16, step: 1 },
  { key: 'workload.tool_latency_s', label: 'tool latency (s)', min: 0, max: 60, step: 0.5 },
  { key: 'steps', label: 'steps', min: 2, max: 100, step: 1 },
];

/** The scenario a fitted local run starts from (its fit comes as overrides of every field). */
export const LOCAL_SCENARIO = 'local';
/** The page simulates fewer steps than a scenario's own (in a worker, sim.worker.ts): at most 100, and at most
 *  about 200,000 trajectories per mode (a `steps=` override asks for more). */
export const PAGE_STEPS = 100;
const PAGE_TRAJECTORIES = 200_000;

/** The page → worker message: which scenario with which `key=value` overrides; `id` pairs the answer. */
export interface SimRequest {
  id: number;
  scenario: string;
  set: string;
}
/** The worker → page message: the run, or why there is none. */
export type SimResponse = { id: number; run: SchedulingRun } | { id: number; error: string };

/** The worker's one check of what the page sends (errors name the field). */
export function checkSimRequest(v: unknown): SimRequest {
  if (typeof v !== 'object' || v === null) throw new Error('simulation request: expected an object');
  const o = v as Record<string, unknown>;
  if (typeof o.id !== 'number' || !Number.isInteger(o.id))
    throw new Error('simulation request: id must be an integer');
  if (typeof o.scenario !== 'string') throw new Error('simulation request: scenario must be a string');
  if (typeof o.set !== 'string') throw new Error('simulation request: set must be a string');
  return { id: o.id, scenario: o.scenario, set: o.set };
}

export function parseSimSet(s: string): string[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

export function formatSimSet(overrides: Record<string, string>): string {
  return Object.entries(overrides)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

export interface SchedulingRun {
  scenario: string;
  title: string;
  source: string;
  modes: SimMode[];
  results: SimResult[];
  /** an override the page could not use, with the reason */
  error: string | null;
}

function baseConfig(scenario: string, mode: SimMode): SimConfig {
  const name = scenario === LOCAL_SCENARIO ? 'agentic-8gpu' : scenario;
  const cfg = getScenario(name).config(mode);
  const perStep = cfg.workload.train_batch_size * cfg.workload.rollout_n;
  return { ...cfg, steps: Math.max(3, Math.min(PAGE_STEPS, Math.floor(PAGE_TRAJECTORIES / perStep))) };
}

/** Simulates the scenario in its modes (a local fit: every mode) with the overrides; the shown step traced. */
export function runScheduling(scenario: string, set: string): SchedulingRun {
  const known = scenario === LOCAL_SCENARIO || SCENARIOS.some((s) => s.name === scenario);
  const name = known ? scenario : SCENARIOS[0].name;
  const sc = name === LOCAL_SCENARIO ? null : getScenario(name);
  const modes = sc ? sc.modes : [...SIM_MODES];
  const overrides = parseSimSet(set).filter((o) => !o.startsWith('mode='));
  let error: string | null = known ? null : `unknown scenario '${scenario}': showing ${name}`;
  const results: SimResult[] = [];
  for (const mode of modes) {
    let cfg: SimConfig;
    try {
      cfg = applySimOverrides(baseConfig(name, mode), overrides);
    } catch (e) {
      error = (e as Error).message;
      cfg = baseConfig(name, mode);
    }
    const trace = Math.min(cfg.steps, Math.max(2, Math.ceil(cfg.steps / 2)));
    results.push(simulate({ ...cfg, trace_step: trace }));
  }
  return {
    scenario: name,
    title: sc ? sc.title : 'A local run, fitted to its own timeline',
    source: sc ? sc.source : "this browser: the run's recorded phases and calls (train/simFit.ts)",
    modes,
    results,
    error,
  };
}

/** At most this many rollout lanes are drawn (a 128-GPU step holds thousands of trajectories at once). */
export const MAX_LANES = 48;

/** The traced step as a StepTimeline (ms), for the Timeline view's component. */
export function simStepTimeline(r: SimResult): { timeline: StepTimeline; hiddenTrajectories: number } | null {
  const t = r.trace;
  if (!t || t.t1 <= t.t0) return null;
  const ms = (s: number) => s * 1000;
  const trained = t.step - 1;
  const bars: RolloutBar[] = t.trajectories.map((x, i) => {
    const start = Math.min(...x.calls.map((c) => c.start_s));
    const end = Math.max(...x.calls.map((c) => c.end_s));
    return {
      rolloutId: `g${x.group}-t${i}`,
      dataId: `group ${x.group}`,
      split: 'train',
      state: 'succeeded',
      reward: null,
      submittedMs: ms(start),
      startMs: ms(start),
      endMs: ms(end),
      calls: x.calls.map((c) => ({
        startMs: ms(c.start_s),
        endMs: ms(c.end_s),
        policyVersion: c.version,
        stale: x.trained_version !== null && c.version < x.trained_version,
        httpStatus: 200,
        responseTokens: 0,
      })),
      rejections: [],
    };
  });
  // the step's trained trajectories, then the others running in it
  const lanes = packLanes(
    bars.filter(
      (b, i) => t.trajectories[i].trained_version !== null || (b.endMs > ms(t.t0) && b.startMs < ms(t.t1)),
    ),
  );
  const shown = lanes.slice(0, MAX_LANES);
  const hidden = lanes.slice(MAX_LANES).reduce((a, l) => a + l.length, 0);
  const phaseMs: StepTimeline['stats']['phaseMs'] = {};
  for (const p of t.phases) phaseMs[p.phase] = (phaseMs[p.phase] ?? 0) + ms(p.end_s - p.start_s);
  const inStep = shown.flat();
  // trajectories trained in the step are drawn from their first call (as a real run's carried-over rollouts)
  const t0 = Math.min(ms(t.t0), ...inStep.map((b) => b.startMs));
  return {
    timeline: {
      step: t.step,
      t0,
      t1: ms(t.t1),
      trainedVersion: trained,
      phases: t.phases.map((p) => ({ phase: p.phase, startMs: ms(p.start_s), endMs: ms(p.end_s) })),
      lanes: shown,
      valLanes: [],
      stats: {
        rollouts: inStep.length,
        calls: inStep.reduce((a, b) => a + b.calls.length, 0),
        staleCalls: inStep.reduce((a, b) => a + b.calls.filter((c) => c.stale).length, 0),
        rejections: 0,
        carriedOver: inStep.filter((b) => b.submittedMs < ms(t.t0)).length,
        phaseMs,
      },
    },
    hiddenTrajectories: hidden,
  };
}

/** Mean seconds per step by phase, and the step-weighted utilisation, of a result (what the table shows). */
export function resultRow(r: SimResult) {
  const s = r.summary;
  return {
    mode: s.mode,
    step_s: s.mean_step_s,
    rollout_util: s.utilisation.rollout,
    trainer_util: s.utilisation.trainer,
    pool_util: s.utilisation.pool,
    staleness: s.mean_staleness_worst,
    tokens_per_s: s.generated_tokens_per_s,
    dropped: s.dropped_samples,
  };
}

export const FIELD_KEYS = new Set(SIM_FIELDS.map((f) => f.key));

/**
 * "Simulate this run at scale": a local run's timeline fitted (train/simFit.ts), as overrides of every simulator
 * field, on `gpus` GPUs (each the engine the run measured; half of them the rollout pool in separated modes).
 */
export function localRunOverrides(fitted: SimConfig, gpus = 8): string {
  const o: Record<string, string> = {};
  for (const k of FIELD_KEYS) {
    if (k === 'mode' || k === 'trace_step') continue;
    let v: unknown = fitted;
    for (const part of k.split('.')) v = (v as Record<string, unknown>)[part];
    o[k] = String(v);
  }
  o['cluster.gpus'] = String(gpus);
  o['cluster.rollout_gpus'] = String(Math.max(1, Math.floor(gpus / 2)));
  o.steps = String(PAGE_STEPS);
  return formatSimSet(o);
}
