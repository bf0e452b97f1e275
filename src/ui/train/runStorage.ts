/**
 * The Train tab's storage side: each run's record (`run.json`, written in order per run), reading the runs, their
 * metrics, step events and kept batches back, the storage budget (localStorage) and pruning to it. No state of
 * its own beyond the per-run write chains; the store (trainStore.ts) holds what the page shows.
 */
import { parseTraceText } from '../../core/trace/io';
import type { Rollout } from '../../core/trace/types';
import type { TrainEvent } from '../../train/events';
import { archivedPaths } from './runArchive';
import {
  mergeMetrics,
  PRESET_METRICS_FILE,
  parseEventsFile,
  parseRunMeta,
  type RunMeta,
  readMetrics,
  type StepMetrics,
} from './runData';
import {
  listRunIds,
  readRunText,
  removeRunFile,
  runFiles,
  runStorage,
  stepOfPath,
  tracePath,
} from './runFiles';

const BUDGET_KEY = 'harness-lab.train.budgetMb';
const DEFAULT_BUDGET_MB = 256;

export const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The storage budget in MB the page was given last (the default when none, or unreadable). */
export function readBudget(): number {
  try {
    const v = Number(localStorage.getItem(BUDGET_KEY));
    return Number.isFinite(v) && v > 0 ? v : DEFAULT_BUDGET_MB;
  } catch {
    return DEFAULT_BUDGET_MB;
  }
}

export function writeBudget(mb: number): void {
  try {
    localStorage.setItem(BUDGET_KEY, String(mb));
  } catch {
    // private mode: the budget holds for this page only
  }
}

const writes = new Map<string, Promise<void>>();

/** Writes run.json after the run's earlier writes (one chain per run). */
export function saveMeta(meta: RunMeta): Promise<void> {
  const prev = writes.get(meta.id) ?? Promise.resolve();
  const next = prev
    .catch(() => {})
    .then(() => runStorage(meta.id).writeFile('run.json', `${JSON.stringify(meta, null, 2)}\n`));
  writes.set(meta.id, next);
  return next;
}

/** Resolves when the run's pending record writes are done (failed or not). */
export async function settled(id: string): Promise<void> {
  await writes.get(id)?.catch(() => {});
}

/**
 * Every run's record, oldest first, and the records that could not be read; a run that was training when the page
 * went away (any but those in `liveIds`, the runs training now) is marked interrupted, to resume from its
 * checkpoint when asked.
 */
export async function readRuns(
  liveIds: ReadonlySet<string>,
): Promise<{ runs: RunMeta[]; problems: string[] }> {
  const runs: RunMeta[] = [];
  const problems: string[] = [];
  for (const id of await listRunIds()) {
    const text = await readRunText(id, 'run.json');
    if (!text) continue; // a folder another part of the page made (the loop's tests) is not a run
    try {
      const m = parseRunMeta(JSON.parse(text), `runs/${id}/run.json`);
      if (!liveIds.has(m.id) && (m.status === 'running' || m.status === 'paused' || m.status === 'queued')) {
        m.status = 'interrupted';
        m.error = m.error ?? 'the page was closed or reloaded while the run was training';
        await saveMeta(m);
      }
      runs.push(m);
    } catch (e) {
      problems.push(message(e));
    }
  }
  runs.sort((a, b) => a.createdAt - b.createdAt);
  return { runs, problems };
}

/** A run's metrics per step (the loop's and, for a preset run, the preset analysis's merged). */
export async function readRunMetrics(id: string): Promise<StepMetrics[]> {
  const text = await readRunText(id, 'metrics.jsonl');
  const presetText = await readRunText(id, PRESET_METRICS_FILE);
  return mergeMetrics(text ? readMetrics(text) : [], presetText ? readMetrics(presetText) : []);
}

/** A run's stored step events (events/step_NNNNNN.jsonl, in file order). */
export async function readRunEvents(id: string): Promise<TrainEvent[]> {
  const files = (await runFiles(id)).filter((f) => /^events\/step_\d+\.jsonl$/.test(f.path));
  const out: TrainEvent[] = [];
  for (const f of files) {
    const text = await readRunText(id, f.path);
    if (text) out.push(...parseEventsFile(text, `runs/${id}/${f.path}`));
  }
  return out;
}

