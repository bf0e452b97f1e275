/**
 * Where rollouts come from, kept apart from how a step trains on them. A `RolloutSource` runs groups of
 * rollouts (one task × rollout.n) and hands back each rollout when it reaches a terminal state, with every
 * call as the proxy recorded it (engine ids, log-probs, the policy version that served it, timings). It can be
 * paused (callers get HTTP 429 + Retry-After and retry) and drained around a weight update.
 *
 * `HarnessRolloutSource` is the local one: harness agents in a worker pool (Web Workers in the page,
 * worker_threads in Node, or inline for tests) talking to the in-process `LlmProxy`. A remote source (Agent
 * Lightning's gateway: POST /api/rollouts, GET /api/rollouts/terminal + events?format=triplet, /proxy/pause,
 * /proxy/resume) implements the same interface and the scheduler and the step do not change.
 */
import type { Rollout } from '../core/trace/types';
import type { Behaviour, Split, TaskBase } from '../harness/harness';
import type { HttpHandler } from '../harness/http';
import type { JobEnd } from '../harness/pool';
import type { LlmProxy } from '../harness/proxy';
import type { HarnessName } from '../harness/registry';
import { recordedRollout, rolloutPaths } from '../harness/runner';
import { runJob } from '../harness/workerMain';
import type { HarnessJob } from '../harness/workerProtocol';
import { tick } from './tick';

/** One GRPO group to run: a task, rolled out once per id. */
export interface GroupRequest {
  /** the group uid (verl `uid`, Agent Lightning `data_id`) */
  dataId: string;
  task: TaskBase;
  split: Split;
  rolloutIds: string[];
  /** the training step that enqueued it (Agent Lightning `step`) and the task's index in that step */
  step: number;
  sampleIdx: number;
}

export interface DrainInfo {
  /** calls in flight when the pause began */
  inflightAtPause: number;
  drainMs: number;
}

export interface RolloutSource {
  /** Starts the rollouts of these groups; each comes back through `next()` once terminal. */
  submit(groups: GroupRequest[]): void;
  /** The next rollout to reach a terminal state (in completion order); rejects once closed. */
  next(): Promise<Rollout>;
  /** Rollouts submitted and not yet returned by `next()`. */
  pending(): number;
  /** Stop admitting calls (429) and resolve once in-flight calls have drained. */
  pause(reason: string, retryAfterSeconds?: number): Promise<DrainInfo>;
  resume(): void;
  /** The policy version recorded on calls served from now on. */
  setPolicyVersion(version: number): void;
  /** Cancels what is still running (those rollouts end as failed) and releases workers. */
  close(): void;
  /** 429s served while paused, for the timeline (rollout id, time) */
  readonly rejections: { rolloutId: string; atMs: number }[];
}

/** What the source needs from a worker pool (harness/pool.ts WorkerPool, or an inline stand-in). */
export interface JobRunner {
  run(job: HarnessJob, signal?: AbortSignal): Promise<JobEnd>;
  close(): void;
}

/**
 * Runs jobs on this thread against a handler (tests and the SFT expert; no isolation, no parallel CPU), at
 * most `concurrency` at a time (default: all), like a pool of that many workers. Every request takes one
 * macrotask hop to the handler, as a worker's message would, so agents interleave with the trainer as they do
 * over a real channel (without it a CPU engine would run a whole rollout inside one microtask chain).
 */
export function inlineRunner(handler: HttpHandler, opts: { concurrency?: number } = {}): JobRunner {
  const hop: HttpHandler = async (req) => {
    await tick();
    return handler(req);
  };
  const limit = opts.concurrency ?? Number.POSITIVE_INFINITY;
  let running = 0;
  let closed = false;
  const queue: (() => void)[] = [];
  const release = () => {
    running--;
    queue.shift()?.();
  };
  return {
    async run(job, signal) {
      if (running >= limit) await new Promise<void>((r) => queue.push(r));
      running++;
      try {
        if (closed || signal?.aborted)
          return { type: 'failed', rolloutId: job.rolloutId, error: 'cancelled' };
        return (await runJob(job, hop)) as JobEnd;
      } finally {
        release();
      }
    },
    close() {
      closed = true;
    },
  };
}

