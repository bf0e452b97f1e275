/**
 * What a run reports while it runs: one event type, defined once, JSON-only (no typed arrays), with a
 * validator for the boundary it crosses (a trainer worker posting to the page, a gateway streaming SSE).
 * Timestamps are ms since the epoch (the run's clock), so phases, rollouts and calls draw on one timeline.
 */
import { isRecord, list, num, numOrNull, oneOf, record, str } from '../core/wire';
import { PHASE_NAMES, type PhaseName } from './step';

export interface CallSummary {
  startMs: number;
  endMs: number;
  /** the policy version that served the call (null when the engine reported none) */
  policyVersion: number | null;
  httpStatus: number;
  promptTokens: number;
  responseTokens: number;
}

export type TrainEvent =
  | { type: 'run_start'; atMs: number; backend: string; resumedFromStep: number; totalSteps: number }
  | { type: 'phase'; step: number; phase: PhaseName; startMs: number; endMs: number }
  | {
      type: 'rollout';
      step: number;
      split: 'train' | 'val';
      rolloutId: string;
      dataId: string;
      state: 'succeeded' | 'failed';
      reward: number | null;
      startMs: number;
      endMs: number;
      calls: CallSummary[];
      error?: string;
    }
  | {
      type: 'rejections';
      step: number;
      /** 429s served while the proxy was paused */
      items: { rolloutId: string; atMs: number }[];
    }
  | { type: 'step'; step: number; policyVersion: number; metrics: Record<string, number | null> }
  | { type: 'val'; step: number; metrics: Record<string, number | null> }
  | { type: 'trace'; step: number; path: string }
  | { type: 'checkpoint'; step: number; path: string }
  | {
      type: 'progress';
      step: number;
      totalSteps: number;
      rolloutsDone: number;
      rolloutsTotal: number;
      genTokensPerS: number | null;
      etaS: number | null;
    }
  | { type: 'log'; level: 'info' | 'warn'; message: string }
  | { type: 'run_end'; atMs: number; reason: 'done' | 'stopped' | 'error'; error?: string };

function metricsOf(v: unknown, where: string): Record<string, number | null> {
  if (!isRecord(v)) throw new Error(`${where} must be an object`);
  for (const [k, x] of Object.entries(v))
    if (x !== null && (typeof x !== 'number' || !Number.isFinite(x)))
      throw new Error(`${where}['${k}'] must be a finite number or null`);
  return v as Record<string, number | null>;
}

/** Validates a TrainEvent received over a boundary; the error names the field. */
export function parseTrainEvent(v: unknown): TrainEvent {
  if (!isRecord(v)) throw new Error('train event must be an object');
  const t = v.type;
  const w = `train event '${String(t)}'`;
  switch (t) {
    case 'run_start':
      num(v, 'atMs', w);
      str(v, 'backend', w);
      num(v, 'resumedFromStep', w);
      num(v, 'totalSteps', w);
      return v as TrainEvent;
    case 'phase':
      num(v, 'step', w);
      oneOf(v, 'phase', w, PHASE_NAMES);
      num(v, 'startMs', w);
      num(v, 'endMs', w);
      return v as TrainEvent;
    case 'rollout': {
      num(v, 'step', w);
      oneOf(v, 'split', w, ['train', 'val']);
      str(v, 'rolloutId', w);
      str(v, 'dataId', w);
      oneOf(v, 'state', w, ['succeeded', 'failed']);
      numOrNull(v, 'reward', w);
      num(v, 'startMs', w);
      num(v, 'endMs', w);
      list(v, 'calls', w).forEach((x, i) => {
        const cw = `${w}.calls[${i}]`;
        const c = record(x, cw);
        num(c, 'startMs', cw);
        num(c, 'endMs', cw);
        numOrNull(c, 'policyVersion', cw);
        num(c, 'httpStatus', cw);
        num(c, 'promptTokens', cw);
        num(c, 'responseTokens', cw);
      });
      return v as TrainEvent;
    }
    case 'rejections':
      num(v, 'step', w);
      list(v, 'items', w);
      return v as TrainEvent;
    case 'step':
      num(v, 'step', w);
      num(v, 'policyVersion', w);
      metricsOf(v.metrics, `${w}.metrics`);
      return v as TrainEvent;
    case 'val':
      num(v, 'step', w);
      metricsOf(v.metrics, `${w}.metrics`);
      return v as TrainEvent;
    case 'trace':
    case 'checkpoint':
      num(v, 'step', w);
      str(v, 'path', w);
      return v as TrainEvent;
    case 'progress':
      num(v, 'step', w);
      num(v, 'totalSteps', w);
      num(v, 'rolloutsDone', w);
      num(v, 'rolloutsTotal', w);
      numOrNull(v, 'genTokensPerS', w);
      numOrNull(v, 'etaS', w);
      return v as TrainEvent;
    case 'log':
      oneOf(v, 'level', w, ['info', 'warn']);
      str(v, 'message', w);
      return v as TrainEvent;
    case 'run_end':
      num(v, 'atMs', w);
      oneOf(v, 'reason', w, ['done', 'stopped', 'error']);
      return v as TrainEvent;
    default:
      throw new Error(`train event: unknown type ${JSON.stringify(t)}`);
  }
}
