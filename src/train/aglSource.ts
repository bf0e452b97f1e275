/**
 * Rollouts from a running Agent Lightning gateway (`agl-server` 1.0) as a training loop's `RolloutSource`
 * (source.ts), so `TrainRun` trains on them exactly as on local harness rollouts: the agents run behind the
 * gateway's proxy, as Agent Lightning's own trainer gets them (agentlightning/verl/agl_rollout_manager.py,
 * trainer.py):
 *
 * - `submit` enqueues each group's rollouts (`POST /api/rollouts`, the loop's rollout ids, so a retry never
 *   duplicates), with the local runner's agent class and env map in `config.local` and the task as the agent
 *   regenerates it (harness, split, seed, index);
 * - `next` hands back each rollout once terminal (`GET /api/rollouts/terminal?after=` cursor), read from
 *   `GET /api/rollouts/{rid}/events?format=triplet` (prompt/response ids, log-probs, rewards, the model version
 *   that served each call) into a core `Rollout` (failed rollouts included: the trainer fills their reward);
 * - `pause` pauses the proxy around an update (`POST /proxy/pause`, agents get 429 + Retry-After) and waits for
 *   in-flight calls to drain (`GET /proxy/state`); `resume` resumes it;
 * - `setPolicyVersion` announces the version now served (`POST /api/models` upserts the endpoint with a new
 *   `version`, which the gateway records on every later call as `model_version`);
 * - consumed rollouts are deleted about a second after they are read, as upstream's manager does on its next poll.
 *
 * Every reply is validated; a bad one is an error naming the field, and it fails the source (the run stops with it).
 */
import { readAglEvents } from '../core/trace/io/aglEvents';
import type { Rollout } from '../core/trace/types';
import { isRecord as isObj } from '../core/wire';
import { type DrainInfo, type GroupRequest, type RolloutSource, SourceClosedError } from './source';

export interface AglTaskInput {
  harness: string;
  split: 'train' | 'val';
  seed: number;
  index: number;
  behaviour: string;
  /** the GRPO group: rollouts of the same task share it (also read by the gateway's terminal listing) */
  data_id: string;
}

/** A rollout the source enqueued and waits for. */
interface Enqueued {
  rolloutId: string;
  dataId: string;
  step: number;
  sampleIdxInStep: number;
  enqueuedMs: number;
}

export class AglError extends Error {}

