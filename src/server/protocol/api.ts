/**
 * The gateway's REST bodies and SSE events, defined once with the validators both ends use: the gateway checks
 * what it receives (submit, cluster address) and the page checks what it gets back (runs, cluster info, stream
 * events). Browser-safe.
 *
 * REST (every route but /healthz needs `Authorization: Bearer <token>`):
 *   GET    /healthz                      {"status":"ok"}
 *   GET    /api/cluster                  ClusterInfo
 *   PUT    /api/cluster                  SetClusterBody → ClusterInfo
 *   GET    /api/templates                {templates: JobTemplate[]}
 *   GET    /api/runs                     {runs: RunSummary[]}
 *   POST   /api/runs                     SubmitRunBody → 201 RunSummary
 *   GET    /api/runs/{id}                RunSummary
 *   POST   /api/runs/{id}/stop           RunSummary
 *   DELETE /api/runs/{id}                204 (terminal runs only)
 *   GET    /api/runs/{id}/logs?tail=N    {lines: string[], total: number}
 *   GET    /api/runs/{id}/metrics        {metrics: MetricRow[]}
 *   GET    /api/runs/{id}/rollouts       {rollouts: RolloutSummary[]}
 *   GET    /api/runs/{id}/rollouts/bundle?after=&limit=   Agent Lightning events bundle {rollouts: [{rollout, events}]}
 *   GET    /api/runs/{id}/events         text/event-stream of RunEvent; `Last-Event-ID` (or ?after=) resumes
 */
import type { ParamValues } from './params';
import {
  arr,
  bool,
  int,
  num,
  numberRecord,
  obj,
  oneOf,
  optInt,
  optNum,
  optStr,
  str,
  WireError,
} from './read';

export const RUN_STATES = [
  'submitting',
  'pending',
  'running',
  'stopping',
  'succeeded',
  'failed',
  'stopped',
] as const;
export type RunState = (typeof RUN_STATES)[number];
export const TERMINAL_RUN_STATES: readonly RunState[] = ['succeeded', 'failed', 'stopped'];

export function isTerminal(s: RunState): boolean {
  return TERMINAL_RUN_STATES.includes(s);
}

export interface RunSummary {
  id: string;
  name: string;
  template: string;
  params: ParamValues;
  state: RunState;
  /** why the run is in its state (Ray's job message, a start failure, …) */
  message: string;
  /** the Ray job's submission id, once submitted */
  submissionId: string | null;
  createdMs: number;
  updatedMs: number;
  /** the newest training step with metrics */
  lastStep: number | null;
  rollouts: number;
  /** rollouts the job's gateway had already deleted when they were polled */
  missedRollouts: number;
  /** the job's Agent Lightning gateway, once its launcher announced it */
  aglGateway: string | null;
}

export interface ClusterInfo {
  gateway: { version: string };
  ray: {
    address: string;
    reachable: boolean;
    /** the gateway sends a Ray token (its own configuration; never the page's) */
    tokenAuth: boolean;
    version: string | null;
    nodes: number | null;
    cpus: number | null;
    gpus: number | null;
    error: string | null;
  };
}

export interface SubmitRunBody {
  template: string;
  params: Record<string, unknown>;
  name: string | null;
}

export interface SetClusterBody {
  address: string;
}

export interface MetricRow {
  step: number;
  data: Record<string, number>;
}

export interface RolloutSummary {
  rolloutId: string;
  state: string;
  dataId: string;
  isTrain: boolean;
  reward: number | null;
  calls: number;
  step: number | null;
  seq: number;
}

export type RunEvent =
  | { kind: 'status'; state: RunState; message: string }
  | { kind: 'log'; lines: string[] }
  | { kind: 'metric'; step: number; data: Record<string, number>; source: 'console' | 'file' }
  | ({ kind: 'rollout' } & Omit<RolloutSummary, 'seq'>)
  | { kind: 'notice'; level: 'info' | 'warning'; message: string };

export const RUN_EVENT_KINDS = ['status', 'log', 'metric', 'rollout', 'notice'] as const;
export type RunEventKind = (typeof RUN_EVENT_KINDS)[number];

/** One event as it travels: SSE `id` (the run's sequence number), `event` (kind) and `data` (JSON). */
export interface SequencedEvent {
  seq: number;
  event: RunEvent;
}

const NAME_RE = /^[\w .:+-]{0,80}$/;

export function parseSubmitRunBody(v: unknown): SubmitRunBody {
  const o = obj(v, 'body');
  for (const k of Object.keys(o))
    if (!['template', 'params', 'name'].includes(k))
      throw new WireError(`body.${k}`, 'is not a field of a run request (fields: template, params, name)');
  const template = str(o.template, 'body.template');
  const params = o.params === undefined || o.params === null ? {} : obj(o.params, 'body.params');
  const name = optStr(o.name, 'body.name');
  if (name !== null && !NAME_RE.test(name))
    throw new WireError('body.name', 'must be at most 80 letters, digits, spaces or . : + - _');
  return { template, params, name };
}

export function parseSetClusterBody(v: unknown): SetClusterBody {
  const o = obj(v, 'body');
  const address = str(o.address, 'body.address').trim();
  let u: URL;
  try {
    u = new URL(address);
  } catch {
    throw new WireError(
      'body.address',
      `must be an http(s) URL of a Ray dashboard, got ${JSON.stringify(address)}`,
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new WireError('body.address', `must use http or https, got ${u.protocol}`);
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== ''))
    throw new WireError('body.address', 'must be scheme://host:port only (no path, query or credentials)');
  return { address: u.origin };
}

