/**
 * Runs: a checked template + parameters submitted as a Ray job, then followed by a RunMonitor. The run is
 * written to the store before the job is submitted (under a submission id chosen here), so a gateway that dies
 * between the two finds the job again on restart; monitors of every unfinished run restart with the gateway.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { clusterFit, jobPackage, submitSpec } from './jobs';
import { RunMonitor } from './monitor';
import { isTerminal, parseSubmitRunBody, type RunSummary } from './protocol/api';
import { checkTemplateParams, type JobTemplate, type TemplateName } from './protocol/templates';
import { type NodeSummary, RayHttpError, RayJobsClient, type RayToken, RayUnreachable } from './ray';
import type { GatewayStore } from './store';

const isLoopback = (host: string) => /^(127\.|localhost$|::1$|\[::1\]$)/.test(host);

/** An error with the HTTP status the API answers it with. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export interface RunManagerOptions {
  store: GatewayStore;
  templates: Record<TemplateName, JobTemplate>;
  /** the dashboard address the operator configured at start (--ray-address): the only one the token goes to */
  rayAddress: string;
  rayToken: RayToken | null;
  /** whether `PUT /api/cluster` may switch to another address (--allow-ray-address-change); never with the token */
  allowAddressChange?: boolean;
  /** how long Ray may be unreachable before a run is failed (the cluster is taken as gone) */
  rayLostAfterMs?: number;
  /** where job gateways bind on the cluster (HL_AGL_HOST) */
  aglHost: string;
  aglHostOverride: string | null;
  root: string;
  clusterCli: string;
  statusPollMs?: number;
  aglPollMs?: number;
}

export class RunManager {
  private readonly monitors = new Map<string, RunMonitor>();
  readonly events = new EventEmitter();
  private rayAddress: string;

  constructor(private readonly opts: RunManagerOptions) {
    this.events.setMaxListeners(0);
    this.rayAddress = opts.rayAddress;
  }

  get address(): string {
    return this.rayAddress;
  }

  /** A client of `address`; it carries the Ray token only when that is the address configured at start. */
  ray(address = this.rayAddress): RayJobsClient {
    const token = address === this.opts.rayAddress ? this.opts.rayToken : null;
    return new RayJobsClient({ address, token });
  }

  /**
   * Switches the dashboard address for new runs (kept in memory only: a restart is back at --ray-address).
   * Refused unless the operator started the gateway with --allow-ray-address-change; the Ray token is never
   * sent to a switched address, only to the configured one.
   */
  setAddress(address: string): void {
    if (address !== this.opts.rayAddress && !this.opts.allowAddressChange)
      throw new ApiError(
        403,
        `the Ray address is fixed to ${this.opts.rayAddress} (--ray-address); start the gateway with --allow-ray-address-change to switch it from the page (the Ray token still goes only to ${this.opts.rayAddress})`,
        'address',
      );
    this.rayAddress = address;
  }

  private changed(runId: string): void {
    this.events.emit(runId);
    this.events.emit('*', runId);
  }

  private monitor(runId: string): void {
    const run = this.opts.store.run(runId);
    if (!run || this.monitors.has(runId)) return;
    const m = new RunMonitor(this.opts.store, runId, this.ray(run.rayAddress), {
      onChange: () => this.changed(runId),
      aglHostOverride: this.opts.aglHostOverride,
      rayLostAfterMs: this.opts.rayLostAfterMs,
      statusPollMs: this.opts.statusPollMs,
      aglPollMs: this.opts.aglPollMs,
    });
    this.monitors.set(runId, m);
    m.start();
    void m.finished().then(() => {
      if (this.monitors.get(runId) === m) this.monitors.delete(runId);
    });
  }

  /** Restarts the monitors of unfinished runs (gateway start-up). */
  async resume(): Promise<void> {
    for (const run of this.opts.store.runs()) {
      if (isTerminal(run.state)) continue;
      if (run.state === 'submitting') {
        // died between writing the run and hearing back from Ray: does Ray have the job?
        const job = run.submissionId
          ? await this.ray(run.rayAddress)
              .job(run.submissionId)
              .catch(() => undefined)
          : null;
        if (job === null) {
          this.opts.store.updateRun(run.id, {
            state: 'failed',
            message: 'the gateway stopped before Ray accepted the job',
          });
          continue;
        }
      }
      this.monitor(run.id);
    }
  }

  summary(id: string): RunSummary {
    const run = this.opts.store.run(id);
    if (!run) throw new ApiError(404, `no run ${JSON.stringify(id)}`);
    return this.opts.store.summary(run);
  }