export interface HarnessSourceOptions {
  harness: HarnessName;
  behaviours: Behaviour[];
  maxTurns: number | null;
  proxy: LlmProxy;
  runner: JobRunner;
  /** close the runner with the source (false when several sources share one pool) */
  ownsRunner?: boolean;
  apiKey?: string;
  now?: () => number;
}

export class SourceClosedError extends Error {}

/** Harness agents in a worker pool against the in-process proxy. */
export class HarnessRolloutSource implements RolloutSource {
  private readonly done: Rollout[] = [];
  private waiters: { resolve: (r: Rollout) => void; reject: (e: Error) => void }[] = [];
  private inFlight = 0;
  private closed = false;
  /** one controller per running rollout (a shared signal would collect a listener per job) */
  private readonly aborts = new Set<AbortController>();
  private readonly submitted = new Set<string>();
  readonly rejections: { rolloutId: string; atMs: number }[] = [];

  constructor(private readonly opts: HarnessSourceOptions) {}

  /** Whether this source started the rollout (routing its reward events to the right proxy). */
  owns(rolloutId: string): boolean {
    return this.submitted.has(rolloutId);
  }

  /** Called by the proxy's onPausedRejection hook (wired by the caller that built the proxy). */
  noteRejection(rolloutId: string, atMs: number): void {
    this.rejections.push({ rolloutId, atMs });
  }

  submit(groups: GroupRequest[]): void {
    if (this.closed) throw new SourceClosedError('rollout source is closed');
    for (const g of groups)
      g.rolloutIds.forEach((rid, k) => {
        this.submitted.add(rid);
        this.inFlight++;
        void this.runOne(g, rid, k);
      });
  }

  private async runOne(g: GroupRequest, rolloutId: string, k: number): Promise<void> {
    const now = this.opts.now ?? Date.now;
    const job: HarnessJob = {
      rolloutId,
      harness: this.opts.harness,
      task: g.task as HarnessJob['task'],
      ...rolloutPaths(rolloutId, g.split),
      apiKey: this.opts.apiKey ?? '',
      behaviours: this.opts.behaviours,
      maxTurns: this.opts.maxTurns ?? undefined,
    };
    const startMs = now();
    let end: JobEnd;
    const abort = new AbortController();
    this.aborts.add(abort);
    try {
      end = await this.opts.runner.run(job, abort.signal);
    } catch (e) {
      end = { type: 'failed', rolloutId, error: e instanceof Error ? e.message : String(e) };
    } finally {
      this.aborts.delete(abort);
    }
    const rec = this.opts.proxy.take(rolloutId);
    this.submitted.delete(rolloutId);
    const rollout = recordedRollout(end, rec, {
      rolloutId,
      dataId: g.dataId,
      split: g.split,
      step: g.step,
      sampleIdxInStep: g.sampleIdx * g.rolloutIds.length + k,
      harness: this.opts.harness,
      behaviours: this.opts.behaviours,
      engine: this.opts.proxy.engine,
      task: g.task,
      timing: { start_ms: startMs, end_ms: now() },
    });
    this.inFlight--;
    const w = this.waiters.shift();
    if (w) w.resolve(rollout);
    else this.done.push(rollout);
  }

  next(): Promise<Rollout> {
    const r = this.done.shift();
    if (r) return Promise.resolve(r);
    if (this.closed) return Promise.reject(new SourceClosedError('rollout source is closed'));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  pending(): number {
    return this.inFlight + this.done.length;
  }

  async pause(reason: string, retryAfterSeconds?: number): Promise<DrainInfo> {
    const proxy = this.opts.proxy;
    if (retryAfterSeconds !== undefined) proxy.setRetryAfter(retryAfterSeconds);
    const inflightAtPause = proxy.state().inflight;
    const t0 = (this.opts.now ?? Date.now)();
    await proxy.pause(reason);
    return { inflightAtPause, drainMs: (this.opts.now ?? Date.now)() - t0 };
  }

  resume(): void {
    this.opts.proxy.resume();
  }

  setPolicyVersion(version: number): void {
    this.opts.proxy.setPolicyVersion(version);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const a of this.aborts) a.abort();
    this.opts.proxy.resume();
    if (this.opts.ownsRunner ?? true) this.opts.runner.close();
    for (const w of this.waiters.splice(0)) w.reject(new SourceClosedError('rollout source is closed'));
  }
}
