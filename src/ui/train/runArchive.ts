/**
 * A run as one file: a zip (fflate) of its folder — `run.json`, `config.json`, `metrics.jsonl` (verl's
 * file-logger format; a preset run's `preset_metrics.jsonl` too), the kept step traces `traces/step_NNNNNN.jsonl`, the step timelines
 * `events/step_NNNNNN.jsonl`, and the latest checkpoint (`checkpoints/latest` and the file it names). Reading
 * one checks every file with the validator of its kind before anything is written; an error names the file
 * (and line).
 */
import { unzipSync, zipSync } from 'fflate';
import { parseTraceText } from '../../core/trace/io';
import { decodeTrainCheckpoint } from '../../train/checkpoint';
import { resolveTrainConfig } from '../../train/config';
import { checkStoragePath } from '../../train/storage';
import { PRESET_METRICS_FILE, parseEventsFile, parseRunMeta, type RunMeta, readMetrics } from './runData';

const dec = new TextDecoder();

/** The files of a run that go into its archive (paths relative to the run folder). */
export function archivedPaths(paths: string[], latestCheckpoint: string | null): string[] {
  return paths.filter(
    (p) =>
      p === 'run.json' ||
      p === 'config.json' ||
      p === 'metrics.jsonl' ||
      p === PRESET_METRICS_FILE ||
      /^(traces|events)\/step_\d+\.jsonl$/.test(p) ||
      (latestCheckpoint !== null && (p === 'checkpoints/latest' || p === latestCheckpoint)),
  );
}

export function makeRunArchive(files: Map<string, Uint8Array>): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (const [p, b] of files) entries[p] = b;
  return zipSync(entries, { level: 6 });
}

export interface ReadArchive {
  meta: RunMeta;
  files: Map<string, Uint8Array>;
}

/** Unpacks and checks a run archive. */
export function readRunArchive(bytes: Uint8Array, name = 'archive'): ReadArchive {
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(bytes);
  } catch (e) {
    throw new Error(`${name}: not a zip archive (${(e as Error).message})`);
  }
  const files = new Map<string, Uint8Array>();
  for (const [p, b] of Object.entries(entries)) {
    if (p.endsWith('/')) continue; // folder entries
    try {
      checkStoragePath(p);
    } catch {
      throw new Error(`${name}: ${p}: not a relative path of [A-Za-z0-9_.-] names`);
    }
    files.set(p, b);
  }
  const runJson = files.get('run.json');
  if (!runJson) throw new Error(`${name}: run.json is missing (not a Harness Lab run archive)`);
  let metaRaw: unknown;
  try {
    metaRaw = JSON.parse(dec.decode(runJson));
  } catch (e) {
    throw new Error(`${name}: run.json is not JSON (${(e as Error).message})`);
  }
  const meta = parseRunMeta(metaRaw, `${name}: run.json`);
  const latest = files.get('checkpoints/latest');
  const latestPath = latest ? dec.decode(latest).trim() : null;
  for (const [p, b] of files) {
    const where = `${name}: ${p}`;
    if (p === 'run.json') continue;
    if (p === 'config.json') {
      let raw: unknown;
      try {
        raw = JSON.parse(dec.decode(b));
      } catch (e) {
        throw new Error(`${where}: not JSON (${(e as Error).message})`);
      }
      try {
        resolveTrainConfig(raw);
      } catch (e) {
        throw new Error(`${where}: not a run config: ${(e as Error).message}`);
      }
    } else if (p === 'metrics.jsonl' || p === PRESET_METRICS_FILE) {
      try {
        readMetrics(dec.decode(b));
      } catch (e) {
        throw new Error(`${where}: ${(e as Error).message}`);
      }
    } else if (/^traces\/step_\d+\.jsonl$/.test(p)) {
      const parsed = parseTraceText(dec.decode(b));
      const bad = parsed.issues.find((i) => i.severity !== 'warning');
      if (bad) throw new Error(`${where} ${bad.where}${bad.field ? ` ${bad.field}` : ''}: ${bad.message}`);
    } else if (/^events\/step_\d+\.jsonl$/.test(p)) parseEventsFile(dec.decode(b), where);
    else if (p === 'checkpoints/latest') {
      if (!latestPath || !/^checkpoints\/step_\d+\.safetensors$/.test(latestPath))
        throw new Error(
          `${where}: names ${latestPath || 'nothing'}, not a checkpoint (checkpoints/step_N.safetensors)`,
        );
      if (!files.has(latestPath)) throw new Error(`${where}: names ${latestPath}, which the archive lacks`);
    } else if (p === latestPath) {
      try {
        decodeTrainCheckpoint(b, p);
      } catch (e) {
        throw new Error(`${name}: ${(e as Error).message}`);
      }
    } else throw new Error(`${where}: not a file a run folder has`);
  }
  return { meta, files };
}