  list(): RunSummary[] {
    return this.opts.store.runs().map((r) => this.opts.store.summary(r));
  }

  async submit(body: unknown): Promise<RunSummary> {
    let req: ReturnType<typeof parseSubmitRunBody>;
    let checked: ReturnType<typeof checkTemplateParams>;
    try {
      req = parseSubmitRunBody(body);
      checked = checkTemplateParams(this.opts.templates, req.template, req.params);
    } catch (e) {
      throw new ApiError(
        400,
        (e as Error).message,
        (e as { field?: string; path?: string }).field ?? (e as { path?: string }).path,
      );
    }
    const ray = this.ray();
    let raySession: string | null;
    let nodes: NodeSummary;
    try {
      raySession = (await ray.session()).session;
      nodes = await ray.nodes();
    } catch (e) {
      if (e instanceof RayUnreachable || e instanceof RayHttpError)
        throw new ApiError(503, `${(e as Error).message}; nothing was submitted`);
      throw e;
    }
    const template = checked.template.name;
    const unfit = clusterFit(template, checked.params, nodes);
    if (unfit) throw new ApiError(400, `${unfit}; nothing was submitted`, 'params');
    if (template === 'agl-verl' && (checked.params.nnodes as number) > 1 && isLoopback(this.opts.aglHost))
      throw new ApiError(
        400,
        `agl-verl on ${checked.params.nnodes} nodes needs the job's Agent Lightning gateway reachable from every node, but it binds ${this.opts.aglHost}: start the gateway with --agl-host 0.0.0.0 (or the head's address); nothing was submitted`,
        'params.nnodes',
      );
    const now = Date.now();
    const id = `run-${now.toString(36)}-${randomBytes(3).toString('hex')}`;
    const submissionId = `harness-lab-${id}`;
    const aglKey = randomBytes(24).toString('base64url');
    const ctx = {
      runId: id,
      submissionId,
      aglKey,
      aglHost: this.opts.aglHost,
      root: this.opts.root,
      clusterCli: this.opts.clusterCli,
    };
    const zip = jobPackage(template, checked.params, ctx);
    const store = this.opts.store;
    store.createRun({
      id,
      name: req.name ?? `${template} ${new Date(now).toISOString().slice(0, 19).replace('T', ' ')}`,
      template,
      params: checked.params,
      state: 'submitting',
      message: 'uploading the job package',
      submissionId,
      rayAddress: ray.address,
      raySession,
      aglKey,
      aglUrl: null,
      createdMs: now,
      updatedMs: now,
    });
    this.changed(id);
    try {
      const uri = await ray.uploadPackage(zip);
      await ray.submit(submitSpec(template, uri, ctx));
    } catch (e) {
      store.updateRun(id, { state: 'failed', message: `submission failed: ${(e as Error).message}` });
      this.changed(id);
      throw new ApiError(502, `Ray refused the job: ${(e as Error).message}`);
    }
    store.updateRun(id, { state: 'pending', message: 'submitted to Ray' });
    this.changed(id);
    this.monitor(id);
    return this.summary(id);
  }

  async stop(id: string): Promise<RunSummary> {
    const run = this.opts.store.run(id);
    if (!run) throw new ApiError(404, `no run ${JSON.stringify(id)}`);
    if (isTerminal(run.state)) throw new ApiError(409, `run ${id} is already ${run.state}`);
    if (!run.submissionId) throw new ApiError(409, `run ${id} has no Ray job`);
    try {
      await this.ray(run.rayAddress).stop(run.submissionId);
    } catch (e) {
      if (e instanceof RayUnreachable || e instanceof RayHttpError)
        throw new ApiError(503, `could not stop the job: ${(e as Error).message}`);
      throw e;
    }
    this.opts.store.updateRun(id, { state: 'stopping', message: 'stop requested' });
    this.changed(id);
    this.monitor(id);
    return this.summary(id);
  }

  /** Forgets a finished run (and asks Ray to delete its job, best effort). */
  async delete(id: string): Promise<void> {
    const run = this.opts.store.run(id);
    if (!run) throw new ApiError(404, `no run ${JSON.stringify(id)}`);
    if (!isTerminal(run.state)) throw new ApiError(409, `run ${id} is ${run.state}; stop it first`);
    await this.monitors.get(id)?.stop();
    if (run.submissionId)
      await this.ray(run.rayAddress)
        .delete(run.submissionId)
        .catch(() => false);
    this.opts.store.deleteRun(id);
    this.changed(id);
  }

  async close(): Promise<void> {
    await Promise.all([...this.monitors.values()].map((m) => m.stop()));
    this.monitors.clear();
  }
}
