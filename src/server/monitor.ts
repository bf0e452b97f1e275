/**
 * Follows one run's Ray job and writes what it sees into the store:
 * - status: `GET /api/version` (Ray's session) and `GET /api/jobs/{id}` every second (Ray's PENDING/RUNNING/…
 *   and its message). The run follows Ray's state: Ray forgetting the job, a new session (the cluster was
 *   restarted) or Ray unreachable for `rayLostAfterMs` (the cluster is gone) fail the run with that reason;
 * - log: the dashboard's log tail, from the stored character offset on; each complete line is kept and parsed
 *   for verl console-logger metrics, forwarded file-logger lines, the launcher's announcements (the job's Agent
 *   Lightning gateway, its rollout spool) and its error lines;
 * - rollouts: the job's spool (launch.py keeps every finished rollout on the cluster side, in order, before the
 *   trainer deletes it), read from the stored cursor with the Agent Lightning routes the spool mirrors
 *   (`/api/rollouts/terminal?after=`, then each rollout and its full events). The spool holds everything, so
 *   a gateway that was away, slow or busy catches up completely; only rollouts the spool itself could not read
 *   in time are counted as missed.
 * A fault (Ray or the spool unreachable) is recorded as a notice and retried with backoff; the loops stop once
 * the job is terminal and everything it left is read.
 */

import { AglGatewayClient } from '../train/aglSource';
import { fileLoggerPayload, parseConsoleLine, parseFileLoggerLine } from '../train/verlLog';
import { isTerminal, type RunState } from './protocol/api';
import { RayHttpError, type RayJob, type RayJobsClient, RayUnreachable } from './ray';
import type { GatewayStore, StoredRollout } from './store';

const LAUNCHER_MARK = '[harness-lab] ';

export interface MonitorOptions {
  statusPollMs?: number;
  /** how long Ray may stay unreachable before the run is failed (default 15 s) */
  rayLostAfterMs?: number;
  aglPollMs?: number;
  maxBackoffMs?: number;
  /** replaces the host of the job gateway's announced URL (an SSH tunnel, a NAT) */
  aglHostOverride?: string | null;
  onChange: () => void;
}

