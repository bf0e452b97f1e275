/**
 * One step of a run drawn to time (the backend-scheduling view): the trainer's phases on one lane, and the
 * step's rollouts packed onto worker lanes, each rollout with its calls (coloured by the policy version that
 * served them, stale ones marked), the gaps between calls (the harness's own work, or a wait after a 429) and
 * the 429s the paused proxy served. Built from the loop's TrainEvents only.
 *
 * The events do not name the worker that ran a rollout, and a rollout's own start is when it was handed to the
 * worker pool (it may wait there for a free worker), so a rollout is taken to run from its first call and is
 * packed into lanes by that interval (on the first lane free when it starts): the pool runs at most
 * `lab.workers` rollouts at a time, so this gives about that many lanes — worker slots, not worker identities.
 * The wait in the pool is kept (`submittedMs`).
 */
import type { TrainEvent } from '../../train/events';
import type { PhaseName } from '../../train/step';

type RolloutEvent = Extract<TrainEvent, { type: 'rollout' }>;

export interface CallBar {
  startMs: number;
  endMs: number;
  policyVersion: number | null;
  /** served by an older policy version than the one this step trained from */
  stale: boolean;
  httpStatus: number;
  responseTokens: number;
}

export interface RolloutBar {
  rolloutId: string;
  dataId: string;
  split: 'train' | 'val';
  state: 'succeeded' | 'failed';
  reward: number | null;
  /** when the rollout was handed to the worker pool */
  submittedMs: number;
  /** when it started running: its first call (or, without calls, when it was handed over) */
  startMs: number;
  endMs: number;
  calls: CallBar[];
  /** times of the 429s this rollout got while the proxy was paused */
  rejections: number[];
  error?: string;
}

export interface PhaseBar {
  /** a loop phase, or a simulated step's (core/sim: `other` is the trainer's remaining work) */
  phase: PhaseName | 'other';
  startMs: number;
  endMs: number;
}

export interface StepTimeline {
  step: number;
  t0: number;
  t1: number;
  /** the policy version this step's update started from */
  trainedVersion: number;
  phases: PhaseBar[];
  lanes: RolloutBar[][];
  valLanes: RolloutBar[][];
  stats: {
    rollouts: number;
    calls: number;
    staleCalls: number;
    rejections: number;
    /** rollouts that started before this step's generation (carried over in async mode) */
    carriedOver: number;
    /** ms per phase */
    phaseMs: Partial<Record<PhaseName | 'other', number>>;
  };
}

/** Interval packing: each bar on the first lane whose last bar ended by its start. */
export function packLanes<T extends { startMs: number; endMs: number }>(bars: T[]): T[][] {
  const lanes: T[][] = [];
  const ends: number[] = [];
  for (const b of [...bars].sort((a, c) => a.startMs - c.startMs || a.endMs - c.endMs)) {
    let i = ends.findIndex((e) => e <= b.startMs);
    if (i < 0) {
      i = lanes.length;
      lanes.push([]);
      ends.push(Number.NEGATIVE_INFINITY);
    }
    lanes[i].push(b);
    ends[i] = b.endMs;
  }
  return lanes;
}

export function stepTimeline(step: number, events: TrainEvent[]): StepTimeline | null {
  const mine = events.filter((e) => 'step' in e && e.step === step);
  const stepEvent = mine.find((e) => e.type === 'step') as Extract<TrainEvent, { type: 'step' }> | undefined;
  const trainedVersion = stepEvent ? stepEvent.policyVersion - 1 : Math.max(0, step - 1);
  const phases: PhaseBar[] = [];
  const rejections = new Map<string, number[]>();
  const rollouts: RolloutEvent[] = [];
  for (const e of mine) {
    if (e.type === 'phase') phases.push({ phase: e.phase, startMs: e.startMs, endMs: e.endMs });
    else if (e.type === 'rollout') rollouts.push(e);
    else if (e.type === 'rejections')
      for (const r of e.items) rejections.set(r.rolloutId, [...(rejections.get(r.rolloutId) ?? []), r.atMs]);
  }
  if (phases.length === 0 && rollouts.length === 0) return null;
  const bars: RolloutBar[] = rollouts.map((r) => ({
    rolloutId: r.rolloutId,
    dataId: r.dataId,
    split: r.split,
    state: r.state,
    reward: r.reward,
    submittedMs: r.startMs,
    startMs: r.calls.length ? Math.max(r.startMs, Math.min(...r.calls.map((c) => c.startMs))) : r.startMs,
    endMs: Math.max(r.endMs, r.startMs),
    calls: r.calls.map((c) => ({
      startMs: c.startMs,
      endMs: c.endMs,
      policyVersion: c.policyVersion,
      stale: r.split === 'train' && c.policyVersion !== null && c.policyVersion < trainedVersion,
      httpStatus: c.httpStatus,
      responseTokens: c.responseTokens,
    })),
    rejections: rejections.get(r.rolloutId) ?? [],
    ...(r.error ? { error: r.error } : {}),
  }));
  const times = [
    ...phases.flatMap((p) => [p.startMs, p.endMs]),
    ...bars.flatMap((b) => [b.submittedMs, b.endMs]),
  ].filter((t) => t > 0);
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const gen = phases.find((p) => p.phase === 'gen');
  const train = bars.filter((b) => b.split === 'train');
  const phaseMs: Partial<Record<PhaseName | 'other', number>> = {};
  for (const p of phases) phaseMs[p.phase] = (phaseMs[p.phase] ?? 0) + (p.endMs - p.startMs);
  return {
    step,
    t0,
    t1,
    trainedVersion,
    phases,
    lanes: packLanes(train),
    valLanes: packLanes(bars.filter((b) => b.split === 'val')),
    stats: {
      rollouts: train.length,
      calls: train.reduce((n, b) => n + b.calls.length, 0),
      staleCalls: train.reduce((n, b) => n + b.calls.filter((c) => c.stale).length, 0),
      rejections: train.reduce((n, b) => n + b.rejections.length, 0),
      carriedOver: gen ? train.filter((b) => b.submittedMs < gen.startMs).length : 0,
      phaseMs,
    },
  };
}
