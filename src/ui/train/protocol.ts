/**
 * Messages between the Train tab and its trainer worker (train.worker.ts), defined once and checked at both
 * ends. The worker reports the loop's own TrainEvents (checked with the loop's `parseTrainEvent`) plus what only
 * the page needs: which engine it got and why, a lost WebGPU device, the end.
 */

import { isRecord as isObj } from '../../core/wire';
import { resolveTrainConfig, type TrainConfig } from '../../train/config';
import { parseTrainEvent, type TrainEvent } from '../../train/events';
import { getPreset } from '../../train/presets';
import { parseRunPreset, type RunPreset } from './runData';

export type ToTrainWorker =
  /** run `runId` (its folder runs/<id>/ in OPFS); resume: from its checkpoints/latest */
  /** preset: the run is a preset's variant, so the worker also computes the preset metrics of each kept step */
  | { type: 'start'; runId: string; config: TrainConfig; resume: boolean; preset: RunPreset | null }
  | { type: 'pause' }
  | { type: 'resume' }
  | { type: 'stop' };

export type FromTrainWorker =
  | {
      type: 'ready';
      backend: 'webgpu' | 'cpu';
      /** why the engine is not the one asked for (null when it is) */
      note: string | null;
      /** where the weights came from: the SFT checkpoint, an init, a resumed checkpoint */
      weights: string;
      resumedFromStep: number | null;
    }
  | { type: 'event'; event: TrainEvent }
  /** a preset run's `preset/*` metrics of one step (train/presetMetrics.ts), from the step's kept trace */
  | { type: 'preset_metrics'; step: number; metrics: Record<string, number | null> }
  | { type: 'device_lost'; message: string }
  | { type: 'ended'; reason: 'done' | 'stopped' | 'error'; error: string | null };

export function parseToTrainWorker(v: unknown): ToTrainWorker {
  if (!isObj(v)) throw new Error('trainer worker: message must be an object');
  switch (v.type) {
    case 'start': {
      if (typeof v.runId !== 'string' || !/^[\w.-]+$/.test(v.runId) || /^\.+$/.test(v.runId))
        throw new Error('trainer worker: start.runId must be a name of [A-Za-z0-9_.-], not . or ..');
      if (typeof v.resume !== 'boolean')
        throw new Error('trainer worker: start.resume must be true or false');
      let config: TrainConfig;
      try {
        config = resolveTrainConfig(v.config);
      } catch (e) {
        throw new Error(`trainer worker: start.config: ${(e as Error).message}`);
      }
      const preset = parseRunPreset(v.preset, 'trainer worker: start');
      if (preset) {
        try {
          getPreset(preset.slug);
        } catch (e) {
          throw new Error(`trainer worker: start.preset: ${(e as Error).message}`);
        }
      }
      return { type: 'start', runId: v.runId, config, resume: v.resume, preset };
    }
    case 'pause':
    case 'resume':
    case 'stop':
      return { type: v.type };
    default:
      throw new Error(`trainer worker: unknown message type ${JSON.stringify(v.type)}`);
  }
}

export function parseFromTrainWorker(v: unknown): FromTrainWorker {
  if (!isObj(v)) throw new Error('trainer worker reply must be an object');
  switch (v.type) {
    case 'ready':
      if (v.backend !== 'webgpu' && v.backend !== 'cpu')
        throw new Error("trainer worker reply 'ready': backend must be 'webgpu' or 'cpu'");
      if (v.note !== null && typeof v.note !== 'string')
        throw new Error("trainer worker reply 'ready': note must be a string or null");
      if (typeof v.weights !== 'string')
        throw new Error("trainer worker reply 'ready': weights must be a string");
      if (v.resumedFromStep !== null && !Number.isInteger(v.resumedFromStep))
        throw new Error("trainer worker reply 'ready': resumedFromStep must be an integer or null");
      return v as FromTrainWorker;
    case 'event':
      return { type: 'event', event: parseTrainEvent(v.event) };
    case 'preset_metrics': {
      if (!Number.isInteger(v.step) || (v.step as number) < 1)
        throw new Error("trainer worker reply 'preset_metrics': step must be an integer ≥ 1");
      if (!isObj(v.metrics))
        throw new Error("trainer worker reply 'preset_metrics': metrics must be an object");
      const metrics: Record<string, number | null> = {};
      for (const [k, x] of Object.entries(v.metrics)) {
        if (x !== null && (typeof x !== 'number' || !Number.isFinite(x)))
          throw new Error(`trainer worker reply 'preset_metrics': ${k} must be a finite number or null`);
        metrics[k] = x;
      }
      return { type: 'preset_metrics', step: v.step as number, metrics };
    }
    case 'device_lost':
      if (typeof v.message !== 'string')
        throw new Error("trainer worker reply 'device_lost': message must be a string");
      return { type: 'device_lost', message: v.message };
    case 'ended':
      if (v.reason !== 'done' && v.reason !== 'stopped' && v.reason !== 'error')
        throw new Error("trainer worker reply 'ended': reason must be done, stopped or error");
      if (v.error !== null && typeof v.error !== 'string')
        throw new Error("trainer worker reply 'ended': error must be a string or null");
      return v as FromTrainWorker;
    default:
      throw new Error(`trainer worker reply: unknown type ${JSON.stringify(v.type)}`);
  }
}
