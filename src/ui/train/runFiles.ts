/**
 * The Train tab's runs in the origin-private file system: one folder per run, `runs/<id>/`, holding what the
 * loop writes through its TrainStorage (`config.json`, `metrics.jsonl`, `traces/step_NNNNNN.jsonl`,
 * `checkpoints/…`), the step timelines the trainer worker writes (`events/step_NNNNNN.jsonl`) and the page's
 * record of the run (`run.json`). Used from the page and from the trainer worker (OPFS is shared by both).
 */
import { checkStoragePath, opfsStorage, type TrainStorage } from '../../train/storage';

export const RUNS_DIR = 'runs';

export const runDir = (id: string) => `${RUNS_DIR}/${id}`;

export function runStorage(id: string): TrainStorage {
  return opfsStorage(runDir(id));
}

export const pad6 = (n: number) => String(n).padStart(6, '0');
export const tracePath = (step: number) => `traces/step_${pad6(step)}.jsonl`;
export const eventsPath = (step: number) => `events/step_${pad6(step)}.jsonl`;
/** The step a `…/step_NNNNNN.*` file is of, or null. */
export function stepOfPath(path: string): number | null {
  const m = /step_(\d+)\.[a-z]+$/.exec(path);
  return m ? Number(m[1]) : null;
}

async function root(): Promise<FileSystemDirectoryHandle> {
  return navigator.storage.getDirectory();
}

type Entries = { entries(): AsyncIterable<[string, FileSystemHandle]> };

async function dirHandle(path: string, create = false): Promise<FileSystemDirectoryHandle | null> {
  try {
    let d = await root();
    for (const p of path.split('/')) d = await d.getDirectoryHandle(p, { create });
    return d;
  } catch {
    return null;
  }
}

/** Ids of the run folders, sorted. */
export async function listRunIds(): Promise<string[]> {
  const d = await dirHandle(RUNS_DIR);
  if (!d) return [];
  const out: string[] = [];
  for await (const [name, h] of (d as unknown as Entries).entries())
    if (h.kind === 'directory') out.push(name);
  return out.sort();
}

/** Every file of a run with its size in bytes (paths relative to the run folder). */
export async function runFiles(id: string): Promise<{ path: string; size: number }[]> {
  const d = await dirHandle(runDir(id));
  if (!d) return [];
  const out: { path: string; size: number }[] = [];
  const walk = async (dir: FileSystemDirectoryHandle, prefix: string) => {
    for await (const [name, h] of (dir as unknown as Entries).entries()) {
      const p = prefix ? `${prefix}/${name}` : name;
      if (h.kind === 'directory') await walk(h as FileSystemDirectoryHandle, p);
      else
        try {
          out.push({ path: p, size: (await (h as FileSystemFileHandle).getFile()).size });
        } catch (e) {
          // removed (pruned, rolled back) between listing and reading
          if ((e as DOMException).name !== 'NotFoundError') throw e;
        }
    }
  };
  await walk(d, '');
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** Removes one file of a run (a missing file is not an error). */
export async function removeRunFile(id: string, path: string): Promise<void> {
  checkStoragePath(path);
  const parts = path.split('/');
  const d = await dirHandle([runDir(id), ...parts.slice(0, -1)].join('/'));
  if (!d) return;
  try {
    await d.removeEntry(parts[parts.length - 1]);
  } catch (e) {
    if ((e as DOMException).name !== 'NotFoundError') throw e;
  }
}

/** Removes a run's folder and everything in it. */
export async function removeRun(id: string): Promise<void> {
  checkStoragePath(id);
  const d = await dirHandle(RUNS_DIR);
  if (!d) return;
  try {
    await d.removeEntry(id, { recursive: true });
  } catch (e) {
    if ((e as DOMException).name !== 'NotFoundError') throw e;
  }
}

export async function readRunText(id: string, path: string): Promise<string | null> {
  const b = await runStorage(id).readFile(path);
  return b ? new TextDecoder().decode(b) : null;
}
