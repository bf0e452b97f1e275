/**
 * Rollouts from a running Agent Lightning gateway (`agl-server` 1.0): what a trainer needs to train on rollouts
 * that agents ran behind the gateway's proxy, as Agent Lightning's own trainer gets them
 * (agentlightning/verl/agl_rollout_manager.py, trainer.py):
 *
 * - enqueue a step's tasks, `rollout.n` rollouts each (`POST /api/rollouts`, caller-assigned ids so a retry
 *   never duplicates), with the local runner's agent class and env map in `config.local`;
 * - wait until each is terminal (`GET /api/rollouts/terminal?after=` cursor), read its
 *   `GET /api/rollouts/{rid}/events?format=triplet` (prompt/response ids, log-probs, rewards; deduplicated by
 *   prompt) into core `Rollout`s (failed rollouts included: the trainer fills their reward);
 * - pause the proxy around an update (`POST /proxy/pause`, agents get 429 + Retry-After) and wait for in-flight
 *   calls to drain (`GET /proxy/state`), resume after;
 * - announce the policy version now served (`POST /api/models` upserts the endpoint with a new `version`, which
 *   the gateway records on every later call as `model_version`);
 * - delete consumed rollouts about a second after reading them, as upstream's manager does on its next poll.
 *
 * `RolloutSource` is the interface a training loop programs against (`lab train --rollout-source agl`);
 * `AglRolloutSource` implements it over HTTP. Every reply is validated; a bad one is an error naming the field.
 */
import { readAglEvents } from '../core/trace/io/aglEvents';
import type { Rollout } from '../core/trace/types';

export interface AglTaskInput {
  harness: string;
  split: 'train' | 'val';
  seed: number;
  index: number;
  behaviour: string;
  /** the GRPO group: rollouts of the same task share it (also read by the gateway's terminal listing) */
  data_id: string;
}

export interface EnqueuedRollout {
  rolloutId: string;
  dataId: string;
  step: number;
  sampleIdxInStep: number;
  isTrain: boolean;
  enqueuedMs: number;
}

export interface DrainResult {
  /** `training/async/proxy_inflight_at_pause` */
  inflightAtPause: number;
  /** `training/async/proxy_drain_seconds` */
  drainSeconds: number;
}

