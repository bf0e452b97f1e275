/**
 * A pool of N harness workers. Each worker gets its own MessageChannel to the proxy, runs one rollout at a time,
 * and is replaced when it crashes, hangs past the per-rollout timeout, sends garbage, or its rollout is
 * cancelled; that rollout ends as failed with the reason. What the proxy recorded for it is untouched, so calls
 * made before the failure are kept.
 */
import type { PortLike } from './http';
import { type FromWorker, type HarnessJob, parseFromWorker, type ToWorker } from './workerProtocol';

/** What the pool needs from a worker, whatever runs it (browser Worker, node:worker_threads Worker). */
export interface WorkerHandle {
  post(msg: ToWorker, transfer?: unknown[]): void;
  /** register the message listener */
  onMessage(cb: (data: unknown) => void): void;
  /** register the listener for an uncaught error or an unexpected exit */
  onFailure(cb: (reason: string) => void): void;
  terminate(): void;
}

export interface PoolOptions {
  size: number;
  spawn: () => WorkerHandle;
  /**
   * serve the proxy on the pool's end of a new worker's channel; `currentRollout` says which rollout the
   * worker runs now (null between jobs), so the proxy can refuse requests for any other (`LlmProxy.scoped`)
   */
  connect: (port: PortLike, currentRollout: () => string | null) => void;
  /** per-rollout limit, counted from when the job is handed to a started worker */
  timeoutMs: number;
  /** how long a new worker may take to load and say 'ready' (default 30 s) */
  startTimeoutMs?: number;
  makeChannel?: () => { port1: PortLike; port2: PortLike };
}

export type JobEnd = Extract<FromWorker, { type: 'done' | 'failed' }>;

interface Pending {
  job: HarnessJob;
  resolve: (r: JobEnd) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Slot {
  handle: WorkerHandle;
  port: PortLike;
  current: Pending | null;
  timer: ReturnType<typeof setTimeout> | null;
  dead: boolean;
  /** the worker said 'ready' (its script loaded); jobs go only to started workers */
  started: boolean;
  startTimer: ReturnType<typeof setTimeout> | null;
}

/** Workers that die before saying 'ready' this many times in a row mean a broken worker script: stop respawning. */
const MAX_START_FAILURES = 3;

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private closed = false;
  private startFailures = 0;
  private brokenReason: string | null = null;
  /** how many workers were replaced after a failure (for reports and tests) */
  replaced = 0;
  private readyWaiters: (() => void)[] = [];

  constructor(private readonly opts: PoolOptions) {
    if (!Number.isInteger(opts.size) || opts.size < 1)
      throw new Error(`pool size must be a positive integer, got ${opts.size}`);
    for (let i = 0; i < opts.size; i++) this.slots.push(this.spawnSlot());
  }

  private spawnSlot(): Slot {
    const { port1, port2 } = (
      this.opts.makeChannel ?? (() => new MessageChannel() as unknown as { port1: PortLike; port2: PortLike })
    )();
    const handle = this.opts.spawn();
    const slot: Slot = {
      handle,
      port: port1,
      current: null,
      timer: null,
      dead: false,
      started: false,
      startTimer: null,
    };
    this.opts.connect(port1, () => (slot.dead ? null : (slot.current?.job.rolloutId ?? null)));
    const startMs = this.opts.startTimeoutMs ?? 30_000;
    slot.startTimer = setTimeout(() => this.fail(slot, `worker did not start within ${startMs} ms`), startMs);
    handle.onMessage((data) => this.onMessage(slot, data));
    handle.onFailure((reason) => this.fail(slot, `worker crashed: ${reason}`));
    handle.post({ type: 'init', port: port2 }, [port2]);
    return slot;
  }

