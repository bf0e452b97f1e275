/**
 * The Remote tab's state: the gateway connection (its URL and token; the token never goes into the URL hash),
 * the cluster it drives, the runs list, and the selected run as its event stream builds it up (status, log
 * tail, metrics per step, rollouts, notices). Stream events are applied in batches, one render per ~100 ms.
 */
import { create } from 'zustand';
import type { ClusterInfo, RunState, RunSummary, SequencedEvent } from '../../server/protocol/api';
import type { ParamValues } from '../../server/protocol/params';
import { useLab } from '../lab/labStore';
import { useView } from '../store';
import { GatewayApi, GatewayError, TOKEN_KEY, takeTokenFromUrl } from './api';

export interface RunRollout {
  rolloutId: string;
  state: string;
  dataId: string;
  reward: number | null;
  calls: number;
  step: number | null;
}

export interface LiveRun {
  id: string;
  status: { state: RunState; message: string } | null;
  logs: string[];
  logTotal: number;
  /** step → merged metrics (later values override) */
  metrics: Map<number, Record<string, number>>;
  rollouts: RunRollout[];
  notices: { seq: number; level: 'info' | 'warning'; message: string }[];
  lastSeq: number;
  stream: { connected: boolean; error: string | null };
}

const LOG_KEEP = 400;

interface RemoteState {
  base: string;
  token: string;
  conn: 'idle' | 'connecting' | 'connected' | 'error';
  connError: string | null;
  cluster: ClusterInfo | null;
  runs: RunSummary[];
  live: LiveRun | null;
  submitError: { message: string; field?: string } | null;
  busy: boolean;
  /** re-open the run's rollouts in the Trace view as new ones arrive */
  follow: boolean;
  init: () => void;
  connect: (base: string, token: string) => Promise<void>;
  refresh: () => Promise<void>;
  setCluster: (address: string) => Promise<void>;
  submit: (template: string, params: ParamValues, name?: string) => Promise<RunSummary | null>;
  stop: (id: string) => Promise<void>;
  remove: (id: string) => Promise<void>;
  select: (id: string) => void;
  openInTrace: (id: string) => Promise<void>;
  setFollow: (on: boolean) => void;
}

let api: GatewayApi | null = null;
let closeStream: (() => void) | null = null;
let pending: SequencedEvent[] = [];
let flushTimer: ReturnType<typeof setTimeout> | null = null;
let refreshTimer: ReturnType<typeof setInterval> | null = null;
let lastTraceImport = 0;
let traceTimer: ReturnType<typeof setTimeout> | null = null;

function emptyLive(id: string): LiveRun {
  return {
    id,
    status: null,
    logs: [],
    logTotal: 0,
    metrics: new Map(),
    rollouts: [],
    notices: [],
    lastSeq: 0,
    stream: { connected: false, error: null },
  };
}

function apply(live: LiveRun, events: SequencedEvent[]): LiveRun {
  const next: LiveRun = {
    ...live,
    metrics: new Map(live.metrics),
    rollouts: [...live.rollouts],
    notices: [...live.notices],
  };
  let logs = live.logs;
  for (const { seq, event: e } of events) {
    if (seq <= next.lastSeq) continue;
    next.lastSeq = seq;
    if (e.kind === 'status') next.status = { state: e.state, message: e.message };
    else if (e.kind === 'log') {
      logs = logs.concat(e.lines);
      next.logTotal += e.lines.length;
    } else if (e.kind === 'metric')
      next.metrics.set(e.step, { ...(next.metrics.get(e.step) ?? {}), ...e.data });
    else if (e.kind === 'rollout')
      next.rollouts.push({
        rolloutId: e.rolloutId,
        state: e.state,
        dataId: e.dataId,
        reward: e.reward,
        calls: e.calls,
        step: e.step,
      });
    else if (e.kind === 'notice') next.notices.push({ seq, level: e.level, message: e.message });
  }
  next.logs = logs.length > LOG_KEEP ? logs.slice(logs.length - LOG_KEEP) : logs;
  return next;
}