export function parseRunSummary(v: unknown, path = 'run'): RunSummary {
  const o = obj(v, path);
  const params = obj(o.params, `${path}.params`);
  const checked: ParamValues = {};
  for (const [k, x] of Object.entries(params)) {
    if (typeof x !== 'string' && typeof x !== 'number' && typeof x !== 'boolean')
      throw new WireError(`${path}.params.${k}`, 'must be a string, number or boolean');
    checked[k] = x;
  }
  return {
    id: str(o.id, `${path}.id`),
    name: str(o.name, `${path}.name`),
    template: str(o.template, `${path}.template`),
    params: checked,
    state: oneOf(o.state, RUN_STATES, `${path}.state`),
    message: str(o.message, `${path}.message`),
    submissionId: optStr(o.submissionId, `${path}.submissionId`),
    createdMs: int(o.createdMs, `${path}.createdMs`),
    updatedMs: int(o.updatedMs, `${path}.updatedMs`),
    lastStep: optInt(o.lastStep, `${path}.lastStep`),
    rollouts: int(o.rollouts, `${path}.rollouts`),
    missedRollouts: int(o.missedRollouts, `${path}.missedRollouts`),
    aglGateway: optStr(o.aglGateway, `${path}.aglGateway`),
  };
}

export function parseRunList(v: unknown): RunSummary[] {
  const o = obj(v, 'body');
  return arr(o.runs, 'body.runs').map((r, i) => parseRunSummary(r, `body.runs[${i}]`));
}

export function parseClusterInfo(v: unknown): ClusterInfo {
  const o = obj(v, 'body');
  const g = obj(o.gateway, 'body.gateway');
  const r = obj(o.ray, 'body.ray');
  return {
    gateway: { version: str(g.version, 'body.gateway.version') },
    ray: {
      address: str(r.address, 'body.ray.address'),
      reachable: bool(r.reachable, 'body.ray.reachable'),
      tokenAuth: bool(r.tokenAuth, 'body.ray.tokenAuth'),
      version: optStr(r.version, 'body.ray.version'),
      nodes: optInt(r.nodes, 'body.ray.nodes'),
      cpus: optNum(r.cpus, 'body.ray.cpus'),
      gpus: optNum(r.gpus, 'body.ray.gpus'),
      error: optStr(r.error, 'body.ray.error'),
    },
  };
}

export function parseMetricRows(v: unknown): MetricRow[] {
  const o = obj(v, 'body');
  return arr(o.metrics, 'body.metrics').map((m, i) => {
    const r = obj(m, `body.metrics[${i}]`);
    return {
      step: int(r.step, `body.metrics[${i}].step`),
      data: numberRecord(r.data, `body.metrics[${i}].data`),
    };
  });
}

function rolloutFields(o: Record<string, unknown>, path: string): Omit<RolloutSummary, 'seq'> {
  return {
    rolloutId: str(o.rolloutId, `${path}.rolloutId`),
    state: str(o.state, `${path}.state`),
    dataId: str(o.dataId, `${path}.dataId`),
    isTrain: bool(o.isTrain, `${path}.isTrain`),
    reward: optNum(o.reward, `${path}.reward`),
    calls: int(o.calls, `${path}.calls`),
    step: optInt(o.step, `${path}.step`),
  };
}

export function parseRolloutList(v: unknown): RolloutSummary[] {
  const o = obj(v, 'body');
  return arr(o.rollouts, 'body.rollouts').map((x, i) => {
    const p = `body.rollouts[${i}]`;
    const r = obj(x, p);
    return { ...rolloutFields(r, p), seq: int(r.seq, `${p}.seq`) };
  });
}

/** The data of one SSE event of kind `kind`, checked; the same function reads it on the page and in tests. */
export function parseRunEvent(kind: string, data: unknown): RunEvent {
  const k = oneOf(kind, RUN_EVENT_KINDS, 'event');
  const o = obj(data, `${k} event`);
  switch (k) {
    case 'status':
      return {
        kind: k,
        state: oneOf(o.state, RUN_STATES, 'status event.state'),
        message: str(o.message, 'status event.message'),
      };
    case 'log':
      return {
        kind: k,
        lines: arr(o.lines, 'log event.lines').map((l, i) => str(l, `log event.lines[${i}]`)),
      };
    case 'metric':
      return {
        kind: k,
        step: int(o.step, 'metric event.step'),
        data: numberRecord(o.data, 'metric event.data'),
        source: oneOf(o.source, ['console', 'file'] as const, 'metric event.source'),
      };
    case 'rollout':
      return { kind: k, ...rolloutFields(o, 'rollout event') };
    case 'notice':
      return {
        kind: k,
        level: oneOf(o.level, ['info', 'warning'] as const, 'notice event.level'),
        message: str(o.message, 'notice event.message'),
      };
  }
}

/** The SSE data of an event (its kind travels as the SSE `event` field). */
export function eventData(e: RunEvent): Record<string, unknown> {
  const { kind: _kind, ...rest } = e;
  return rest;
}

export function numberOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

export { num as readNumber };
