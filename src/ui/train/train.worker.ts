/// <reference lib="webworker" />
/**
 * The Train tab's trainer: a dedicated module worker that owns the policy engine (WebGPU where a hardware
 * adapter exists or `lab.backend` asks for it, else the CPU engine; a Hugging Face folder too), the in-process proxies and the training
 * loop (`createLocalRun`, unchanged from Node), with the harness agents in their own Web Workers
 * (`spawnBrowserHarnessWorker`). It writes the run's files to OPFS (`runs/<id>/`) and posts every TrainEvent to
 * the page, which only renders. One worker per run; the page terminates it when the run ends.
 */

import type { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { parseJsonlTrace } from '../../core/trace/io';
import { formatIssue } from '../../core/trace/types';
import { createGpuContext, type GpuContext, type Unavailable } from '../../engine/gpu/device';
import { readLlamaFolder } from '../../engine/llama/hfFolder';
import { spawnBrowserHarnessWorker } from '../../harness/browserWorker';
import {
  type BroughtRun,
  broughtModel,
  runAdapterLimits,
  runCpuLimits,
  runTarget,
} from '../../train/broughtModel';
import { decodeTrainCheckpoint, trainCheckpointConfig } from '../../train/checkpoint';
import type { TrainConfig } from '../../train/config';
import type { TrainEvent } from '../../train/events';
import { launchRun, RunLaunchError } from '../../train/launch';
import type { LocalRun } from '../../train/local';
import { presetStepMetrics } from '../../train/presetMetrics';
import type { TrainStorage } from '../../train/storage';
import { fileLoggerLine } from '../../train/verlLog';
import { loadPolicyTokenizer } from '../lab/tokenizerLoader';
import { pageModelFolder, pageModelOf } from '../models/shippedModels';
import { PAGE_ADAPTER_LABEL, PAGE_CPU_LIMITS } from './modelFit';
import { type FromTrainWorker, parseToTrainWorker, type ToTrainWorker } from './protocol';
import { eventsOfStep, metricsUpTo, PRESET_METRICS_FILE } from './runData';
import { eventsPath, removeRunFile, runFiles, runStorage, stepOfPath } from './runFiles';

const scope = self as unknown as DedicatedWorkerGlobalScope;
const post = (m: FromTrainWorker) => scope.postMessage(m);
const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

let local: LocalRun | null = null;
let started = false;
let ending = false;

scope.onmessage = (e: MessageEvent) => {
  let m: ToTrainWorker;
  try {
    m = parseToTrainWorker(e.data);
  } catch (err) {
    // before a run, nothing can start from it; during one, the run goes on and the message is refused
    if (!started) post({ type: 'ended', reason: 'error', error: message(err) });
    else post({ type: 'event', event: { type: 'log', level: 'warn', message: `refused: ${message(err)}` } });
    return;
  }
  if (m.type === 'start') {
    if (started) {
      post({
        type: 'event',
        event: { type: 'log', level: 'warn', message: 'refused: this worker already runs a start' },
      });
      return;
    }
    started = true;
    void start(m).catch((err) => finish('error', message(err)));
  } else if (m.type === 'pause') local?.run.pause();
  else if (m.type === 'resume') local?.run.resume();
  else if (m.type === 'stop') {
    if (local) local.run.stop();
    else finish('stopped', null);
  }
};

let cleanup: () => void = () => {};
function finish(reason: 'done' | 'stopped' | 'error', error: string | null) {
  if (ending) return;
  ending = true;
  try {
    cleanup();
  } finally {
    post({ type: 'ended', reason, error });
  }
}

/** Fetches a file the app serves (the shipped SFT checkpoints), relative to its base URL. */
async function served(path: string): Promise<Uint8Array> {
  const url = new URL(`${import.meta.env.BASE_URL}${path}`, scope.location.origin);
  const res = await fetch(url);
  if (!res.ok)
    throw new Error(
      `${path}: HTTP ${res.status}${path.startsWith('checkpoints/') ? ' (no shipped SFT checkpoint for this harness: set actor_rollout_ref.model.path to init)' : ''}`,
    );
  return new Uint8Array(await res.arrayBuffer());
}

/** A resumed run continues from its checkpoint: what was written after it (metrics, timelines, traces) goes. */
async function rollBackTo(id: string, storage: TrainStorage, step: number): Promise<void> {
  for (const file of ['metrics.jsonl', PRESET_METRICS_FILE]) {
    const metrics = await storage.readFile(file);
    if (metrics) await storage.writeFile(file, metricsUpTo(new TextDecoder().decode(metrics), step));
  }
  for (const f of await runFiles(id)) {
    const s = stepOfPath(f.path);
    if (s !== null && s > step && /^(traces|events|checkpoints)\//.test(f.path))
      await removeRunFile(id, f.path);
  }
}

/** The bytes of the run's latest checkpoint (checkpoints/latest names it). */
async function latestCheckpoint(storage: TrainStorage): Promise<{ bytes: Uint8Array; file: string }> {
  const latest = await storage.readFile('checkpoints/latest');
  if (!latest) throw new Error('the run has no checkpoint to resume from (checkpoints/latest is missing)');
  const file = new TextDecoder().decode(latest).trim();
  const bytes = await storage.readFile(file);
  if (!bytes) throw new Error(`checkpoints/latest names ${file}, which is missing`);
  return { bytes, file };
}

/**
 * lab.backend webgpu / auto for a folder run: this worker's WebGPU device (as the GPT-2 policy gets it,
 * train/launch.ts: auto takes a hardware adapter only, webgpu any, and refuses without one); null: the CPU engine.
 */
async function pageModelGpu(backend: TrainConfig['lab']['backend']): Promise<GpuContext | null> {
  if (backend === 'cpu') return null;
  const got = await createGpuContext().catch(
    (e: Error): Unavailable => ({ available: false, reason: `requestAdapter failed: ${e.message}` }),
  );
  if (!('device' in got)) {
    if (backend === 'webgpu') throw new RunLaunchError('lab.backend', `webgpu: ${got.reason}`);
    return null;
  }
  if (backend === 'auto' && got.status.isFallbackAdapter) {
    got.destroy();
    return null;
  }
  return got;
}

/**
 * A Hugging Face folder the run names (`shipped:<name>` or `opfs:<name>`, ui/models/shippedModels.ts), read and
 * built into the run's engines (train/broughtModel.ts): on the WebGPU engine where lab.backend asks for it and
 * the adapter holds the step (its buffer limits and the stated total; auto falls back to the CPU engine), else
 * on the CPU engine against the page's CPU budget (train/broughtModel.ts runTarget, as the page checks it);
 * a step that cannot fit is refused before the engine is built; null for the GPT-2 policy.
 */
async function pageModel(
  cfg: TrainConfig,
  resume: { bytes: Uint8Array; file: string } | null,
): Promise<BroughtRun | null> {
  const named = pageModelOf(cfg.actor_rollout_ref.model.path);
  if (!named) return null;
  let gpu = await pageModelGpu(cfg.lab.backend);
  try {
    const folder = await readLlamaFolder(await pageModelFolder(named));
    // the same target and limits as the page's check (ui/train/modelFit.ts pageLimits), on this worker's adapter
    const cpu = runCpuLimits(cfg, PAGE_CPU_LIMITS);
    const adapter = gpu ? runAdapterLimits(cfg, gpu.status.limits, PAGE_ADAPTER_LABEL) : null;
    const limits = runTarget(cfg, folder.config, adapter, cpu);
    if (gpu && limits === cpu) {
      gpu.destroy();
      gpu = null;
    }
    // the run owns the context once built (the CPU engine's run destroys it)
    return await broughtModel(cfg, folder, {
      name: named.name,
      tokenizerName: `model:${named.name}`,
      limits,
      resume,
      gpu,
    });
  } catch (e) {
    gpu?.destroy();
    throw e;
  }
}

/**
 * Keeps each step's timeline events (everything but progress) and writes them to events/step_NNNNNN.jsonl when
 * the step ends; a step's late events (a phase that closes after its report) rewrite its file.
 */
function timelineWriter(storage: TrainStorage) {
  const byStep = new Map<number, TrainEvent[]>();
  const dirty = new Set<number>();
  let chain: Promise<void> = Promise.resolve();
  let warned = false;
  const flush = () => {
    const steps = [...dirty];
    dirty.clear();
    for (const s of steps) {
      const text = eventsOfStep(byStep.get(s) ?? []);
      chain = chain
        .then(() => storage.writeFile(eventsPath(s), text))
        .catch((err) => {
          // the run goes on without this step's timeline file; say so once, naming the file
          if (warned) return;
          warned = true;
          post({
            type: 'event',
            event: {
              type: 'log',
              level: 'warn',
              message: `could not write ${eventsPath(s)} (the step timeline): ${message(err)}`,
            },
          });
        });
    }
    // only the latest steps can still get late events
    const newest = Math.max(-1, ...byStep.keys());
    for (const s of byStep.keys()) if (s < newest - 1) byStep.delete(s);
    return chain;
  };
  return {
    add(e: TrainEvent) {
      if (e.type === 'progress' || !('step' in e)) return;
      const list = byStep.get(e.step) ?? [];
      list.push(e);
      byStep.set(e.step, list);
      dirty.add(e.step);
      if (e.type === 'step' || (e.type === 'val' && e.step === 0)) void flush();
    },
    flush,
  };
}

/**
 * A preset run's `preset/*` metrics: when a step's trace is kept, it is read back, its rows rebuilt exactly as
 * the step built them (train/presetMetrics.ts, the function `lab train --preset` and the tests use), and the
 * metrics appended to preset_metrics.jsonl and posted. One step at a time, in step order; `drain` waits for
 * the last one before the run reports its end.
 */
function presetMetricsWriter(storage: TrainStorage, cfg: TrainConfig, tokenizer: ChatTokenizer) {
  let chain: Promise<void> = Promise.resolve();
  const dec = new TextDecoder();
  return {
    add(step: number, path: string) {
      chain = chain.then(async () => {
        try {
          const bytes = await storage.readFile(path);
          if (!bytes) throw new Error(`${path} is missing`);
          const parsed = parseJsonlTrace(dec.decode(bytes));
          const bad = parsed.issues.filter((i) => (i.severity ?? 'error') === 'error');
          if (bad.length) throw new Error(`${path}: ${bad.slice(0, 3).map(formatIssue).join('; ')}`);
          const raw = presetStepMetrics(parsed.rollouts, cfg, step, tokenizer);
          const metrics: Record<string, number | null> = {};
          for (const [k, v] of Object.entries(raw)) metrics[k] = Number.isFinite(v) ? v : null;
          await storage.appendFile(PRESET_METRICS_FILE, fileLoggerLine(step, raw));
          post({ type: 'preset_metrics', step, metrics });
        } catch (e) {
          post({
            type: 'event',
            event: { type: 'log', level: 'warn', message: `preset metrics of step ${step}: ${message(e)}` },
          });
        }
      });
    },
    drain: () => chain,
  };
}

async function start(m: Extract<ToTrainWorker, { type: 'start' }>): Promise<void> {
  const storage = runStorage(m.runId);
  const stored = m.resume ? await latestCheckpoint(storage) : null;
  const cfg = stored ? trainCheckpointConfig(stored.bytes, stored.file) : m.config;
  const brought = await pageModel(cfg, stored);
  const resume = brought
    ? brought.checkpoint
    : stored
      ? decodeTrainCheckpoint(stored.bytes, stored.file)
      : null;
  const tokenizer = brought ? brought.model.tokenizer : await loadPolicyTokenizer();
  const timeline = timelineWriter(storage);
  const presetMetrics = m.preset ? presetMetricsWriter(storage, cfg, tokenizer) : null;
  const launched = await launchRun({
    config: cfg,
    resume,
    model: brought?.model ?? null,
    platform: {
      name: 'page',
      tokenizer,
      readShipped: served,
      gpu: () => createGpuContext(),
      spawnHarnessWorker: spawnBrowserHarnessWorker,
      workerStartTimeoutMs: 60_000,
    },
    storage,
    // what was written after the checkpoint goes only once everything the run needs could be had
    beforeLoop: resume ? () => rollBackTo(m.runId, storage, resume.state.step) : undefined,
    onEvent: (e) => {
      timeline.add(e);
      post({ type: 'event', event: e });
      if (e.type === 'trace') presetMetrics?.add(e.step, e.path);
    },
  });
  local = launched.local;
  const run = local;
  cleanup = () => launched.close();
  launched.gpu?.device.lost.then((info) => {
    if (!ending)
      post({ type: 'device_lost', message: info.message || `WebGPU device lost (${info.reason})` });
  });
  post({
    type: 'ready',
    backend: launched.backend,
    note: launched.note,
    weights: launched.weights,
    resumedFromStep: launched.resumedFromStep,
  });
  let reason: 'done' | 'stopped' | 'error' = 'done';
  let error: string | null = null;
  try {
    reason = (await run.run.run()).reason;
  } catch (e) {
    reason = 'error';
    error = message(e);
  }
  await timeline.flush();
  await presetMetrics?.drain();
  finish(reason, error);
}
