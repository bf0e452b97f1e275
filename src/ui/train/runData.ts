/**
 * The Train tab's records of a run, as files: `run.json` (what the page knows about the run: name, colour,
 * status, the config, where it came from), metrics in verl's file-logger format, and each step's timeline
 * events as JSONL. Pure: validators name the file, line and field they refuse.
 */

import { isRecord as isObj } from '../../core/wire';
import { resolveTrainConfig, type TrainConfig } from '../../train/config';
import { parseTrainEvent, type TrainEvent } from '../../train/events';
import { parseFileLogger, type StepMetrics } from '../../train/verlLog';

export const RUN_STATUSES = [
  'queued',
  'running',
  'paused',
  'done',
  'stopped',
  'failed',
  'interrupted',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface RunMeta {
  version: 1;
  id: string;
  name: string;
  /** the run's colour in every chart (CSS colour) */
  color: string;
  createdAt: number;
  status: RunStatus;
  config: TrainConfig;
  /** the engine the trainer got last, and why it is not the one asked for */
  backend: 'webgpu' | 'cpu' | null;
  note: string | null;
  /** the reason of a failed or interrupted run */
  error: string | null;
  /** steps finished, and the step of the latest checkpoint (resume point) */
  lastStep: number;
  checkpointStep: number | null;
  /** a run made by "duplicate with one change": the run it copies and the change (`key=value`) */
  parent: { id: string; change: string } | null;
  /** files removed to stay within the storage budget (kept traces, older checkpoints) */
  pruned: number;
  /**
   * a run started by a preset (train/presets.ts): its slug, the variant, and the group id its sibling variants
   * share (one press of Run); null otherwise
   */
  preset: RunPreset | null;
  /** a run read from an exported archive: the file it came from and when (ms since the epoch) */
  imported?: { file: string; at: number };
}

export interface RunPreset {
  slug: string;
  variant: string;
  group: string;
}

/** Checks a run's preset record (run.json, the worker's start message); the error names the field. */
export function parseRunPreset(v: unknown, where: string): RunPreset | null {
  if (v === null || v === undefined) return null;
  if (!isObj(v)) throw new Error(`${where}: preset must be {slug, variant, group} or null`);
  for (const k of ['slug', 'variant', 'group'] as const)
    if (typeof v[k] !== 'string' || !/^[\w.-]+$/.test(v[k] as string))
      throw new Error(`${where}: preset.${k} must be a name of [A-Za-z0-9_.-]`);
  return { slug: v.slug as string, variant: v.variant as string, group: v.group as string };
}

/** Checks a run.json document; the error names the field. */
export function parseRunMeta(v: unknown, where = 'run.json'): RunMeta {
  if (!isObj(v)) throw new Error(`${where}: must be a JSON object`);
  if (v.version !== 1) throw new Error(`${where}: version must be 1, got ${JSON.stringify(v.version)}`);
  const str = (k: string) => {
    if (typeof v[k] !== 'string' || v[k] === '') throw new Error(`${where}: ${k} must be a non-empty string`);
    return v[k] as string;
  };
  const int = (k: string, nullable = false) => {
    if (nullable && v[k] === null) return null;
    if (!Number.isInteger(v[k]) || (v[k] as number) < 0)
      throw new Error(`${where}: ${k} must be a non-negative integer${nullable ? ' or null' : ''}`);
    return v[k] as number;
  };
  const strOrNull = (k: string) => {
    if (v[k] !== null && typeof v[k] !== 'string') throw new Error(`${where}: ${k} must be a string or null`);
    return v[k] as string | null;
  };
  const id = str('id');
  if (!/^[\w.-]+$/.test(id) || /^\.+$/.test(id))
    throw new Error(`${where}: id must be a name of [A-Za-z0-9_.-], not . or ..`);
  if (!(RUN_STATUSES as readonly unknown[]).includes(v.status))
    throw new Error(`${where}: status must be one of ${RUN_STATUSES.join(', ')}`);
  if (v.backend !== null && v.backend !== 'webgpu' && v.backend !== 'cpu')
    throw new Error(`${where}: backend must be webgpu, cpu or null`);
  let config: TrainConfig;
  try {
    config = resolveTrainConfig(v.config);
  } catch (e) {
    throw new Error(`${where}: config: ${(e as Error).message}`);
  }
  let parent: RunMeta['parent'] = null;
  if (v.parent !== null && v.parent !== undefined) {
    const p = v.parent;
    if (!isObj(p) || typeof p.id !== 'string' || typeof p.change !== 'string')
      throw new Error(`${where}: parent must be {id, change} or null`);
    parent = { id: p.id, change: p.change };
  }
  if (typeof v.createdAt !== 'number' || !Number.isFinite(v.createdAt))
    throw new Error(`${where}: createdAt must be a number (ms since the epoch)`);
  return {
    version: 1,
    id,
    name: str('name'),
    color: str('color'),
    createdAt: v.createdAt,
    status: v.status as RunStatus,
    config,
    backend: v.backend as RunMeta['backend'],
    note: strOrNull('note'),
    error: strOrNull('error'),
    lastStep: int('lastStep') as number,
    checkpointStep: int('checkpointStep', true),
    parent,
    pruned: v.pruned === undefined ? 0 : (int('pruned') as number),
    preset: parseRunPreset(v.preset, where),
    ...(v.imported === undefined ? {} : { imported: parseImported(v.imported, where) }),
  };
}

function parseImported(v: unknown, where: string): { file: string; at: number } {
  const o = v as { file?: unknown; at?: unknown } | null;
  if (
    typeof o !== 'object' ||
    o === null ||
    typeof o.file !== 'string' ||
    o.file === '' ||
    typeof o.at !== 'number' ||
    !Number.isFinite(o.at)
  )
    throw new Error(`${where}: imported must be {file, at}`);
  return { file: o.file, at: o.at };
}

/**
 * The preset metrics of a preset's run (train/presetMetrics.ts, computed by the trainer worker from each kept
 * step trace when the step ends), in the same file-logger format as metrics.jsonl, so they outlive the traces
 * the storage budget removes.
 */
export const PRESET_METRICS_FILE = 'preset_metrics.jsonl';

/** Metrics file text with only the steps ≤ `step` (a resumed run continues after its checkpoint). */
export function metricsUpTo(text: string, step: number): string {
  return text
    .split('\n')
    .filter((line) => {
      if (!line.trim()) return false;
      try {
        const s = (JSON.parse(line) as { step?: unknown }).step;
        return typeof s === 'number' && s <= step;
      } catch {
        return false;
      }
    })
    .map((l) => `${l}\n`)
    .join('');
}

export type { StepMetrics };

/** Reads metrics.jsonl: one entry per step (a step logged twice keeps its last line), sorted by step. */
export function readMetrics(text: string): StepMetrics[] {
  const byStep = new Map<number, StepMetrics>();
  for (const m of parseFileLogger(text)) byStep.set(m.step, m);
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

/** Two metric histories merged step by step (the step's keys of `b` added to those of `a`), sorted by step. */
export function mergeMetrics(a: StepMetrics[], b: StepMetrics[]): StepMetrics[] {
  const byStep = new Map<number, StepMetrics>();
  for (const m of a) byStep.set(m.step, { step: m.step, data: { ...m.data } });
  for (const m of b) {
    const have = byStep.get(m.step);
    if (have) Object.assign(have.data, m.data);
    else byStep.set(m.step, { step: m.step, data: { ...m.data } });
  }
  return [...byStep.values()].sort((x, y) => x.step - y.step);
}

export function eventsOfStep(events: TrainEvent[]): string {
  return events.map((e) => `${JSON.stringify(e)}\n`).join('');
}

/** Reads an events file; a bad line is an error naming it. */
export function parseEventsFile(text: string, where: string): TrainEvent[] {
  const out: TrainEvent[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new Error(`${where} line ${i + 1}: not JSON (${(e as Error).message})`);
    }
    try {
      out.push(parseTrainEvent(v));
    } catch (e) {
      throw new Error(`${where} line ${i + 1}: ${(e as Error).message}`);
    }
  });
  return out;
}
