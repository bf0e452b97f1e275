/**
 * A client of the Ray Jobs REST API (the Ray dashboard, default port 8265) over `node:http`. The dashboard
 * sends no CORS headers and answers 405 to POST/DELETE requests that look browser-made (an Origin, Referer or
 * Sec-Fetch-* header, a Mozilla user agent); Node's fetch adds `sec-fetch-mode`, so requests are made here with
 * plain node:http and only the headers listed below.
 *
 *   GET    /api/version                         {ray_version, …}
 *   GET    /api/v0/nodes                        state API: nodes with resources_total
 *   POST   /api/jobs/                           submit (the trailing slash is required)
 *   GET    /api/jobs/{id}                       JobDetails
 *   GET    /api/jobs/{id}/logs                  {logs}
 *   WS     /api/jobs/{id}/logs/tail             the log from its start, then as it grows
 *   POST   /api/jobs/{id}/stop                  {stopped}
 *   DELETE /api/jobs/{id}                       {deleted}
 *   GET    /api/packages/gcs/{name}             200 when the package is in the GCS, 404 otherwise
 *   PUT    /api/packages/gcs/_ray_pkg_<sha1>.zip  the working_dir zip
 *
 * Token auth (`RAY_AUTH_MODE=token`) sends `Authorization: Bearer <token>` from the gateway's own
 * configuration (a `RayToken`), and only to the address that configuration names. A token read from a file is
 * read again when Ray rejects it (401/403: the head restarted with a new token) and the request is sent once
 * more with the new one. Every reply is validated; a refused connection is a `RayUnreachable`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import WebSocket from 'ws';
import { arr, num, obj, optInt, optStr, str, WireError } from './protocol/read';

export const RAY_JOB_STATES = ['PENDING', 'RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED'] as const;
export type RayJobState = (typeof RAY_JOB_STATES)[number];

export interface RayJob {
  submissionId: string;
  status: RayJobState;
  message: string;
  startTimeMs: number | null;
  endTimeMs: number | null;
  driverExitCode: number | null;
}

export interface SubmitSpec {
  entrypoint: string;
  submissionId: string;
  runtimeEnv?: { working_dir?: string; env_vars?: Record<string, string> };
  metadata?: Record<string, string>;
  entrypointNumCpus?: number;
  entrypointNumGpus?: number;
}

export interface NodeSummary {
  nodes: number;
  cpus: number;
  gpus: number;
}

/** The dashboard could not be reached at all (refused, reset, DNS, timeout). */
export class RayUnreachable extends Error {}

/** The dashboard answered with an error status. */
export class RayHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The Ray token of a `RAY_AUTH_MODE=token` cluster: a fixed string ($RAY_AUTH_TOKEN) or a file, which `reload`
 * reads again (a restarted head writes a new token to the same file).
 */
export class RayToken {
  private value: string;
  constructor(
    value: string,
    private readonly file: string | null = null,
  ) {
    this.value = value;
  }

  static fromFile(path: string): RayToken {
    return new RayToken(RayToken.read(path), path);
  }

  private static read(path: string): string {
    const t = readFileSync(path, 'utf8').trim();
    if (!t) throw new Error(`the Ray token file ${path} is empty`);
    return t;
  }

  get current(): string {
    return this.value;
  }

  /** Reads the file again; true when the token changed (a request refused with the old one is worth repeating). */
  reload(): boolean {
    if (!this.file) return false;
    let next: string;
    try {
      next = RayToken.read(this.file);
    } catch {
      return false;
    }
    if (next === this.value) return false;
    this.value = next;
    return true;
  }
}

export interface RayClientOptions {
  /** dashboard origin, e.g. http://127.0.0.1:8265 */
  address: string;
  /** Ray token (RAY_AUTH_MODE=token) */
  token?: RayToken | string | null;
  timeoutMs?: number;
}

interface RawReply {
  status: number;
  body: Buffer;
}

export class RayJobsClient {
  readonly address: string;
  private readonly tokenSource: RayToken | null;
  private readonly timeoutMs: number;

  constructor(opts: RayClientOptions) {
    const u = new URL(opts.address);
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new Error(`Ray address must be http(s)://host:port, got ${opts.address}`);
    this.address = u.origin;
    this.tokenSource = typeof opts.token === 'string' ? new RayToken(opts.token) : (opts.token ?? null);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  private get token(): string | null {
    return this.tokenSource?.current ?? null;
  }

  get tokenAuth(): boolean {
    return this.token !== null;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'harness-lab-gateway',
      ...extra,
    };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    return h;
  }