/** A step's kept batch; a clear error when the step has none. */
export async function readStepBatch(id: string, step: number, pruned: number): Promise<Rollout[]> {
  const text = await readRunText(id, tracePath(step));
  if (text === null)
    throw new Error(
      `step ${step} has no kept trace (${pruned > 0 ? 'removed to stay within the storage budget, or ' : ''}not written yet)`,
    );
  return parseTraceText(text).rollouts;
}

/** A step's kept trace as stored (null when the step has none). */
export function readStepBytes(id: string, step: number): Promise<Uint8Array | null> {
  return runStorage(id).readFile(tracePath(step));
}

/** Every file of the run but its record removed (a run restarted from step 0 in its own folder). */
export async function clearRunFiles(id: string): Promise<void> {
  for (const f of await runFiles(id)) if (f.path !== 'run.json') await removeRunFile(id, f.path);
}

/** The files a run's archive holds (runArchive.archivedPaths: the latest checkpoint only), by path. */
export async function readArchivedFiles(id: string): Promise<Map<string, Uint8Array>> {
  const files = await runFiles(id);
  const latest = (await readRunText(id, 'checkpoints/latest'))?.trim() ?? null;
  const out = new Map<string, Uint8Array>();
  const storage = runStorage(id);
  for (const p of archivedPaths(
    files.map((f) => f.path),
    latest,
  )) {
    const b = await storage.readFile(p);
    if (b) out.set(p, b);
  }
  return out;
}

/** An imported archive's files written into the run's folder (its record is written by saveMeta). */
export async function writeRunFiles(id: string, files: ReadonlyMap<string, Uint8Array>): Promise<void> {
  const storage = runStorage(id);
  for (const [p, b] of files) if (p !== 'run.json') await storage.writeFile(p, b);
}

/** Bytes a run takes in storage. */
export async function runBytes(id: string): Promise<number> {
  return (await runFiles(id)).reduce((n, f) => n + f.size, 0);
}

/** A file pruning may remove: an older checkpoint (kind 0) or a kept step trace (kind 1). */
export interface PruneCandidate {
  id: string;
  path: string;
  size: number;
  step: number;
  kind: 0 | 1;
  /** the run's creation time */
  at: number;
}

/**
 * The files to remove to bring `total` bytes within `budget`: older checkpoints first, then kept traces, each
 * oldest step first, then oldest run first; none when within the budget.
 */
export function prunePlan(
  candidates: readonly PruneCandidate[],
  total: number,
  budget: number,
): PruneCandidate[] {
  if (total <= budget) return [];
  const order = [...candidates].sort((a, b) => a.kind - b.kind || a.step - b.step || a.at - b.at);
  const out: PruneCandidate[] = [];
  for (const f of order) {
    if (total <= budget) break;
    out.push(f);
    total -= f.size;
  }
  return out;
}

/**
 * Keeps the runs within `budgetMb`: removes older checkpoints (never a run's latest, which it resumes from),
 * then kept step traces, oldest first across runs (never a training run's newest step). Returns the number of
 * files removed per run.
 */
export async function prune(
  runs: readonly RunMeta[],
  liveIds: ReadonlySet<string>,
  budgetMb: number,
): Promise<Map<string, number>> {
  const candidates: PruneCandidate[] = [];
  let total = 0;
  for (const r of runs) {
    const files = await runFiles(r.id);
    const latest = (await readRunText(r.id, 'checkpoints/latest'))?.trim() ?? null;
    for (const f of files) {
      total += f.size;
      const step = stepOfPath(f.path);
      if (step === null) continue;
      const liveNewest = liveIds.has(r.id) && step >= r.lastStep;
      if (f.path.startsWith('checkpoints/') && f.path !== latest && !liveNewest)
        candidates.push({ id: r.id, path: f.path, size: f.size, step, kind: 0, at: r.createdAt });
      else if (f.path.startsWith('traces/') && !liveNewest)
        candidates.push({ id: r.id, path: f.path, size: f.size, step, kind: 1, at: r.createdAt });
    }
  }
  const removed = new Map<string, number>();
  for (const f of prunePlan(candidates, total, budgetMb * 1024 * 1024)) {
    await removeRunFile(f.id, f.path);
    removed.set(f.id, (removed.get(f.id) ?? 0) + 1);
  }
  return removed;
}