export const useRemote = create<RemoteState>((set, get) => ({
  base: '',
  token: '',
  conn: 'idle',
  connError: null,
  cluster: null,
  runs: [],
  live: null,
  submitError: null,
  busy: false,
  follow: false,

  init: () => {
    const token = takeTokenFromUrl();
    if (token && get().conn === 'idle') void get().connect('', token);
  },

  connect: async (base, token) => {
    set({ base, token, conn: 'connecting', connError: null });
    const a = new GatewayApi(base.replace(/\/+$/, ''), token.trim());
    try {
      const cluster = await a.cluster();
      const runs = await a.runs();
      api = a;
      sessionStorage.setItem(TOKEN_KEY, token.trim());
      set({ conn: 'connected', cluster, runs });
      if (refreshTimer) clearInterval(refreshTimer);
      refreshTimer = setInterval(() => void get().refresh(), 5000);
      const want = useView.getState().run;
      if (want && runs.some((r) => r.id === want)) get().select(want);
    } catch (e) {
      const g = e as GatewayError;
      const message =
        g.status === 404
          ? 'no gateway API at this address (start it with `npm start`, which serves this page and the gateway together)'
          : g.message;
      set({ conn: 'error', connError: message });
    }
  },

  refresh: async () => {
    if (!api) return;
    try {
      set({ runs: await api.runs() });
    } catch (e) {
      set({ connError: (e as Error).message });
    }
  },

  setCluster: async (address) => {
    if (!api) return;
    try {
      set({ cluster: await api.setCluster(address), connError: null });
    } catch (e) {
      set({ connError: (e as Error).message });
    }
  },

  submit: async (template, params, name) => {
    if (!api) return null;
    set({ busy: true, submitError: null });
    try {
      const run = await api.submit(template, params, name);
      await get().refresh();
      get().select(run.id);
      return run;
    } catch (e) {
      const g = e as GatewayError;
      set({ submitError: { message: g.message, field: g.field } });
      return null;
    } finally {
      set({ busy: false });
    }
  },

  stop: async (id) => {
    if (!api) return;
    try {
      await api.stop(id);
      await get().refresh();
    } catch (e) {
      set({ connError: (e as Error).message });
    }
  },

  remove: async (id) => {
    if (!api) return;
    try {
      await api.remove(id);
      if (get().live?.id === id) {
        closeStream?.();
        set({ live: null });
        useView.getState().set({ run: '' });
      }
      await get().refresh();
    } catch (e) {
      set({ connError: (e as Error).message });
    }
  },

  select: (id) => {
    closeStream?.();
    pending = [];
    set({ live: emptyLive(id) });
    useView.getState().set({ run: id });
    if (!api) return;
    const flush = () => {
      flushTimer = null;
      const live = get().live;
      if (!live || live.id !== id) return;
      const before = live.rollouts.length;
      const batch = pending.splice(0);
      const next = apply(live, batch);
      set({ live: next });
      if (get().follow && next.rollouts.length > before) scheduleTraceImport(id);
      // the runs list shows the state too: refresh it when the state changes
      if (batch.some((e) => e.event.kind === 'status')) void get().refresh();
    };
    closeStream = api.follow(
      id,
      0,
      (e) => {
        pending.push(e);
        if (!flushTimer) flushTimer = setTimeout(flush, 100);
      },
      (s) => {
        const live = get().live;
        if (live && live.id === id) set({ live: { ...live, stream: s } });
      },
    );
  },

  openInTrace: async (id) => {
    if (!api) return;
    lastTraceImport = Date.now();
    try {
      const blob = await api.bundle(id);
      useLab.getState().importSource({ kind: 'file', file: blob, name: `${id} rollouts` });
      useView.getState().set({ tab: 'trace', rollout: '', call: 0 });
    } catch (e) {
      set({ connError: (e as Error).message });
    }
  },

  setFollow: (on) => set({ follow: on }),
}));

/** Re-imports the followed run's rollouts, at most every 3 s, without switching tabs. */
function scheduleTraceImport(id: string) {
  if (traceTimer) return;
  const wait = Math.max(0, lastTraceImport + 3000 - Date.now());
  traceTimer = setTimeout(async () => {
    traceTimer = null;
    if (!api) return;
    lastTraceImport = Date.now();
    try {
      const blob = await api.bundle(id);
      useLab.getState().importSource({ kind: 'file', file: blob, name: `${id} rollouts` });
    } catch {
      // the next arrival retries
    }
  }, wait);
}

export { GatewayError };