/** What a training loop needs from wherever rollouts come from. */
export interface RolloutSource {
  enqueue(step: number, tasks: AglTaskInput[], n: number, isTrain?: boolean): Promise<EnqueuedRollout[]>;
  /** resolves when every handle is terminal, with the rollouts in handle order */
  collect(
    handles: EnqueuedRollout[],
    opts?: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<Rollout[]>;
  pause(reason: string): Promise<DrainResult>;
  resume(): Promise<void>;
  /** the policy version now served by the inference endpoint */
  publish(version: number): Promise<void>;
  /** consumed: delete after the configured delay */
  release(handles: EnqueuedRollout[]): void;
  /** waits for pending deletions */
  close(): Promise<void>;
}

export class AglError extends Error {}

type Fetch = typeof fetch;

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function need<T>(ok: boolean, v: unknown, what: string): T {
  if (!ok) throw new AglError(`Agent Lightning gateway: ${what}, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v as T;
}

export interface ProxyState {
  paused: boolean;
  retry_after_seconds: number;
  reason: string | null;
  inflight: number;
}

function parseProxyState(v: unknown): ProxyState {
  const o = need<Record<string, unknown>>(isObj(v), v, '/proxy state must be an object');
  need(typeof o.paused === 'boolean', o.paused, 'proxy state.paused must be a boolean');
  need(Number.isInteger(o.inflight), o.inflight, 'proxy state.inflight must be an integer');
  return {
    paused: o.paused as boolean,
    retry_after_seconds: typeof o.retry_after_seconds === 'number' ? o.retry_after_seconds : 0,
    reason: typeof o.reason === 'string' ? o.reason : null,
    inflight: o.inflight as number,
  };
}

export interface TerminalPage {
  items: { rollout_id: string; state: string; data_id: string; is_train: boolean }[];
  next_after: number;
  total_terminal: number;
}

export function parseTerminalPage(v: unknown): TerminalPage {
  const o = need<Record<string, unknown>>(isObj(v), v, '/api/rollouts/terminal must answer an object');
  const items = need<unknown[]>(Array.isArray(o.items), o.items, 'terminal page.items must be an array');
  need(Number.isInteger(o.next_after), o.next_after, 'terminal page.next_after must be an integer');
  need(
    Number.isInteger(o.total_terminal),
    o.total_terminal,
    'terminal page.total_terminal must be an integer',
  );
  return {
    items: items.map((it, i) => {
      const r = need<Record<string, unknown>>(isObj(it), it, `terminal page.items[${i}] must be an object`);
      need(
        typeof r.rollout_id === 'string',
        r.rollout_id,
        `terminal page.items[${i}].rollout_id must be a string`,
      );
      need(typeof r.state === 'string', r.state, `terminal page.items[${i}].state must be a string`);
      return {
        rollout_id: r.rollout_id as string,
        state: r.state as string,
        data_id: typeof r.data_id === 'string' ? r.data_id : '',
        is_train: r.is_train !== false,
      };
    }),
    next_after: o.next_after as number,
    total_terminal: o.total_terminal as number,
  };
}

/** The most specific reason of a fetch failure (undici puts the socket error in `cause`). */
export function causeOf(e: unknown): string {
  const c = (e as { cause?: { code?: string; message?: string } }).cause;
  return c?.code ?? c?.message ?? (e as Error).message;
}

/** The gateway's REST API with its key; JSON in and out. */
export class AglGatewayClient {
  readonly baseUrl: string;
  constructor(
    baseUrl: string,
    private readonly key: string,
    private readonly fetchFn: Fetch = fetch,
    private readonly timeoutMs = 30_000,
    /** transport-failure retries per call */
    private readonly retries = 3,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  /**
   * One call. Every route used here is idempotent (rollout creation carries caller-assigned ids, pause/resume
   * and model registration are upserts), so a transport failure (a kept-alive connection the server had just
   * closed, a reset) is retried a few times with backoff, as upstream's clients do; HTTP errors are not retried.
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
    okStatus: number[] = [200, 201, 204],
  ): Promise<unknown> {
    const headers: Record<string, string> = {};
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response | null = null;
    for (let attempt = 0; res === null; attempt++) {
      try {
        res = await this.fetchFn(this.baseUrl + path, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (e) {
        if (attempt < this.retries) {
          await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
          continue;
        }
        throw new AglError(
          `Agent Lightning gateway at ${this.baseUrl} unreachable (${method} ${path}): ${causeOf(e)}`,
        );
      }
    }
    const text = await res.text();
    if (!okStatus.includes(res.status))
      throw new AglHttpError(
        res.status,
        `Agent Lightning gateway: ${method} ${path} answered HTTP ${res.status}: ${text.slice(0, 500)}`,
      );
    if (text === '') return null;
    try {
      return JSON.parse(text);
    } catch {
      throw new AglError(
        `Agent Lightning gateway: ${method} ${path} answered non-JSON: ${text.slice(0, 200)}`,
      );
    }
  }

  async health(): Promise<void> {
    const v = await this.request('GET', '/healthz');
    need(isObj(v) && v.status === 'ok', v, '/healthz must answer {"status": "ok"}');
  }

  async enqueue(items: unknown[]): Promise<void> {
    const v = await this.request('POST', '/api/rollouts', items, [201]);
    need(
      Array.isArray(v) && v.length === items.length,
      v,
      `POST /api/rollouts must answer ${items.length} rollouts`,
    );
  }

  async terminal(after: number, limit = 500): Promise<TerminalPage> {
    return parseTerminalPage(
      await this.request('GET', `/api/rollouts/terminal?after=${after}&limit=${limit}`),
    );
  }

  /** `{rollout, attempts}`; null when the gateway no longer has it (deleted). */
  async rollout(rid: string): Promise<Record<string, unknown> | null> {
    try {
      const v = await this.request('GET', `/api/rollouts/${encodeURIComponent(rid)}`);
      const o = need<Record<string, unknown>>(
        isObj(v) && isObj(v.rollout),
        v,
        `GET /api/rollouts/${rid} must answer {rollout, attempts}`,
      );
      return o.rollout as Record<string, unknown>;
    } catch (e) {
      if (e instanceof AglHttpError && e.status === 404) return null;
      throw e;
    }
  }

  /** The rollout's events (full, or `format=triplet`); null when the gateway no longer has the rollout. */
  async events(rid: string, format?: 'triplet'): Promise<unknown[] | null> {
    try {
      const q = format ? `?format=${format}` : '';
      const v = await this.request('GET', `/api/rollouts/${encodeURIComponent(rid)}/events${q}`);
      return need<unknown[]>(Array.isArray(v), v, `GET /api/rollouts/${rid}/events must answer a list`);
    } catch (e) {
      if (e instanceof AglHttpError && e.status === 404) return null;
      throw e;
    }
  }

  async deleteRollout(rid: string): Promise<void> {
    await this.request('DELETE', `/api/rollouts/${encodeURIComponent(rid)}`, undefined, [200, 204]);
  }

  async pause(reason: string): Promise<ProxyState> {
    return parseProxyState(await this.request('POST', '/proxy/pause', { reason, retry_after_seconds: 1 }));
  }

  async resume(): Promise<ProxyState> {
    return parseProxyState(await this.request('POST', '/proxy/resume'));
  }

  async proxyState(): Promise<ProxyState> {
    return parseProxyState(await this.request('GET', '/proxy/state'));
  }

  async registerModels(models: { model: string; endpoint: string; version: number }[]): Promise<void> {
    const v = await this.request('POST', '/api/models', models, [201]);
    need(
      Array.isArray(v) && v.length === models.length,
      v,
      'POST /api/models must answer the registered models',
    );
  }

  async deleteModels(): Promise<void> {
    await this.request('DELETE', '/api/models');
  }
}

export class AglHttpError extends AglError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface AglSourceOptions {
  client: AglGatewayClient;
  /** the model name the gateway's proxy forces (`default_proxy.model_name`) */
  model: string;
  /** the OpenAI base URL of the policy server the proxy forwards to, e.g. http://127.0.0.1:9000/v1 */
  endpoint: string;
  /** `config.local.agent_class` of every rollout */
  agentClass: string;
  envMap: Record<string, string>;
  rolloutTimeoutSeconds?: number;
  /** recorded in each rollout's metadata (`tokenizer`) so viewers decode its ids with the right vocabulary */
  tokenizer?: string;
  /** how long after consumption a rollout is deleted (upstream: the manager's next poll, ~1 s) */
  deleteAfterMs?: number;
  pollMs?: number;
  now?: () => number;
}

let idCounter = 0;
function newRolloutId(step: number, task: number, k: number): string {
  const rand = Math.floor(Math.random() * 0xffffffff)
    .toString(16)
    .padStart(8, '0');
  return `s${step}-t${task}-n${k}-${rand}${(idCounter++).toString(16)}`;
}

export class AglRolloutSource implements RolloutSource {
  private cursor = 0;
  private readonly terminal = new Map<string, string>();
  private readonly deletions: Promise<void>[] = [];
  readonly deleteErrors: string[] = [];

  constructor(private readonly opts: AglSourceOptions) {}

  async enqueue(step: number, tasks: AglTaskInput[], n: number, isTrain = true): Promise<EnqueuedRollout[]> {
    const now = this.opts.now ?? Date.now;
    const handles: EnqueuedRollout[] = [];
    const items: unknown[] = [];
    tasks.forEach((task, t) => {
      for (let k = 0; k < n; k++) {
        const h: EnqueuedRollout = {
          rolloutId: newRolloutId(step, t, k),
          dataId: task.data_id,
          step,
          sampleIdxInStep: t,
          isTrain,
          enqueuedMs: now(),
        };
        handles.push(h);
        items.push({
          rollout_id: h.rolloutId,
          input: task,
          is_train: isTrain,
          config: {
            timeout_seconds: this.opts.rolloutTimeoutSeconds ?? 600,
            local: { agent_class: this.opts.agentClass, env_map: this.opts.envMap },
          },
          metadata: {
            data_id: task.data_id,
            batch_idx: step,
            sample_idx_in_batch: t,
            ...(this.opts.tokenizer ? { tokenizer: this.opts.tokenizer } : {}),
          },
        });
      }
    });
    await this.opts.client.enqueue(items);
    return handles;
  }

  async collect(
    handles: EnqueuedRollout[],
    o: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<Rollout[]> {
    const deadline = Date.now() + (o.timeoutMs ?? ((this.opts.rolloutTimeoutSeconds ?? 600) + 60) * 1000);
    const pending = new Set(handles.map((h) => h.rolloutId));
    for (const id of [...pending]) if (this.terminal.has(id)) pending.delete(id);
    while (pending.size > 0) {
      if (o.signal?.aborted) throw new AglError('collect cancelled');
      if (Date.now() > deadline)
        throw new AglError(
          `${pending.size} rollout(s) not terminal in time: ${[...pending].slice(0, 5).join(', ')}`,
        );
      const page = await this.opts.client.terminal(this.cursor);
      this.cursor = page.next_after;
      for (const it of page.items) {
        this.terminal.set(it.rollout_id, it.state);
        pending.delete(it.rollout_id);
      }
      if (pending.size > 0 && page.items.length === 0)
        await new Promise((r) => setTimeout(r, this.opts.pollMs ?? 250));
    }
    const out: Rollout[] = [];
    for (const h of handles) out.push(await this.readRollout(h));
    return out;
  }

  private async readRollout(h: EnqueuedRollout): Promise<Rollout> {
    const header = await this.opts.client.rollout(h.rolloutId);
    const events = await this.opts.client.events(h.rolloutId, 'triplet');
    if (!header || !events)
      throw new AglError(`rollout ${h.rolloutId} vanished from the gateway before the trainer read it`);
    const status = isObj(header.status) ? header.status : {};
    const bundle = {
      rollouts: [
        {
          rollout: {
            rollout_id: h.rolloutId,
            is_train: h.isTrain,
            metadata: { data_id: h.dataId, batch_idx: h.step, sample_idx_in_batch: h.sampleIdxInStep },
            status: {
              state: status.state,
              error_message: typeof status.error_message === 'string' ? status.error_message : null,
            },
          },
          events,
        },
      ],
    };
    const batch = readAglEvents(bundle);
    const bad = batch.issues.filter((i) => i.severity !== 'warning');
    if (batch.rollouts.length !== 1 || bad.length)
      throw new AglError(
        `rollout ${h.rolloutId}: the gateway's triplet events do not read: ${bad.map((i) => `${i.where}: ${i.field ?? ''} ${i.message}`).join('; ')}`,
      );
    return batch.rollouts[0];
  }

  async pause(reason: string): Promise<DrainResult> {
    const t0 = Date.now();
    const st = await this.opts.client.pause(reason);
    let inflight = st.inflight;
    while (inflight > 0) {
      await new Promise((r) => setTimeout(r, 250));
      inflight = (await this.opts.client.proxyState()).inflight;
    }
    return { inflightAtPause: st.inflight, drainSeconds: (Date.now() - t0) / 1000 };
  }

  async resume(): Promise<void> {
    await this.opts.client.resume();
  }

  async publish(version: number): Promise<void> {
    await this.opts.client.registerModels([
      { model: this.opts.model, endpoint: this.opts.endpoint, version },
    ]);
  }

  release(handles: EnqueuedRollout[]): void {
    const delay = this.opts.deleteAfterMs ?? 1000;
    for (const h of handles) {
      this.terminal.delete(h.rolloutId);
      this.deletions.push(
        new Promise<void>((r) => setTimeout(r, delay)).then(() =>
          this.opts.client.deleteRollout(h.rolloutId).catch((e: Error) => {
            this.deleteErrors.push(e.message);
          }),
        ),
      );
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.deletions.splice(0));
  }
}