  private onMessage(slot: Slot, data: unknown): void {
    if (slot.dead) return;
    let msg: FromWorker;
    try {
      msg = parseFromWorker(data);
    } catch (e) {
      this.fail(slot, `bad message from worker: ${(e as Error).message}`);
      return;
    }
    if (msg.type === 'ready') {
      slot.started = true;
      if (slot.startTimer) clearTimeout(slot.startTimer);
      slot.startTimer = null;
      this.startFailures = 0;
      if (this.slots.every((s) => s.started)) for (const w of this.readyWaiters.splice(0)) w();
      this.pump();
      return;
    }
    const cur = slot.current;
    if (!cur || msg.rolloutId !== cur.job.rolloutId) return;
    this.finish(slot, msg);
    this.pump();
  }

  private finish(slot: Slot, end: JobEnd): void {
    const cur = slot.current;
    if (!cur) return;
    slot.current = null;
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    if (cur.signal && cur.onAbort) cur.signal.removeEventListener('abort', cur.onAbort);
    cur.resolve(end);
  }

  /** Ends the slot's rollout as failed, kills the worker and puts a fresh one in its place. */
  private fail(slot: Slot, reason: string): void {
    if (slot.dead) return;
    slot.dead = true;
    if (slot.startTimer) clearTimeout(slot.startTimer);
    const cur = slot.current;
    if (cur) this.finish(slot, { type: 'failed', rolloutId: cur.job.rolloutId, error: reason });
    slot.handle.terminate();
    slot.port.close?.();
    if (!slot.started && ++this.startFailures >= MAX_START_FAILURES && !this.brokenReason) {
      this.brokenReason = `workers keep failing before they start (last: ${reason})`;
      for (const w of this.readyWaiters.splice(0)) w();
      for (const p of this.queue.splice(0))
        p.resolve({ type: 'failed', rolloutId: p.job.rolloutId, error: this.brokenReason });
    }
    const i = this.slots.indexOf(slot);
    if (i >= 0 && !this.closed && !this.brokenReason) {
      this.slots[i] = this.spawnSlot();
      this.replaced++;
    }
    this.pump();
  }

  private pump(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      if (slot.dead || slot.current || !slot.started) continue;
      const next = this.queue.shift();
      if (!next) return;
      slot.current = next;
      slot.timer = setTimeout(
        () => this.fail(slot, `timed out after ${this.opts.timeoutMs} ms`),
        this.opts.timeoutMs,
      );
      slot.handle.post({ type: 'run', job: next.job });
    }
  }

  /** Resolves once every current worker has loaded and said 'ready' (or the pool is broken or closed). */
  ready(): Promise<void> {
    if (this.closed || this.brokenReason || this.slots.every((s) => s.started)) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** Runs one rollout; resolves (never rejects) with how it ended. */
  run(job: HarnessJob, signal?: AbortSignal): Promise<JobEnd> {
    return new Promise<JobEnd>((resolve) => {
      if (this.closed)
        return resolve({ type: 'failed', rolloutId: job.rolloutId, error: 'worker pool is closed' });
      if (signal?.aborted) return resolve({ type: 'failed', rolloutId: job.rolloutId, error: 'cancelled' });
      const p: Pending = { job, resolve, signal };
      if (signal) {
        p.onAbort = () => {
          const qi = this.queue.indexOf(p);
          if (qi >= 0) {
            this.queue.splice(qi, 1);
            resolve({ type: 'failed', rolloutId: job.rolloutId, error: 'cancelled' });
            return;
          }
          const slot = this.slots.find((s) => s.current === p);
          if (slot) this.fail(slot, 'cancelled');
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.queue.push(p);
      this.pump();
    });
  }

  close(): void {
    this.closed = true;
    for (const w of this.readyWaiters.splice(0)) w();
    for (const p of this.queue.splice(0))
      p.resolve({ type: 'failed', rolloutId: p.job.rolloutId, error: 'worker pool closed' });
    for (const s of this.slots) {
      s.dead = true;
      if (s.startTimer) clearTimeout(s.startTimer);
      if (s.current) {
        const cur = s.current;
        s.current = null;
        if (s.timer) clearTimeout(s.timer);
        cur.resolve({ type: 'failed', rolloutId: cur.job.rolloutId, error: 'worker pool closed' });
      }
      s.handle.terminate();
      s.port.close?.();
    }
  }
}
