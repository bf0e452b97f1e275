/**
 * The Train tab's runs as the page shows them: the list (each run's `run.json` in OPFS, so it survives a
 * reload), each run's metrics and step events, the runs training now (each in its own trainer worker: one at a
 * time, or a seed group's runs several at once as `train/runSlots.ts` allows; the others wait in a queue), the
 * storage budget, and the actions (start, pause, resume, stop, resume an interrupted run from its
 * checkpoint, duplicate with one change, open a step's batch in the Trace and Advantages views, export and
 * import). Reading and writing the runs' files is runStorage.ts's, talking to the trainer worker
 * trainWorkerClient.ts's; this store holds the state and decides what each worker message changes. The page
 * thread only renders and writes small records; the worker trains.
 */
import { create } from 'zustand';
import { lossModeOf } from '../../core/config/fields';
import type { Rollout } from '../../core/trace/types';
import {
  CONFIG_FIELDS,
  checkConsistency,
  cloneConfig,
  getPath,
  setConfigValue,
  type TrainConfig,
} from '../../train/config';
import type { TrainEvent } from '../../train/events';
import type { TrainPreset } from '../../train/presets';
import { type ParallelRule, parallelWorkers, runsToStart } from '../../train/runSlots';
import { useLab } from '../lab/labStore';
import type { TraceTokenizer } from '../lab/protocol';
import { useRunSettings } from '../lab/runSettings';
import { useView } from '../store';
import { explorerOptionsOf } from './explorerOptions';
import { formatFieldValue } from './formConfig';
import { PAGE_CPU_BUDGET, runMemoryEstimate } from './modelFit';
import type { FromTrainWorker } from './protocol';
import { makeRunArchive, readRunArchive } from './runArchive';
import type { RunMeta, RunPreset, StepMetrics } from './runData';
import { removeRun } from './runFiles';
import {
  clearRunFiles,
  message,
  prune as pruneRuns,
  readArchivedFiles,
  readBudget,
  readRunEvents,
  readRunMetrics,
  readRuns,
  readStepBatch,
  readStepBytes,
  runBytes,
  saveMeta,
  settled,
  writeBudget,
  writeRunFiles,
} from './runStorage';
import { startTrainWorker, type TrainWorkerClient } from './trainWorkerClient';

/**
 * The name of an A/B copy: the parent's, then its one change as `key=value` with the key's last segment
 * (`… · lr=0.001`, `… · adv_estimator=rloo`); the value is never cut at its dots.
 */
export function copyName(parentName: string, path: string, value: string): string {
  return `${parentName} · ${path.split('.').pop()}=${value}`;
}

type Progress = Extract<TrainEvent, { type: 'progress' }>;

/**
 * A run's metrics read from its file, merged with what arrived while the read was in flight: `before` is the
 * store's list when the read began, `now` when it resolved. Entries of `now` that were not in `before` came
 * from step events during the read and win over the file's entry for their step (the file may predate them);
 * everything else comes from the file, so entries a rollback removed from it go.
 */