function rayToRunState(j: RayJob): RunState {
  switch (j.status) {
    case 'PENDING':
      return 'pending';
    case 'RUNNING':
      return 'running';
    case 'SUCCEEDED':
      return 'succeeded';
    case 'FAILED':
      return 'failed';
    case 'STOPPED':
      return 'stopped';
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** Splits streamed log text into complete lines, skipping the characters the store has already consumed. */
export class LogCursor {
  private skip: number;
  private pending = '';
  private consumed: number;
  constructor(offset: number) {
    this.skip = offset;
    this.consumed = offset;
  }
  /** Feeds a chunk; returns complete new lines and the offset after them. */
  feed(text: string): { lines: string[]; offset: number } {
    if (this.skip > 0) {
      const n = Math.min(this.skip, text.length);
      text = text.slice(n);
      this.skip -= n;
    }
    if (!text) return { lines: [], offset: this.consumed };
    const all = this.pending + text;
    const parts = all.split('\n');
    this.pending = parts.pop() ?? '';
    for (const p of parts) this.consumed += p.length + 1;
    return { lines: parts.map((l) => l.replace(/\r$/, '')), offset: this.consumed };
  }
  /** The unterminated last line (the job has ended). */
  flush(): { lines: string[]; offset: number } {
    if (!this.pending) return { lines: [], offset: this.consumed };
    const line = this.pending;
    this.consumed += line.length;
    this.pending = '';
    return { lines: [line], offset: this.consumed };
  }
}

export interface ParsedLines {
  metrics: { step: number; data: Record<string, number>; source: 'console' | 'file' }[];
  aglUrl: string | null;
  spoolUrl: string | null;
  errors: string[];
  notices: string[];
}

/** What a gateway takes from the job's log lines. */
export function parseJobLines(lines: string[]): ParsedLines {
  const out: ParsedLines = { metrics: [], aglUrl: null, spoolUrl: null, errors: [], notices: [] };
  for (const line of lines) {
    const payload = fileLoggerPayload(line);
    if (payload !== null) {
      try {
        const m = parseFileLoggerLine(payload);
        out.metrics.push({ ...m, source: 'file' });
      } catch (e) {
        out.notices.push(`unreadable file-logger line: ${(e as Error).message}`);
      }
      continue;
    }
    const i = line.indexOf(LAUNCHER_MARK);
    if (i >= 0) {
      const rest = line.slice(i + LAUNCHER_MARK.length);
      const kind = /^(agl-gateway|agl-spool) /.exec(rest)?.[1];
      if (kind) {
        try {
          const o = JSON.parse(rest.slice(kind.length + 1)) as { url?: unknown };
          if (typeof o.url === 'string' && /^https?:\/\//.test(o.url)) {
            if (kind === 'agl-gateway') out.aglUrl = o.url;
            else out.spoolUrl = o.url;
          }
        } catch {
          out.notices.push(`unreadable ${kind} announcement: ${rest.slice(0, 200)}`);
        }
      } else if (rest.startsWith('error ')) out.errors.push(rest.slice('error '.length));
      continue;
    }
    const m = parseConsoleLine(line);
    if (m && Object.keys(m.data).length) out.metrics.push({ ...m, source: 'console' });
  }
  return out;
}

function summarise(
  rid: string,
  header: Record<string, unknown>,
  events: unknown[],
  item: { state: string; data_id: string; is_train: boolean },
): Omit<StoredRollout, 'seq'> {
  const meta = (
    typeof header.metadata === 'object' && header.metadata !== null ? header.metadata : {}
  ) as Record<string, unknown>;
  const status = (typeof header.status === 'object' && header.status !== null ? header.status : {}) as Record<
    string,
    unknown
  >;
  const dataId = typeof meta.data_id === 'string' && meta.data_id ? meta.data_id : item.data_id || rid;
  let reward: number | null = null;
  let calls = 0;
  for (const e of events) {
    const ev = e as { event_type?: unknown; data?: { value?: unknown } };
    if (ev.event_type === 'model_request') calls++;
    if (ev.event_type === 'reward') {
      const v = ev.data?.value;
      reward = typeof v === 'number' && Number.isFinite(v) ? v : null;
    }
  }
  const doc = { rollout: { ...header, metadata: { ...meta, data_id: dataId } }, events };
  return {
    rolloutId: rid,
    state: typeof status.state === 'string' ? status.state : item.state,
    dataId,
    isTrain: typeof header.is_train === 'boolean' ? header.is_train : item.is_train,
    reward,
    calls,
    step: Number.isInteger(meta.batch_idx) ? (meta.batch_idx as number) : null,
    doc: JSON.stringify(doc),
  };
}

export class RunMonitor {
  private readonly abort = new AbortController();
  private jobTerminal = false;
  private lastErrors: string[] = [];
  private done: Promise<void> | null = null;

  constructor(
    private readonly store: GatewayStore,
    private readonly runId: string,
    private readonly ray: RayJobsClient,
    private readonly opts: MonitorOptions,
  ) {}

  start(): void {
    const s = this.abort.signal;
    this.done = Promise.all([this.statusLoop(s), this.logLoop(s), this.spoolLoop(s)]).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
  }

  /** Resolves when every loop has ended (the job is terminal and its log and rollouts are read). */
  finished(): Promise<void> {
    return this.done ?? Promise.resolve();
  }

  private notice(message: string): void {
    this.store.appendEvents(this.runId, [{ kind: 'notice', level: 'warning', message }]);
    this.opts.onChange();
  }

  private info(message: string): void {
    this.store.appendEvents(this.runId, [{ kind: 'notice', level: 'info', message }]);
    this.opts.onChange();
  }

  /** aborted when the monitor itself ends the run (Ray lost or restarted): the log tail stops waiting */
  private readonly ended = new AbortController();

  private fail(message: string): void {
    this.jobTerminal = true;
    this.ended.abort();
    this.store.updateRun(this.runId, { state: 'failed', message });
    this.opts.onChange();
  }

  private async statusLoop(signal: AbortSignal): Promise<void> {
    const poll = this.opts.statusPollMs ?? 1000;
    const lostAfter = this.opts.rayLostAfterMs ?? 15_000;
    // polls stay frequent enough during an outage to notice, within lostAfter, that it has lasted
    const maxBackoff = Math.min(this.opts.maxBackoffMs ?? 15_000, Math.max(poll, lostAfter / 5));
    let backoff = poll;
    let unreachableSince: number | null = null;
    while (!signal.aborted) {
      const run = this.store.run(this.runId);
      if (!run?.submissionId) return;
      try {
        const { session } = await this.ray.session();
        const job = await this.ray.job(run.submissionId);
        if (unreachableSince !== null) this.info(`Ray dashboard at ${this.ray.address} is reachable again`);
        unreachableSince = null;
        backoff = poll;
        if (session && run.raySession && session !== run.raySession)
          return this.fail(
            `the Ray cluster at ${this.ray.address} was restarted (session ${run.raySession}, now ${session}): the job and its processes are gone`,
          );
        if (session && !run.raySession) this.store.updateRun(this.runId, { raySession: session });
        if (!job)
          return this.fail(
            `Ray at ${this.ray.address} no longer knows job ${run.submissionId} (was the cluster restarted?)`,
          );
        let state = rayToRunState(job);
        if (run.state === 'stopping' && !isTerminal(state)) state = 'stopping';
        const message = job.message;
        if (isTerminal(state)) {
          // the log loop drains the rest of the log first, then the launcher's error (if any) joins the message
          this.jobTerminal = true;
          return this.finishStatus(state, message, signal);
        }
        if (state !== run.state || message !== run.message) {
          this.store.updateRun(this.runId, { state, message });
          this.opts.onChange();
        }
      } catch (e) {
        if (!(e instanceof RayUnreachable || e instanceof RayHttpError)) throw e;
        const now = Date.now();
        if (unreachableSince === null) {
          unreachableSince = now;
          this.notice(`${(e as Error).message}; retrying`);
        } else if (now - unreachableSince >= lostAfter)
          return this.fail(
            `Ray at ${this.ray.address} has not answered for ${Math.round((now - unreachableSince) / 1000)} s (${(e as Error).message}): the cluster is gone or out of reach, so the run is failed (its job stops itself when its Ray node dies)`,
          );
        backoff = Math.min(backoff * 2, maxBackoff);
      }
      await sleep(backoff, signal);
    }
  }

  private terminalResolvers: (() => void)[] = [];
  private logDrained = false;

  private async finishStatus(state: RunState, message: string, signal: AbortSignal): Promise<void> {
    // wait (bounded) for the log loop to read the rest of the log, so the final state carries the launcher's error
    const waitLog = new Promise<void>((r) => {
      if (this.logDrained) r();
      else this.terminalResolvers.push(r);
    });
    await Promise.race([waitLog, sleep(15_000, signal)]);
    const errors = this.lastErrors.length ? ` — ${this.lastErrors[this.lastErrors.length - 1]}` : '';
    this.store.updateRun(this.runId, { state, message: `${message}${state === 'failed' ? errors : ''}` });
    this.opts.onChange();
  }

  private overrideHost(url: string | null): string | null {
    if (!url || !this.opts.aglHostOverride) return url;
    const u = new URL(url);
    u.hostname = this.opts.aglHostOverride;
    return u.origin;
  }

  private ingestLines(lines: string[], offset: number): void {
    const parsed = parseJobLines(lines);
    if (parsed.errors.length) this.lastErrors.push(...parsed.errors);
    const aglUrl = this.overrideHost(parsed.aglUrl);
    this.store.ingestLog(this.runId, {
      newOffset: offset,
      lines,
      metrics: parsed.metrics,
      aglUrl,
      spoolUrl: this.overrideHost(parsed.spoolUrl),
      notices: parsed.notices,
    });
    this.opts.onChange();
  }

  private async logLoop(signal: AbortSignal): Promise<void> {
    let backoff = 500;
    try {
      while (!signal.aborted) {
        const run = this.store.run(this.runId);
        if (!run?.submissionId) return;
        const cursor = new LogCursor(run.logOffset);
        const terminalBefore = this.jobTerminal;
        try {
          await this.ray.tail(
            run.submissionId,
            (text) => {
              const { lines, offset } = cursor.feed(text);
              if (lines.length) this.ingestLines(lines, offset);
            },
            AbortSignal.any([signal, this.ended.signal]),
          );
          backoff = 500;
        } catch (e) {
          if (!(e instanceof RayUnreachable || e instanceof RayHttpError)) throw e;
          if (e instanceof RayHttpError && e.status === 404) return;
          backoff = Math.min(backoff * 2, this.opts.maxBackoffMs ?? 15_000);
        }
        if (signal.aborted) return;
        // The tail ends when the job ends; read the complete log once more so nothing after the last frame is lost.
        const job = await this.ray.job(run.submissionId).catch(() => undefined);
        if (
          job === null ||
          (job && ['SUCCEEDED', 'FAILED', 'STOPPED'].includes(job.status)) ||
          terminalBefore ||
          this.ended.signal.aborted
        ) {
          try {
            const all = await this.ray.logs(run.submissionId);
            const final = new LogCursor(this.store.run(this.runId)?.logOffset ?? 0);
            const a = final.feed(all);
            const b = final.flush();
            const lines = [...a.lines, ...b.lines];
            if (lines.length) this.ingestLines(lines, b.offset);
          } catch {
            // Ray forgot the job or is gone: what was read is kept
          }
          return;
        }
        await sleep(backoff, signal);
      }
    } finally {
      this.logDrained = true;
      for (const r of this.terminalResolvers.splice(0)) r();
    }
  }

  private async spoolLoop(signal: AbortSignal): Promise<void> {
    let backoff = this.opts.aglPollMs ?? 300;
    let outage = false;
    let failures = 0;
    let client: AglGatewayClient | null = null;
    let finalPass = false;
    let more = false;
    while (!signal.aborted) {
      const run = this.store.run(this.runId);
      if (!run) return;
      if (this.jobTerminal && this.logDrained && !more) {
        if (finalPass || !run.spoolUrl) return;
        finalPass = true;
      }
      more = false;
      if (!run.spoolUrl) {
        await sleep(500, signal);
        continue;
      }
      if (!client || client.baseUrl !== run.spoolUrl)
        client = new AglGatewayClient(run.spoolUrl, run.aglKey, fetch, 10_000, 0);
      try {
        const page = await client.terminal(run.rolloutCursor, 50);
        if (outage) this.info(`the job's rollout spool at ${run.spoolUrl} is reachable again`);
        outage = false;
        failures = 0;
        backoff = this.opts.aglPollMs ?? 300;
        const rollouts: Omit<StoredRollout, 'seq'>[] = [];
        for (const it of page.items) {
          const header = await client.rollout(it.rollout_id);
          const events = header ? await client.events(it.rollout_id) : null;
          if (header && events) rollouts.push(summarise(it.rollout_id, header, events, it));
        }
        const listed = page.next_after - run.rolloutCursor;
        const missed = listed - rollouts.length;
        if (listed > 0 || rollouts.length > 0) {
          this.store.ingestRollouts(this.runId, { nextCursor: page.next_after, rollouts, missed });
          this.opts.onChange();
        }
        more = page.items.length === 50;
        if (more) continue;
      } catch (e) {
        if (finalPass) return; // the job is over and its spool with it
        // A job that ends takes its spool down a moment before Ray reports the end: only a failure that
        // outlasts a few polls while the job still runs is an outage worth reporting.
        failures++;
        if (!outage && failures >= 3 && !this.jobTerminal) {
          this.notice(`${(e as Error).message}; retrying with backoff`);
          outage = true;
        }
        backoff = Math.min(backoff * 2, 5000);
      }
      await sleep(backoff, signal);
    }
  }
}