type Fetch = typeof fetch;

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
  need(
    Number.isInteger(o.inflight) && (o.inflight as number) >= 0,
    o.inflight,
    'proxy state.inflight must be an integer ≥ 0',
  );
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

  async pause(reason: string, retryAfterSeconds = 1): Promise<ProxyState> {
    return parseProxyState(
      await this.request('POST', '/proxy/pause', { reason, retry_after_seconds: retryAfterSeconds }),
    );
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
  /** train rollouts (`is_train`) or validation ones */
  isTrain: boolean;
  /** the task input of a group, as the agent regenerates the task from it */
  input: (group: GroupRequest) => Omit<AglTaskInput, 'data_id'>;
  rolloutTimeoutSeconds?: number;
  /** recorded in each rollout's metadata (`tokenizer`) so viewers decode its ids with the right vocabulary */
  tokenizer?: string;
  /** how long after consumption a rollout is deleted (upstream: the manager's next poll, ~1 s) */
  deleteAfterMs?: number;
  pollMs?: number;
  now?: () => number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The gateway as a training loop's rollout source (see the module comment). */
export class AglGatewaySource implements RolloutSource {
  /** the gateway's proxy does not tell the trainer which calls it turned away while paused */
  readonly rejections: { rolloutId: string; atMs: number }[] = [];
  readonly deleteErrors: string[] = [];
  private cursor = 0;
  private readonly watched = new Map<string, Enqueued>();
  private readonly ready: Rollout[] = [];
  private waiters: { resolve: (r: Rollout) => void; reject: (e: Error) => void }[] = [];
  private readonly deletions: Promise<void>[] = [];
  /** control calls (enqueue, pause, resume, publish) in the order the loop made them */
  private ctl: Promise<unknown> = Promise.resolve();
  private polling = false;
  private closed = false;
  private error: Error | null = null;

  constructor(private readonly opts: AglSourceOptions) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** The first failure ends the source: every waiting and later `next()` rejects with it. */
  private fail(e: unknown): void {
    if (this.error || this.closed) return;
    this.error = e instanceof Error ? e : new AglError(String(e));
    for (const w of this.waiters.splice(0)) w.reject(this.error);
  }

  private control<T>(f: () => Promise<T>): Promise<T> {
    const p = this.ctl.then(f);
    this.ctl = p.catch(() => {});
    return p;
  }

  submit(groups: GroupRequest[]): void {
    if (this.closed) throw new SourceClosedError('rollout source is closed');
    const items: unknown[] = [];
    for (const g of groups) {
      const input = this.opts.input(g);
      for (const rid of g.rolloutIds) {
        const h: Enqueued = {
          rolloutId: rid,
          dataId: g.dataId,
          step: g.step,
          sampleIdxInStep: g.sampleIdx,
          enqueuedMs: this.now(),
        };
        this.watched.set(rid, h);
        items.push({
          rollout_id: rid,
          input: { ...input, data_id: g.dataId },
          is_train: this.opts.isTrain,
          config: {
            timeout_seconds: this.opts.rolloutTimeoutSeconds ?? 600,
            local: { agent_class: this.opts.agentClass, env_map: this.opts.envMap },
          },
          metadata: {
            data_id: g.dataId,
            batch_idx: g.step,
            sample_idx_in_batch: g.sampleIdx,
            ...(this.opts.tokenizer ? { tokenizer: this.opts.tokenizer } : {}),
          },
        });
      }
    }
    if (items.length === 0) return;
    this.control(() => this.opts.client.enqueue(items)).catch((e) => this.fail(e));
    this.startPolling();
  }

  /** One poll loop at a time; the flag is cleared by the loop itself, so a submit right after it ends starts another. */
  private startPolling(): void {
    if (this.polling) return;
    this.polling = true;
    this.poll().catch((e) => this.fail(e));
  }

  /** Polls the terminal listing while rollouts are watched, reading each of ours as it ends. */
  private async poll(): Promise<void> {
    try {
      await this.pollWatched();
    } finally {
      this.polling = false;
    }
  }

  private async pollWatched(): Promise<void> {
    const timeoutMs = ((this.opts.rolloutTimeoutSeconds ?? 600) + 60) * 1000;
    while (this.watched.size > 0 && !this.closed && !this.error) {
      const page = await this.opts.client.terminal(this.cursor);
      this.cursor = page.next_after;
      for (const it of page.items) {
        const h = this.watched.get(it.rollout_id);
        if (!h) continue;
        const r = await this.readRollout(h);
        this.watched.delete(it.rollout_id);
        this.release(h);
        const w = this.waiters.shift();
        if (w) w.resolve(r);
        else this.ready.push(r);
      }
      const now = this.now();
      for (const h of this.watched.values())
        if (now - h.enqueuedMs > timeoutMs)
          throw new AglError(
            `rollout ${h.rolloutId} not terminal ${timeoutMs / 1000} s after it was enqueued`,
          );
      if (page.items.length === 0) await sleep(this.opts.pollMs ?? 250);
    }
  }

  private async readRollout(h: Enqueued): Promise<Rollout> {
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
            is_train: this.opts.isTrain,
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
    const r = batch.rollouts[0];
    return { ...r, dataId: h.dataId, step: h.step, sampleIdxInStep: h.sampleIdxInStep };
  }

  next(): Promise<Rollout> {
    const r = this.ready.shift();
    if (r) return Promise.resolve(r);
    if (this.error) return Promise.reject(this.error);
    if (this.closed) return Promise.reject(new SourceClosedError('rollout source is closed'));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  pending(): number {
    return this.watched.size + this.ready.length;
  }

  pause(reason: string, retryAfterSeconds = 1): Promise<DrainInfo> {
    return this.control(async () => {
      const t0 = this.now();
      // agl-server takes Retry-After in whole seconds
      const st = await this.opts.client.pause(reason, Math.max(1, Math.ceil(retryAfterSeconds)));
      let inflight = st.inflight;
      // calls still running when paused end within the rollout timeout, or the gateway is stuck
      const deadline = t0 + ((this.opts.rolloutTimeoutSeconds ?? 600) + 60) * 1000;
      while (inflight > 0) {
        if (this.now() > deadline)
          throw new AglError(
            `the gateway still reports ${inflight} call(s) in flight ${Math.round((this.now() - t0) / 1000)} s after the pause`,
          );
        await sleep(100);
        inflight = (await this.opts.client.proxyState()).inflight;
      }
      return { inflightAtPause: st.inflight, drainMs: this.now() - t0 };
    });
  }

  resume(): void {
    this.control(() => this.opts.client.resume()).catch((e) => this.fail(e));
  }

  setPolicyVersion(version: number): void {
    this.control(() =>
      this.opts.client.registerModels([{ model: this.opts.model, endpoint: this.opts.endpoint, version }]),
    ).catch((e) => this.fail(e));
  }

  /** Resolves once every control call made so far has been answered (or failed the source). */
  async settled(): Promise<void> {
    await this.ctl;
    if (this.error) throw this.error;
  }

  private release(h: Enqueued): void {
    const delay = this.opts.deleteAfterMs ?? 1000;
    this.deletions.push(
      sleep(delay).then(() =>
        this.opts.client.deleteRollout(h.rolloutId).catch((e: Error) => {
          this.deleteErrors.push(e.message);
        }),
      ),
    );
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(new SourceClosedError('rollout source is closed'));
  }

  /** Waits for the pending deletions of consumed rollouts. */
  async drained(): Promise<void> {
    await Promise.all(this.deletions.splice(0));
  }
}