export function mergeReadMetrics(
  before: readonly StepMetrics[],
  now: readonly StepMetrics[],
  read: readonly StepMetrics[],
): StepMetrics[] {
  const old = new Set(before);
  const byStep = new Map(read.map((m) => [m.step, m]));
  for (const m of now)
    if (!old.has(m)) {
      const r = byStep.get(m.step);
      byStep.set(m.step, r ? { step: m.step, data: { ...r.data, ...m.data } } : m);
    }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

export interface LiveRun {
  id: string;
  /** page clock (performance.now) at Start, and when the first step's metrics arrived */
  startedAt: number;
  firstPointMs: number | null;
  progress: Progress | null;
  /** the worker has its engine and weights (it posted 'ready') */
  ready: boolean;
  pauseRequested: boolean;
}

export interface StepBatch {
  runId: string;
  step: number;
  rollouts: Rollout[];
}

export interface TrainState {
  loaded: boolean;
  runs: RunMeta[];
  metrics: Record<string, StepMetrics[]>;
  /** step events (phases, rollouts, 429s) per run: live ones as they arrive, stored ones when asked for */
  events: Record<string, TrainEvent[]>;
  /** the runs training now, by id (each in its own trainer worker) */
  live: Record<string, LiveRun>;
  /** per seed group: how many of its runs train at once and why (`train/runSlots.ts`) */
  parallel: Record<string, ParallelRule>;
  /** bytes in OPFS per run */
  usage: Record<string, number>;
  /** the storage budget in MB (kept traces and older checkpoints beyond it are removed, oldest first) */
  budgetMb: number;
  error: string | null;
  /** the batch the completions view shows */
  batch: StepBatch | null;
  batchError: string | null;
  refresh(): Promise<void>;
  start(
    config: TrainConfig,
    parent?: RunMeta['parent'],
    name?: string,
    preset?: RunPreset | null,
  ): Promise<string>;
  /**
   * A preset's variants (per seed of the group, their configs from `presetConfigs` in the preset's order) as runs
   * of the tab, one group, queued seed by seed (each variant in one colour on every seed) and overlaid in the
   * dashboard; as many train at once as `parallelWorkers` allows for this machine; returns their ids.
   */
  startPreset(preset: TrainPreset, bySeed: TrainConfig[][]): Promise<string[]>;
  /** pause, resume and stop act on every run training (and stop also on the queued runs) */
  pause(): void;
  resume(): void;
  stop(): void;
  resumeRun(id: string): Promise<void>;
  remove(id: string): Promise<void>;
  duplicate(id: string, path: string, value: string): Promise<string>;
  loadEvents(id: string): Promise<void>;
  loadBatch(id: string, step: number): Promise<void>;
  openStep(id: string, step: number): Promise<void>;
  exportRun(id: string): Promise<Blob>;
  importRun(file: Blob, name: string): Promise<string>;
  setBudget(mb: number): void;
}

/** Run colours, in order of creation (distinct on white, colour-blind-safe first). */
export const RUN_COLORS = [
  '#2d5bd7',
  '#d95f02',
  '#1b9e77',
  '#7570b3',
  '#e7298a',
  '#66a61e',
  '#a6761d',
  '#444',
];

/** the trainer worker of each run training */
const workers = new Map<string, TrainWorkerClient>();
/** queued runs that continue from their checkpoint when they start (a lost WebGPU device) */
const resumeOnStart = new Set<string>();

/** What the browser reports of this machine (`parallelWorkers`' input). */
function machineFacts() {
  const nav =
    typeof navigator === 'undefined' ? undefined : (navigator as Navigator & { deviceMemory?: number });
  return { cores: nav?.hardwareConcurrency, deviceMemoryGiB: nav?.deviceMemory };
}

function newRunId(): string {
  const rand = Math.floor(Math.random() * 36 ** 4)
    .toString(36)
    .padStart(4, '0');
  return `run-${Date.now().toString(36)}-${rand}`;
}

/** The policy tokenizer's files, given with a kept trace so the Trace view shows the policy's token texts. */
let policyTokenizer: Promise<TraceTokenizer> | null = null;
function policyTokenizerFiles(): Promise<TraceTokenizer> {
  const base = `${import.meta.env.BASE_URL}tokenizer/`;
  const get = async (f: string) => {
    const r = await fetch(`${base}${f}`);
    if (!r.ok) throw new Error(`tokenizer/${f}: HTTP ${r.status}`);
    return (await r.json()) as Record<string, unknown>;
  };
  policyTokenizer ??= Promise.all([get('tokenizer.json'), get('tokenizer_config.json')]).then(
    ([json, config]) => ({ name: 'policy', json, config }),
    (e) => {
      policyTokenizer = null;
      throw e;
    },
  );
  return policyTokenizer;
}

export const useTrain = create<TrainState>((set, get) => {
  const meta = (id: string) => get().runs.find((r) => r.id === id);
  const update = (id: string, patch: Partial<RunMeta>): RunMeta | null => {
    const m = meta(id);
    if (!m) return null;
    const next = { ...m, ...patch };
    set({ runs: get().runs.map((r) => (r.id === id ? next : r)) });
    void saveMeta(next).catch((e) => set({ error: `${id}: run.json: ${message(e)}` }));
    return next;
  };
  /** Asks every training run's worker to pause or resume, and marks the runs so at once. */
  const setPaused = (paused: boolean) => {
    for (const live of Object.values(get().live)) {
      workers.get(live.id)?.post({ type: paused ? 'pause' : 'resume' });
      setLive(live.id, { pauseRequested: paused });
      update(live.id, { status: paused ? 'paused' : 'running' });
    }
  };
  const setLive = (id: string, patch: Partial<LiveRun>) => {
    const live = get().live[id];
    if (live) set({ live: { ...get().live, [id]: { ...live, ...patch } } });
  };
  const dropLive = (id: string) => {
    const { [id]: _gone, ...rest } = get().live;
    set({ live: rest });
  };
  const liveIds = () => new Set(Object.keys(get().live));
  /** a step's metrics merged into what the run has for it (a preset run's preset/* metrics come separately) */
  const upsertMetrics = (id: string, step: number, data: Record<string, number | null>) => {
    const old = (get().metrics[id] ?? []).find((m) => m.step === step);
    const list = (get().metrics[id] ?? []).filter((m) => m.step !== step);
    list.push({ step, data: old ? { ...old.data, ...data } : data });
    list.sort((a, b) => a.step - b.step);
    set({ metrics: { ...get().metrics, [id]: list } });
  };
  const pushEvent = (id: string, e: TrainEvent) => {
    const list = get().events[id];
    if (!list) return; // loaded lazily: stored events are read when the run's views ask for them
    set({ events: { ...get().events, [id]: [...list, e] } });
  };

  async function loadMetrics(id: string): Promise<void> {
    const before = get().metrics[id] ?? [];
    const list = await readRunMetrics(id);
    // a step the worker reported while the file was being read is newer than what was read
    set({ metrics: { ...get().metrics, [id]: mergeReadMetrics(before, get().metrics[id] ?? [], list) } });
  }

  async function measure(id: string): Promise<number> {
    const bytes = await runBytes(id);
    set({ usage: { ...get().usage, [id]: bytes } });
    return bytes;
  }

  /** Keeps the runs within the budget (runStorage.prune) and counts what it removed per run. */
  async function prune(): Promise<void> {
    const removed = await pruneRuns(get().runs, liveIds(), get().budgetMb);
    for (const [id, n] of removed) {
      const m = meta(id);
      if (m) update(id, { pruned: m.pruned + n });
      await measure(id);
    }
  }

  function onWorker(id: string, m: FromTrainWorker): void {
    const live = get().live[id];
    if (!live) return;
    if (m.type === 'ready') {
      setLive(id, { ready: true });
      update(id, { backend: m.backend, note: m.note, status: live.pauseRequested ? 'paused' : 'running' });
      // a resumed run's files were rolled back to its checkpoint
      if (m.resumedFromStep !== null) {
        void loadMetrics(id);
        if (get().events[id]) void get().loadEvents(id);
      }
      return;
    }
    if (m.type === 'device_lost') {
      // resume on a fresh device, or on the CPU engine when none can be had (the worker says which): queued at
      // the head of the queue (the oldest run), so it takes the first free worker of its group
      endWorker(id);
      update(id, { status: 'queued', error: `WebGPU device lost: ${m.message}` });
      resumeOnStart.add(id);
      dropLive(id);
      void next();
      return;
    }
    if (m.type === 'ended') {
      endWorker(id);
      const status = m.reason === 'done' ? 'done' : m.reason === 'stopped' ? 'stopped' : 'failed';
      update(id, { status, error: m.error });
      dropLive(id);
      void measure(id);
      void next();
      return;
    }
    if (m.type === 'preset_metrics') {
      upsertMetrics(id, m.step, m.metrics);
      return;
    }
    const e = m.event;
    switch (e.type) {
      case 'progress':
        setLive(id, { progress: e });
        break;
      case 'phase':
      case 'rollout':
      case 'rejections':
        pushEvent(id, e);
        break;
      case 'val':
        if (e.step === 0) upsertMetrics(id, 0, e.metrics);
        break;
      case 'step': {
        upsertMetrics(id, e.step, e.metrics);
        if (live.firstPointMs === null) setLive(id, { firstPointMs: performance.now() - live.startedAt });
        pushEvent(id, e);
        update(id, { lastStep: e.step });
        void prune()
          .then(() => measure(id))
          .catch((err) => set({ error: `storage budget: ${message(err)}` }));
        break;
      }
      case 'checkpoint':
        update(id, { checkpointStep: e.step });
        break;
      case 'log':
        if (e.level === 'warn') set({ error: `${meta(id)?.name ?? id}: ${e.message}` });
        break;
      default:
        break;
    }
  }

  function endWorker(id: string) {
    workers.get(id)?.terminate();
    workers.delete(id);
  }

  /** One run's worker failed: that run alone fails (a group's other runs train on), and its worker frees. */
  function fail(id: string, error: string) {
    endWorker(id);
    update(id, { status: 'failed', error });
    dropLive(id);
    void next();
  }

  /**
   * Starts a run's worker: `start` from step 0, `resume` from its checkpoint, `restart` over in its folder (a
   * resume with no checkpoint yet). The run counts as training at once, before its files are cleared.
   */
  async function launch(id: string, how: 'start' | 'resume' | 'restart'): Promise<void> {
    const m = meta(id);
    if (!m) return;
    set({
      live: {
        ...get().live,
        [id]: {
          id,
          startedAt: performance.now(),
          firstPointMs: null,
          progress: null,
          ready: false,
          pauseRequested: false,
        },
      },
    });
    update(id, { status: 'running', error: null });
    if (how === 'restart') {
      await clearRunFiles(id);
      set({ metrics: { ...get().metrics, [id]: [] }, events: { ...get().events, [id]: [] } });
      update(id, { lastStep: 0 });
      // stopped while its files were cleared
      if (!get().live[id]) return;
    } else if (how === 'resume') update(id, { lastStep: m.checkpointStep ?? 0 });
    if (!get().events[id]) {
      set({ events: { ...get().events, [id]: [] } });
      void get().loadEvents(id);
    }
    workers.set(
      id,
      startTrainWorker(
        { type: 'start', runId: id, config: m.config, resume: how === 'resume', preset: m.preset },
        { message: (msg) => onWorker(id, msg), fail: (error) => fail(id, error) },
      ),
    );
  }

  /** A run continues from its checkpoint, or starts over in its folder when it has none yet. */
  const relaunch = (id: string) => launch(id, meta(id)?.checkpointStep === null ? 'restart' : 'resume');

  /** Starts the queued runs that may train now (`runsToStart`: first in, first out; a group's several at once). */
  async function next(): Promise<void> {
    const slot = (r: RunMeta) => ({ id: r.id, group: r.preset?.group ?? null });
    const queued = get()
      .runs.filter((r) => r.status === 'queued')
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(slot);
    const live = get()
      .runs.filter((r) => get().live[r.id])
      .map(slot);
    let ids: string[];
    try {
      ids = runsToStart(queued, live, (g) => get().parallel[g]?.workers ?? 1);
    } catch (e) {
      set({ error: message(e) });
      return;
    }
    await Promise.all(ids.map((id) => (resumeOnStart.delete(id) ? relaunch(id) : launch(id, 'start'))));
  }

  return {
    loaded: false,
    runs: [],
    metrics: {},
    events: {},
    live: {},
    parallel: {},
    usage: {},
    budgetMb: readBudget(),
    error: null,
    batch: null,
    batchError: null,

    async refresh() {
      const { runs, problems } = await readRuns(liveIds());
      set({ runs, loaded: true, error: problems.length ? problems.join('; ') : null });
      await Promise.all(runs.map((r) => loadMetrics(r.id).catch((e) => problems.push(message(e)))));
      await Promise.all(runs.map((r) => measure(r.id)));
      if (problems.length) set({ error: problems.join('; ') });
    },

    async start(config, parent = null, name, preset = null) {
      const c = cloneConfig(config);
      checkConsistency(c);
      const id = newRunId();
      const n = get().runs.length;
      const m: RunMeta = {
        version: 1,
        id,
        name:
          name ??
          `${c.lab.harness} · ${c.algorithm.adv_estimator} · ${lossModeOf(c.actor_rollout_ref.actor.loss_agg_mode, c.actor_rollout_ref.actor.policy_loss.loss_mode)} · seed ${c.lab.seed}`,
        color: RUN_COLORS[n % RUN_COLORS.length],
        createdAt: Date.now(),
        status: 'queued',
        config: c,
        backend: null,
        note: null,
        error: null,
        lastStep: 0,
        checkpointStep: null,
        parent,
        pruned: 0,
        preset,
      };
      await saveMeta(m);
      set({
        runs: [...get().runs, m],
        metrics: { ...get().metrics, [id]: [] },
        events: { ...get().events, [id]: [] },
        usage: { ...get().usage, [id]: 0 },
      });
      await next();
      return id;
    },

    async startPreset(preset, bySeed) {
      if (bySeed.length === 0) throw new Error(`preset ${preset.slug}: no seed to run`);
      for (const variants of bySeed)
        if (variants.length !== preset.variants.length)
          throw new Error(
            `preset ${preset.slug} has ${preset.variants.length} variants, ${variants.length} configs were given`,
          );
      const seeds = bySeed.map((v) => v[0].lab.seed);
      if (new Set(seeds).size !== seeds.length)
        throw new Error(`preset ${preset.slug}: a seed appears twice in the group (${seeds.join(', ')})`);
      const group = `${preset.slug}-${Date.now().toString(36)}`;
      // how many of the group's runs train at once, set before the first is queued
      const rule = parallelWorkers(
        machineFacts(),
        bySeed.length * preset.variants.length,
        await runMemoryEstimate(bySeed[0][0]),
        PAGE_CPU_BUDGET,
      );
      set({ parallel: { ...get().parallel, [group]: rule } });
      const first = get().runs.length;
      const ids: string[] = [];
      for (const variants of bySeed)
        for (const [i, v] of preset.variants.entries()) {
          const id = await get().start(
            variants[i],
            null,
            `${preset.slug} · ${v.name} · seed ${variants[i].lab.seed}`,
            {
              slug: preset.slug,
              variant: v.name,
              group,
            },
          );
          // a variant keeps its colour on every seed of the group
          if (bySeed.length > 1) update(id, { color: RUN_COLORS[(first + i) % RUN_COLORS.length] });
          ids.push(id);
        }
      useView
        .getState()
        .set({ trainRun: ids[0], trainCompare: ids.join(','), trainView: 'dashboard', trainStep: -1 });
      return ids;
    },

    pause() {
      setPaused(true);
    },

    resume() {
      setPaused(false);
    },

    stop() {
      for (const id of Object.keys(get().live)) {
        const w = workers.get(id);
        if (w) w.post({ type: 'stop' });
        else {
          // its worker is not started yet (its files are being cleared): it does not start
          dropLive(id);
          update(id, { status: 'stopped' });
        }
      }
      // queued runs are not started
      for (const r of get().runs)
        if (r.status === 'queued') {
          resumeOnStart.delete(r.id);
          update(r.id, { status: 'stopped' });
        }
    },

    async resumeRun(id) {
      if (!meta(id)) return;
      if (liveIds().size > 0) {
        set({ error: 'another run is training: stop it first, or queue a new run' });
        return;
      }
      await relaunch(id);
    },

    async remove(id) {
      if (get().live[id]) {
        set({ error: 'stop the run before deleting it' });
        return;
      }
      await settled(id);
      await removeRun(id);
      const { [id]: _m, ...metrics } = get().metrics;
      const { [id]: _e, ...events } = get().events;
      const { [id]: _u, ...usage } = get().usage;
      set({ runs: get().runs.filter((r) => r.id !== id), metrics, events, usage });
      const v = useView.getState();
      const cmp = v.trainCompare.split(',').filter((x) => x && x !== id);
      v.set({ trainCompare: cmp.join(','), ...(v.trainRun === id ? { trainRun: '', trainStep: -1 } : {}) });
    },

    async duplicate(id, path, value) {
      const m = meta(id);
      if (!m) throw new Error(`no run ${id}`);
      const f = CONFIG_FIELDS.find((x) => x.path === path);
      if (!f) throw new Error(`${path} is not a config key`);
      const c = cloneConfig(m.config);
      setConfigValue(c, path, value);
      checkConsistency(c);
      const shown = formatFieldValue(getPath(c, path));
      const change = `${path}=${shown}`;
      const newId = await get().start(c, { id, change }, copyName(m.name, path, shown));
      const v = useView.getState();
      const cmp = new Set(v.trainCompare.split(',').filter(Boolean));
      cmp.add(id);
      cmp.add(newId);
      v.set({ trainCompare: [...cmp].join(',') });
      return newId;
    },

    async loadEvents(id) {
      const out = await readRunEvents(id);
      // events of the live run's current step are in memory only until the step ends
      const mem = get().events[id] ?? [];
      const have = new Set(out.map((e) => ('step' in e ? e.step : -1)));
      for (const e of mem) if ('step' in e && !have.has(e.step)) out.push(e);
      set({ events: { ...get().events, [id]: out } });
    },

    async loadBatch(id, step) {
      set({ batchError: null });
      try {
        const rollouts = await readStepBatch(id, step, meta(id)?.pruned ?? 0);
        set({ batch: { runId: id, step, rollouts } });
      } catch (e) {
        set({ batch: null, batchError: message(e) });
      }
    },

    async openStep(id, step) {
      const m = meta(id);
      if (!m) return;
      set({ batchError: null });
      try {
        const bytes = await readStepBytes(id, step);
        if (!bytes)
          throw new Error(
            `step ${step} of ${m.name} has no kept trace (pruned by the storage budget, or not kept)`,
          );
        const tokenizer = await policyTokenizerFiles();
        const source = `${m.name} · step ${step}`;
        useLab.getState().importSource({
          kind: 'file',
          file: new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/jsonl' }),
          name: source,
          tokenizer,
        });
        // the run's settings apply to this batch only: held beside the URL's, not written into it
        useRunSettings.getState().bring({
          runId: id,
          runName: m.name,
          step,
          source,
          settings: explorerOptionsOf(m.config),
        });
        useView.getState().set({
          tab: 'trace',
          rollout: '',
          call: 0,
          colorBy: 'trainerLogprob',
          trainRun: id,
          trainStep: step,
        });
      } catch (e) {
        set({ batchError: message(e) });
      }
    },

    async exportRun(id) {
      const out = await readArchivedFiles(id);
      return new Blob([makeRunArchive(out) as Uint8Array<ArrayBuffer>], { type: 'application/zip' });
    },

    async importRun(file, name) {
      const bytes = new Uint8Array(await file.arrayBuffer());
      const { meta: m, files } = readRunArchive(bytes, name);
      const id = meta(m.id) ? newRunId() : m.id;
      await writeRunFiles(id, files);
      const imported: RunMeta = {
        ...m,
        id,
        color: RUN_COLORS[get().runs.length % RUN_COLORS.length],
        status:
          m.status === 'running' || m.status === 'paused' || m.status === 'queued' ? 'interrupted' : m.status,
        imported: { file: name, at: Date.now() },
      };
      await saveMeta(imported);
      set({ runs: [...get().runs, imported] });
      await loadMetrics(id);
      await measure(id);
      return id;
    },

    setBudget(mb) {
      if (!(mb > 0)) return;
      writeBudget(mb);
      set({ budgetMb: mb });
      void prune().catch((e) => set({ error: `storage budget: ${message(e)}` }));
    },
  };
});