  /**
   * One request. Node's global agent keeps connections alive, and a kept-alive socket the dashboard closed at
   * the same moment fails with ECONNRESET/EPIPE before anything was processed: a GET is then sent once more.
   */
  private async raw(method: string, path: string, body?: Buffer, contentType?: string): Promise<RawReply> {
    let r: RawReply;
    try {
      r = await this.once(method, path, body, contentType);
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (method === 'GET' && (code === 'ECONNRESET' || code === 'EPIPE'))
        r = await this.once(method, path, body, contentType);
      else throw e;
    }
    // a refused token that its file has replaced since (the head restarted): once more with the new one
    if ((r.status === 401 || r.status === 403) && this.tokenSource?.reload())
      r = await this.once(method, path, body, contentType);
    return r;
  }

  private once(method: string, path: string, body?: Buffer, contentType?: string): Promise<RawReply> {
    const url = new URL(path, this.address);
    const headers = this.headers(body ? { 'content-type': contentType ?? 'application/json' } : {});
    if (body) headers['content-length'] = String(body.length);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, timeout: this.timeoutMs }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', (e) => reject(new RayUnreachable(`Ray dashboard at ${this.address}: ${e.message}`)));
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (e: NodeJS.ErrnoException) =>
        reject(
          Object.assign(
            new RayUnreachable(`Ray dashboard at ${this.address} is unreachable: ${e.code ?? e.message}`),
            {
              code: e.code,
            },
          ),
        ),
      );
      if (body) req.write(body);
      req.end();
    });
  }

  private async json(method: string, path: string, body?: unknown): Promise<unknown> {
    const r = await this.raw(
      method,
      path,
      body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
    );
    const text = r.body.toString('utf8');
    if (r.status === 401 || r.status === 403)
      throw new RayHttpError(
        r.status,
        `Ray dashboard refused ${method} ${path} (HTTP ${r.status}): ${this.token ? 'the Ray token was rejected' : 'it needs a Ray token (RAY_AUTH_MODE=token); give the gateway --ray-token-file or RAY_AUTH_TOKEN'}`,
      );
    if (r.status < 200 || r.status >= 300)
      throw new RayHttpError(
        r.status,
        `Ray dashboard: ${method} ${path} answered HTTP ${r.status}: ${text.slice(0, 2000)}`,
      );
    try {
      return text === '' ? null : JSON.parse(text);
    } catch {
      throw new RayHttpError(
        r.status,
        `Ray dashboard: ${method} ${path} answered non-JSON: ${text.slice(0, 300)}`,
      );
    }
  }

  async version(): Promise<string> {
    return (await this.session()).version;
  }

  /**
   * Ray's version and the head's session name (`session_<date>_<pid>`, new on every `ray start`): a changed
   * session means the cluster was restarted and every job it ran is gone.
   */
  async session(): Promise<{ version: string; session: string | null }> {
    const o = obj(await this.json('GET', '/api/version'), 'Ray /api/version');
    return {
      version: str(o.ray_version, 'Ray /api/version.ray_version'),
      session: optStr(o.session_name, 'Ray /api/version.session_name') ?? null,
    };
  }

  /** Alive nodes and their total CPUs and GPUs (state API). */
  async nodes(): Promise<NodeSummary> {
    const o = obj(await this.json('GET', '/api/v0/nodes?limit=1000'), 'Ray /api/v0/nodes');
    const data = obj(o.data, 'Ray /api/v0/nodes.data');
    const result = obj(data.result, 'Ray /api/v0/nodes.data.result');
    let nodes = 0;
    let cpus = 0;
    let gpus = 0;
    arr(result.result, 'Ray /api/v0/nodes.data.result.result').forEach((n, i) => {
      const p = `Ray node ${i}`;
      const node = obj(n, p);
      if (str(node.state, `${p}.state`) !== 'ALIVE') return;
      nodes++;
      const res = obj(node.resources_total ?? {}, `${p}.resources_total`);
      if (res.CPU !== undefined) cpus += num(res.CPU, `${p}.resources_total.CPU`);
      if (res.GPU !== undefined) gpus += num(res.GPU, `${p}.resources_total.GPU`);
    });
    return { nodes, cpus, gpus };
  }

  /** Uploads a working_dir zip unless the GCS already holds it; returns its `gcs://` URI. */
  async uploadPackage(zip: Uint8Array): Promise<string> {
    const name = `_ray_pkg_${createHash('sha1').update(zip).digest('hex')}.zip`;
    const path = `/api/packages/gcs/${name}`;
    const head = await this.raw('GET', path);
    if (head.status === 401 || head.status === 403) await this.json('GET', path); // throws the auth error
    if (head.status !== 200) {
      const put = await this.raw('PUT', path, Buffer.from(zip), 'application/octet-stream');
      if (put.status !== 200)
        throw new RayHttpError(
          put.status,
          `Ray refused the package upload (HTTP ${put.status}): ${put.body.toString('utf8').slice(0, 1000)}`,
        );
    }
    return `gcs://${name}`;
  }

  async submit(spec: SubmitSpec): Promise<string> {
    const body: Record<string, unknown> = { entrypoint: spec.entrypoint, submission_id: spec.submissionId };
    if (spec.runtimeEnv) body.runtime_env = spec.runtimeEnv;
    if (spec.metadata) body.metadata = spec.metadata;
    if (spec.entrypointNumCpus !== undefined) body.entrypoint_num_cpus = spec.entrypointNumCpus;
    if (spec.entrypointNumGpus !== undefined) body.entrypoint_num_gpus = spec.entrypointNumGpus;
    const o = obj(await this.json('POST', '/api/jobs/', body), 'Ray submit reply');
    return str(o.submission_id, 'Ray submit reply.submission_id');
  }

  /** The job, or null when Ray does not know it (404: never submitted, deleted, or the cluster restarted). */
  async job(submissionId: string): Promise<RayJob | null> {
    try {
      return parseJob(await this.json('GET', `/api/jobs/${encodeURIComponent(submissionId)}`));
    } catch (e) {
      if (e instanceof RayHttpError && e.status === 404) return null;
      throw e;
    }
  }

  async jobs(): Promise<RayJob[]> {
    return arr(await this.json('GET', '/api/jobs/'), 'Ray job list').map((j) => parseJob(j));
  }

  async logs(submissionId: string): Promise<string> {
    const o = obj(
      await this.json('GET', `/api/jobs/${encodeURIComponent(submissionId)}/logs`),
      'Ray job logs',
    );
    return str(o.logs, 'Ray job logs.logs');
  }

  async stop(submissionId: string): Promise<boolean> {
    const o = obj(
      await this.json('POST', `/api/jobs/${encodeURIComponent(submissionId)}/stop`),
      'Ray stop reply',
    );
    return o.stopped === true;
  }

  async delete(submissionId: string): Promise<boolean> {
    const o = obj(
      await this.json('DELETE', `/api/jobs/${encodeURIComponent(submissionId)}`),
      'Ray delete reply',
    );
    return o.deleted === true;
  }

  /**
   * Follows a job's log over the dashboard's WebSocket: `onText` receives the log from its beginning in
   * chunks, then as it grows; the promise settles when the dashboard closes the socket (job finished) or the
   * connection fails. Compression stays off: the dashboard's proxy drops compressed frames.
   */
  tail(submissionId: string, onText: (text: string) => void, signal?: AbortSignal): Promise<void> {
    const u = new URL(`/api/jobs/${encodeURIComponent(submissionId)}/logs/tail`, this.address);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    const headers: Record<string, string> = { 'user-agent': 'harness-lab-gateway' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    return new Promise((resolve, reject) => {
      // a refused handshake is retried by the caller's loop; a token its file replaced is picked up then
      const refused = (status: number) => {
        if (status === 401 || status === 403) this.tokenSource?.reload();
      };
      const ws = new WebSocket(u, { headers, perMessageDeflate: false, handshakeTimeout: this.timeoutMs });
      const abort = () => ws.terminate();
      signal?.addEventListener('abort', abort, { once: true });
      ws.on('message', (m: WebSocket.RawData) => onText(m.toString()));
      ws.on('unexpected-response', (_req, res) => {
        refused(res.statusCode ?? 0);
        reject(new RayHttpError(res.statusCode ?? 0, `Ray log tail answered HTTP ${res.statusCode}`));
        ws.terminate();
      });
      ws.on('error', (e: NodeJS.ErrnoException) =>
        reject(new RayUnreachable(`Ray log tail for ${submissionId}: ${e.code ?? e.message}`)),
      );
      ws.on('close', () => {
        signal?.removeEventListener('abort', abort);
        resolve();
      });
    });
  }
}

export function parseJob(v: unknown): RayJob {
  const o = obj(v, 'Ray job');
  const status = str(o.status, 'Ray job.status');
  if (!(RAY_JOB_STATES as readonly string[]).includes(status))
    throw new WireError(
      'Ray job.status',
      `must be one of ${RAY_JOB_STATES.join(', ')}, got ${JSON.stringify(status)}`,
    );
  return {
    submissionId: str(o.submission_id, 'Ray job.submission_id'),
    status: status as RayJobState,
    message: optStr(o.message, 'Ray job.message') ?? '',
    startTimeMs: optInt(o.start_time, 'Ray job.start_time'),
    endTimeMs: optInt(o.end_time, 'Ray job.end_time'),
    driverExitCode: optInt(o.driver_exit_code, 'Ray job.driver_exit_code'),
  };
}
