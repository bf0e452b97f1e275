/** Test helpers: the gateway as a real child process, and a REST + SSE client of it. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { PROJECT_ROOT } from '../../src/cli/clusterBundle';
import { parseRunEvent, type RunEvent, type SequencedEvent } from '../../src/server/protocol/api';

export interface GatewayProcess {
  proc: ChildProcess;
  url: string;
  /** the token, when this start printed one */
  token: string | null;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export async function startGateway(
  args: string[],
  env: Record<string, string> = {},
): Promise<GatewayProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/lab.ts', 'gateway', ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  let url = '';
  let token: string | null = null;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output.join('\n')}`)), 60_000);
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) {
        output.push(l);
        const m = /^gateway: listening on (http:\/\/\S+)/.exec(l);
        if (m) url = m[1].replace(/\/$/, '');
        const t = /^gateway: open \S+\?token=(\S+)/.exec(l);
        if (t) token = t[1];
        if (/^gateway: (open|use the token)/.test(l)) {
          clearTimeout(timer);
          resolve();
        }
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${output.join('\n')}`));
    });
  });
  proc.removeAllListeners('exit');
  return {
    proc,
    url,
    token,
    output,
    stop: (signal = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill(signal);
      }),
  };
}

export class GatewayClient {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(this.url + path, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.call(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as T;
  }
}

/**
 * A run's SSE stream read with fetch (so the bearer header can be sent) and eventsource-parser; every event
 * is checked with the protocol's validator. `lastId` is what a reconnect sends as Last-Event-ID.
 */
export class RunStream {
  readonly events: SequencedEvent[] = [];
  lastId = 0;
  error: Error | null = null;
  private abort = new AbortController();
  private waiters: (() => void)[] = [];

  constructor(
    private readonly client: GatewayClient,
    private readonly runId: string,
  ) {}

  open(lastEventId?: number): this {
    this.abort = new AbortController();
    const headers: Record<string, string> = { authorization: `Bearer ${this.client.token}` };
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => {
        const seq = Number(m.id);
        const event = parseRunEvent(m.event ?? '', JSON.parse(m.data));
        this.events.push({ seq, event });
        this.lastId = seq;
        for (const w of this.waiters.splice(0)) w();
      },
    });
    void (async () => {
      try {
        const res = await fetch(`${this.client.url}/api/runs/${this.runId}/events`, {
          headers,
          signal: this.abort.signal,
        });
        if (res.status !== 200 || !res.body) throw new Error(`SSE answered HTTP ${res.status}`);
        if (!res.headers.get('content-type')?.startsWith('text/event-stream'))
          throw new Error(`SSE content-type ${res.headers.get('content-type')}`);
        const decoder = new TextDecoder();
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(decoder.decode(value, { stream: true }));
        }
      } catch (e) {
        if (!this.abort.signal.aborted) this.error = e as Error;
      }
      for (const w of this.waiters.splice(0)) w();
    })();
    return this;
  }

  close(): void {
    this.abort.abort();
  }

  of<K extends RunEvent['kind']>(kind: K): Extract<RunEvent, { kind: K }>[] {
    return this.events
      .filter((e) => e.event.kind === kind)
      .map((e) => e.event as Extract<RunEvent, { kind: K }>);
  }

  async until(what: string, f: () => boolean, ms: number): Promise<void> {
    const t0 = Date.now();
    while (!f()) {
      if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 500);
      });
    }
  }
}

export async function until(what: string, f: () => Promise<boolean> | boolean, ms: number, every = 500) {
  const t0 = Date.now();
  while (!(await f())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}
