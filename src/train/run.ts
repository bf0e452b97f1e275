/**
 * The run loop: Agent Lightning's `fit` on the testbed. Each step samples `data.train_batch_size` tasks of
 * the harness's train split (a seeded epoch order), runs `rollout.n` rollouts per task through the rollout
 * source, pauses the source and drains in-flight calls, trains (step.ts), pushes the weights to the rollout
 * engine as a new policy version, and resumes. Scheduling follows `agentlightning.async_rollout`:
 *   sync:  the whole batch of the step, then train;
 *   async: keep `async_train_batch_size` groups in flight, train on the first `train_batch_size` groups that
 *          complete, carry the rest over (their agents wait on 429s during the update and continue under the
 *          new weights, so one rollout can hold calls from several policy versions; staleness is recorded per
 *          call and rollout and as verl 0.9's `training/off_policy/*`; `trainer.v1.sampler.max_off_policy_threshold`
 *          caps it: `max_off_policy_strategy` drop evicts groups beyond it and samples replacements until the
 *          batch is full, wait trains the in-flight groups reaching it first, oldest first; groups that
 *          finished past a full batch carry over complete and are trained before new ones).
 * Validation every `trainer.test_freq` steps, checkpoints every `trainer.save_freq`, metrics under verl's names
 * in verl's file-logger format, each step's batch kept as a trace, every phase timed and reported as an event.
 * The same code runs in Node and in the page: engines, the source's workers, storage and the clock are given.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import { toJsonlTrace } from '../core/trace/io';
import type { Rollout } from '../core/trace/types';
import { vocabMismatchMetrics } from '../core/vocabMismatch';
import type { PolicyEngine } from '../engine/policy/types';
import type { TaskBase } from '../harness/harness';
import { getHarness } from '../harness/registry';
import { encodeTrainCheckpoint, type RunState } from './checkpoint';
import type { TrainConfig } from './config';
import type { TrainEvent } from './events';
import { type Metrics, retokenizationMismatchRate, rolloutMetrics, validationMetrics } from './metrics';
import { annotateTrainerLogProbs, mergeRateOf } from './objective';
import { hashSeed, permutation } from './rng';
import type { RolloutEngine } from './rolloutEngine';
import type { GroupRequest, RolloutSource } from './source';
import { type PhaseHook, type PhaseName, type StepOutcome, trainOnRollouts } from './step';
import type { TrainStorage } from './storage';
import { tick } from './tick';
import { fileLoggerLine, formatConsoleLine } from './verlLog';
import { measureVocabMismatch } from './vocabMismatch';

export interface TrainRunOptions {
  config: TrainConfig;
  /** the trainer's engine, holding the initial (or resumed) weights and optimizer state */
  policy: PolicyEngine;
  /** frozen initial policy for actor.use_kl_loss (else null) */
  reference?: PolicyEngine | null;
  tokenizer: ChatTokenizer;
  rolloutEngine: RolloutEngine;
  /** training rollouts (train split) and validation rollouts (val split, val_kwargs sampling) */
  source: RolloutSource;
  valSource: RolloutSource;
  storage?: TrainStorage | null;
  onEvent?: (e: TrainEvent) => void;
  now?: () => number;
  /** continue a run: its counters (weights and optimizer state are already in `policy`) */
  resumeState?: RunState;
  /** also print verl's console line per step through a 'log' event */
  consoleLog?: boolean;
}

export interface RunSummary {
  reason: 'done' | 'stopped';
  steps: number;
  /** every step's metrics (val metrics merged in, as verl logs them), step 0 = validation before training */
  history: { step: number; data: Metrics }[];
  state: RunState;
}

const pad6 = (n: number) => String(n).padStart(6, '0');

export class StopRequested extends Error {}

export class TrainRun {
  readonly config: TrainConfig;
  state: RunState;
  private readonly o: TrainRunOptions;
  private readonly now: () => number;
  private readonly tasks: TaskBase[];
  private readonly valTasks: TaskBase[];
  /** each val task's difficulty level (Harness.levelOf), for the per-level val reward */
  private readonly valLevels: Map<string, number>;
  private paused = false;
  /** when the current pause began (null: running), and the paused time before it */
  private pausedSince: number | null = null;
  private pausedTotalMs = 0;
  private resumeWaiters: (() => void)[] = [];
  private stopping = false;
  /** rejects once stop() is called; raced against every wait on rollouts */
  private readonly stopped: Promise<never>;
  private rejectStop: (e: StopRequested) => void = () => {};
  private phase: PhaseName | null = null;
  /** async: groups in flight from earlier steps, and what each has returned so far */
  private carry: GroupRequest[] = [];
  /** groups issued so far in `issued.step`: numbers a step's groups, replacements included, so ids never repeat */
  private issued = { step: 0, count: 0 };
  private readonly got = new Map<string, Rollout[]>();
  private readonly history: { step: number; data: Metrics }[] = [];
  private lastUpdateS = 1;
  private rolloutsDone = 0;
  private rolloutsTotal = 0;
  private genTokens = 0;
  private genSeconds = 0;
  private stepSeconds: number[] = [];

  constructor(opts: TrainRunOptions) {
    this.stopped = new Promise<never>((_, reject) => {
      this.rejectStop = reject;
    });
    this.stopped.catch(() => {});
    this.o = opts;
    this.config = opts.config;
    this.now = opts.now ?? Date.now;
    this.state = opts.resumeState ? { ...opts.resumeState } : { step: 0, policyVersion: 0, cursor: 0 };
    const lab = this.config.lab;
    const h = getHarness(lab.harness);
    this.tasks = h.makeTasks('train', lab.seed, lab.train_tasks, lab.task_level);
    this.valTasks = h.makeTasks('val', lab.seed, lab.val_tasks, lab.task_level);
    this.valLevels = new Map(this.valTasks.map((t) => [t.id, h.levelOf(t)]));
    if (this.config.actor_rollout_ref.rollout.max_model_len > opts.policy.config.contextLength)
      throw new Error(
        `actor_rollout_ref.rollout.max_model_len (${this.config.actor_rollout_ref.rollout.max_model_len}) exceeds the policy's context (${opts.policy.config.contextLength})`,
      );
  }

  private emit(e: TrainEvent): void {
    this.o.onEvent?.(e);
  }

  /** Finish the current phase, then wait (in-flight rollouts wait on 429s) until `resume()`. */
  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.pausedSince = this.now();
    if (this.phase === 'gen') void this.o.source.pause('run paused').catch(() => {});
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.pausedSince !== null) this.pausedTotalMs += this.now() - this.pausedSince;
    this.pausedSince = null;
    if (this.phase === 'gen') this.o.source.resume();
    for (const w of this.resumeWaiters.splice(0)) w();
  }

  /** End at the next phase boundary; rollouts still running are cancelled. */
  stop(): void {
    this.stopping = true;
    this.rejectStop(new StopRequested());
    this.resume();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Time spent paused so far (a step's wall time less this is its timing_s/step). */
  private pausedMs(): number {
    return this.pausedTotalMs + (this.pausedSince !== null ? this.now() - this.pausedSince : 0);
  }

  private async checkpointGate(): Promise<void> {
    await tick();
    if (this.stopping) throw new StopRequested();
    if (this.paused) await new Promise<void>((r) => this.resumeWaiters.push(r));
    if (this.stopping) throw new StopRequested();
  }

  private readonly timed =
    (step: number, timing: Metrics): PhaseHook =>
    async (name, f) => {
      const prev = this.phase;
      this.phase = name;
      const t0 = this.now();
      try {
        return await f();
      } finally {
        const t1 = this.now();
        this.phase = prev;
        timing[`timing_s/${name}`] = (timing[`timing_s/${name}`] ?? 0) + (t1 - t0) / 1000;
        this.emit({ type: 'phase', step, phase: name, startMs: t0, endMs: t1 });
      }
    };

  /** The next `count` tasks of the epoch order (a fresh seeded permutation each epoch). */
  private nextTasks(count: number, step: number): GroupRequest[] {
    const n = this.tasks.length;
    const out: GroupRequest[] = [];
    const lab = this.config.lab;
    if (this.issued.step !== step) this.issued = { step, count: 0 };
    for (let j = 0; j < count; j++) {
      const i = this.issued.count++;
      const c = this.state.cursor++;
      const epoch = Math.floor(c / n);
      const order = this.config.data.shuffle
        ? permutation(n, hashSeed(lab.seed, 'epoch', epoch))
        : Array.from({ length: n }, (_, k) => k);
      const task = this.tasks[order[c % n]];
      const dataId = `${task.id}@e${epoch}`;
      out.push({
        dataId,
        task,
        split: 'train',
        step,
        sampleIdx: i,
        rolloutIds: Array.from(
          { length: this.config.actor_rollout_ref.rollout.n },
          (_, k) => `${lab.harness}-s${lab.seed}-st${step}-${i}-${k}`,
        ),
      });
    }
    return out;
  }

  private reportRollout(step: number, split: 'train' | 'val', r: Rollout): void {
    const md = r.metadata as { start_ms?: number; end_ms?: number };
    this.emit({
      type: 'rollout',
      step,
      split,
      rolloutId: r.rolloutId,
      dataId: r.dataId,
      state: r.state === 'failed' ? 'failed' : 'succeeded',
      reward: r.finalReward,
      startMs: md.start_ms ?? r.calls[0]?.timings?.startMs ?? 0,
      endMs: md.end_ms ?? r.calls[r.calls.length - 1]?.timings?.endMs ?? 0,
      calls: r.calls.map((c) => ({
        startMs: c.timings?.startMs ?? 0,
        endMs: c.timings?.endMs ?? 0,
        policyVersion: c.engine?.policyVersion ?? null,
        httpStatus: c.httpStatus,
        promptTokens: c.promptTokenIds?.length ?? 0,
        responseTokens: c.responseTokenIds?.length ?? 0,
      })),
      ...(r.error ? { error: r.error } : {}),
    });
  }

  private progress(step: number): void {
    const total = this.config.trainer.total_training_steps;
    const per = this.stepSeconds.length
      ? this.stepSeconds.reduce((a, b) => a + b, 0) / this.stepSeconds.length
      : null;
    this.emit({
      type: 'progress',
      step,
      totalSteps: total,
      rolloutsDone: this.rolloutsDone,
      rolloutsTotal: this.rolloutsTotal,
      genTokensPerS: this.genSeconds > 0 ? this.genTokens / this.genSeconds : null,
      etaS: per === null ? null : per * Math.max(0, total - step),
    });
  }

  /** Collects the rollouts one step trains on (sync: all of its groups; async: the first complete groups). */
  private async collect(step: number, timing: Metrics): Promise<{ rollouts: Rollout[]; metrics: Metrics }> {
    const cfg = this.config;
    const src = this.o.source;
    const async = cfg.agentlightning.async_rollout.enabled;
    const want = cfg.data.train_batch_size;
    const prevCarry = this.carry.length;
    const fresh = this.nextTasks(
      async ? cfg.agentlightning.async_rollout.async_train_batch_size - prevCarry : want,
      step,
    );
    const active = [...this.carry, ...fresh];
    this.rolloutsTotal += fresh.length * cfg.actor_rollout_ref.rollout.n;
    const byId = new Map(active.map((g) => [g.dataId, g]));
    // wait can finish more groups than a batch: those carried over complete are trained before any new one
    const complete: GroupRequest[] = this.carry.filter(
      (g) => (this.got.get(g.dataId)?.length ?? 0) === g.rolloutIds.length,
    );
    const metrics: Metrics = {};
    let droppedStale = 0;
    const sampler = cfg.trainer.v1.sampler;
    const cap = sampler.max_off_policy_threshold;
    const waitFor = cap !== null && sampler.max_off_policy_strategy === 'wait';
    // wait: groups still running that have reached the threshold (first call ≈ the version they were submitted at)
    const reaching = () =>
      waitFor &&
      active.some(
        (g) => byId.has(g.dataId) && !complete.includes(g) && this.state.policyVersion - (g.step - 1) >= cap,
      );
    const t0 = this.now();
    await this.timed(step, timing)('gen', async () => {
      src.resume();
      if (this.paused) await src.pause('run paused');
      src.submit(fresh);
      // rollouts that finished during the previous update are queued in the source and come first
      while (complete.length < want || reaching()) {
        const r = await Promise.race([src.next(), this.stopped]);
        await tick();
        this.rolloutsDone++;
        this.genTokens += r.calls.reduce((a, c) => a + (c.responseTokenIds?.length ?? 0), 0);
        this.reportRollout(step, 'train', r);
        const list = this.got.get(r.dataId) ?? [];
        list.push(r);
        this.got.set(r.dataId, list);
        const g = byId.get(r.dataId);
        if (!g || list.length < g.rolloutIds.length) continue;
        const stale =
          cap !== null &&
          !waitFor &&
          list.some((x) =>
            x.calls.some((c) => this.state.policyVersion - (c.engine?.policyVersion ?? 0) > cap),
          );
        if (stale) {
          droppedStale++;
          this.got.delete(r.dataId);
          byId.delete(r.dataId);
          // replace the dropped group so the batch still fills
          const more = this.nextTasks(1, step);
          for (const m of more) {
            byId.set(m.dataId, m);
            active.push(m);
          }
          this.rolloutsTotal += cfg.actor_rollout_ref.rollout.n;
          src.submit(more);
          continue;
        }
        complete.push(g);
        this.progress(step);
      }
    });
    this.genSeconds += (this.now() - t0) / 1000;
    // wait: the oldest groups first, so those that reached the threshold are trained now
    if (waitFor) complete.sort((a, b) => a.step - b.step);
    const chosen = complete.slice(0, want);
    const chosenIds = new Set(chosen.map((g) => g.dataId));
    this.carry = active.filter((g) => !chosenIds.has(g.dataId) && byId.has(g.dataId));
    const rollouts: Rollout[] = [];
    for (const g of chosen) {
      rollouts.push(...(this.got.get(g.dataId) ?? []));
      this.got.delete(g.dataId);
    }
    if (rollouts.length !== chosen.length * cfg.actor_rollout_ref.rollout.n)
      throw new Error(
        `step ${step}: ${rollouts.length} rollouts collected for ${chosen.length} groups of rollout.n ${cfg.actor_rollout_ref.rollout.n}`,
      );
    if (async) {
      metrics['training/async/n_prev_carry_over_rollouts'] = prevCarry * cfg.actor_rollout_ref.rollout.n;
      metrics['training/async/n_completed_rollouts'] = rollouts.length;
      metrics['training/async/n_new_carry_over_rollouts'] =
        this.carry.length * cfg.actor_rollout_ref.rollout.n;
      metrics['training/async/new_carry_over_age_max_steps'] = this.carry.reduce(
        (a, g) => Math.max(a, step - g.step),
        0,
      );
      metrics['lab/async/n_dropped_stale_groups'] = droppedStale;
      metrics['training/off_policy/evicted_samples'] = droppedStale * cfg.actor_rollout_ref.rollout.n;
    }
    return { rollouts, metrics };
  }

  /** Validation rollouts on the val split with val_kwargs (n samples per task). */
  async validate(step: number, timing: Metrics = {}): Promise<Metrics> {
    const cfg = this.config;
    await this.o.rolloutEngine.ready?.();
    return this.timed(step, timing)('validate', async () => {
      const n = cfg.actor_rollout_ref.rollout.val_kwargs.n;
      const groups: GroupRequest[] = this.valTasks.map((task, i) => ({
        dataId: task.id,
        task,
        split: 'val',
        step,
        sampleIdx: i,
        rolloutIds: Array.from({ length: n }, (_, k) => `val-s${cfg.lab.seed}-st${step}-${i}-${k}`),
      }));
      const vs = this.o.valSource;
      vs.setPolicyVersion(this.state.policyVersion);
      vs.submit(groups);
      const rollouts: Rollout[] = [];
      for (let i = 0; i < groups.length * n; i++) {
        const r = await Promise.race([vs.next(), this.stopped]);
        await tick();
        this.reportRollout(step, 'val', r);
        rollouts.push(r);
      }
      const m = validationMetrics(
        rollouts,
        cfg.lab.pass_k,
        cfg.agentlightning.reward_fillna_value,
        mergeRateOf(rollouts, cfg),
        (dataId) => this.valLevels.get(dataId),
      );
      this.emit({ type: 'val', step, metrics: nullable(m) });
      return m;
    });
  }

  private async save(step: number, timing: Metrics): Promise<void> {
    const storage = this.o.storage;
    if (!storage) return;
    await this.timed(step, timing)('save_checkpoint', async () => {
      const policy = this.o.policy;
      const bytes = encodeTrainCheckpoint({
        policyConfig: policy.config,
        params: await policy.getParams(),
        optimizer: await policy.getOptimizerState(),
        state: this.state,
        config: this.config,
        metadata: { 'harness_lab.saved_at_step': String(step) },
        paramsLayout: policy.trainableLayout,
      });
      const path = `checkpoints/step_${pad6(step)}.safetensors`;
      await storage.writeFile(path, bytes);
      // the same weights in an upstream format beside it (a LoRA adapter: PEFT's folder)
      for (const [name, data] of Object.entries((await policy.exportFiles?.()) ?? {}))
        await storage.writeFile(`checkpoints/step_${pad6(step)}/${name}`, data);
      await storage.writeFile('checkpoints/latest', path);
      this.emit({ type: 'checkpoint', step, path });
    });
  }

  private async log(step: number, data: Metrics): Promise<void> {
    this.history.push({ step, data });
    await this.o.storage?.appendFile('metrics.jsonl', fileLoggerLine(step, data));
    if (this.o.consoleLog) this.emit({ type: 'log', level: 'info', message: formatConsoleLine(step, data) });
  }

  /** One full step: collect, pause + drain, train, sync weights, resume; metrics and trace kept. */
  async runStep(): Promise<{ step: number; metrics: Metrics; outcome: StepOutcome }> {
    const cfg = this.config;
    const step = this.state.step + 1;
    const timing: Metrics = {};
    const tStep = this.now();
    const pausedAtStart = this.pausedMs();
    const hook = this.timed(step, timing);
    await this.checkpointGate();
    await this.o.rolloutEngine.ready?.();
    const { rollouts, metrics } = await this.collect(step, timing);
    await this.checkpointGate();
    // Size Retry-After to the expected pause, so waiting agents neither spin nor oversleep.
    const retryAfter = Math.min(5, Math.max(0.05, this.lastUpdateS / 4));
    const drain = await hook('pause', () => this.o.source.pause(`training step ${step}`, retryAfter));
    metrics['training/async/proxy_inflight_at_pause'] = drain.inflightAtPause;
    metrics['training/async/proxy_drain_seconds'] = drain.drainMs / 1000;
    // both engines still hold the weights that sampled and now train on this batch
    const measured = cfg.lab.vocab_mismatch
      ? await hook('vocab_mismatch', () =>
          measureVocabMismatch(rollouts, {
            policy: this.o.policy,
            rolloutEngine: this.o.rolloutEngine,
            rolloutName: cfg.actor_rollout_ref.rollout.name,
            temperature: cfg.actor_rollout_ref.rollout.temperature,
            contextLength: this.o.policy.config.contextLength,
          }),
        )
      : rollouts;
    if (cfg.lab.vocab_mismatch)
      Object.assign(metrics, vocabMismatchMetrics(measured.flatMap((r) => r.calls)));
    const tUpdate = this.now();
    const outcome = await trainOnRollouts(
      { policy: this.o.policy, reference: this.o.reference ?? null, tokenizer: this.o.tokenizer },
      cfg,
      rollouts,
      step,
      hook,
    );
    Object.assign(metrics, outcome.metrics);
    const version = this.state.policyVersion + 1;
    await hook('update_weights', async () => {
      const params = await this.o.policy.getParams();
      const cost = await this.o.rolloutEngine.syncWeights(params, version);
      // an engine apart from the trainer re-exports the weights (timing_s/update_weights holds it all)
      if (cost) {
        metrics['lab/weight_sync/export_s'] = cost.exportMs / 1000;
        metrics['lab/weight_sync/load_s'] = cost.loadMs / 1000;
        metrics['lab/weight_sync/bytes'] = cost.bytes;
      }
      this.o.source.setPolicyVersion(version);
      this.o.valSource.setPolicyVersion(version);
    });
    this.lastUpdateS = (this.now() - tUpdate) / 1000;
    // staleness is measured against the version that trained on the rollouts
    Object.assign(metrics, rolloutMetrics(rollouts, this.state.policyVersion));
    this.state.policyVersion = version;
    this.state.step = step;
    await hook('resume', async () => this.o.source.resume());
    metrics['lab/merge_rate'] =
      outcome.rows.build.metrics['training/n_rollouts_w_trace'] > 0 &&
      cfg.agentlightning.trace_aggregator.level === 'trajectory'
        ? 1 -
          (outcome.rows.build.metrics['training/n_unmerged_rollouts'] ?? 0) /
            outcome.rows.build.metrics['training/n_rollouts_w_trace']
        : mergeRateOf(rollouts, cfg);
    for (const [k, v] of Object.entries(outcome.rows.mergeFailuresByKind))
      metrics[`lab/merge_failures/${k}`] = v;
    metrics['lab/retokenization_mismatch_rate'] = retokenizationMismatchRate(rollouts, this.o.tokenizer);
    const withRows = new Set(Array.from(outcome.rows.batch.rowRollout));
    metrics['lab/rows_per_rollout'] = withRows.size ? outcome.rows.batch.nRows / withRows.size : 0;
    metrics['lab/policy_version'] = version;
    if (outcome.skipped) metrics['lab/skipped_update'] = 1;
    const rej = this.o.source.rejections.splice(0);
    metrics['lab/n_paused_rejections'] = rej.length;
    if (rej.length) this.emit({ type: 'rejections', step, items: rej });
    const genS = timing['timing_s/gen'] ?? 0;
    const upd = timing['timing_s/update_actor'] ?? 0;
    metrics['lab/gen_tokens_per_s'] = genS > 0 ? (metrics['lab/gen_tokens'] ?? 0) / genS : Number.NaN;
    metrics['lab/train_tokens_per_s'] = upd > 0 ? outcome.trainTokens / upd : Number.NaN;
    if (cfg.lab.keep_traces && this.o.storage) {
      const annotated = annotateTrainerLogProbs(
        measured,
        outcome.rows,
        outcome.oldLogProbs,
        outcome.entropy,
      ).map((r) =>
        // the ids are the run tokenizer's: a reader (the page) decodes them with it
        r.metadata.tokenizer === undefined
          ? { ...r, metadata: { ...r.metadata, tokenizer: this.o.tokenizer.name } }
          : r,
      );
      const path = `traces/step_${pad6(step)}.jsonl`;
      await this.o.storage.writeFile(path, toJsonlTrace(annotated));
      this.emit({ type: 'trace', step, path });
    }
    const last = step >= cfg.trainer.total_training_steps;
    if (cfg.trainer.test_freq > 0 && (last || step % cfg.trainer.test_freq === 0))
      Object.assign(metrics, await this.validate(step, timing));
    if (cfg.trainer.save_freq > 0 && (last || step % cfg.trainer.save_freq === 0))
      await this.save(step, timing);
    // a pause is not the step's time: it is reported on its own
    const pausedS = (this.pausedMs() - pausedAtStart) / 1000;
    timing['timing_s/step'] = (this.now() - tStep) / 1000 - pausedS;
    metrics['lab/paused_s'] = pausedS;
    Object.assign(metrics, timing);
    this.stepSeconds.push(timing['timing_s/step']);
    await this.log(step, metrics);
    this.emit({ type: 'step', step, policyVersion: version, metrics: nullable(metrics) });
    this.progress(step);
    return { step, metrics, outcome };
  }

  /** Runs to trainer.total_training_steps (or until stop()). */
  async run(): Promise<RunSummary> {
    const cfg = this.config;
    this.emit({
      type: 'run_start',
      atMs: this.now(),
      backend: this.o.policy.backend,
      resumedFromStep: this.state.step,
      totalSteps: cfg.trainer.total_training_steps,
    });
    await this.o.storage?.writeFile('config.json', `${JSON.stringify(cfg, null, 2)}\n`);
    try {
      // a rollout engine built apart from the trainer (an ONNX session, a model load) must be up first
      await this.o.rolloutEngine.ready?.();
      if (this.state.step === 0 && cfg.trainer.val_before_train && cfg.trainer.test_freq > 0) {
        await this.checkpointGate();
        await this.log(0, await this.validate(0));
      }
      while (this.state.step < cfg.trainer.total_training_steps) await this.runStep();
    } catch (e) {
      if (e instanceof StopRequested) {
        this.emit({ type: 'run_end', atMs: this.now(), reason: 'stopped' });
        return { reason: 'stopped', steps: this.state.step, history: this.history, state: { ...this.state } };
      }
      this.emit({ type: 'run_end', atMs: this.now(), reason: 'error', error: (e as Error).message });
      throw e;
    }
    this.emit({ type: 'run_end', atMs: this.now(), reason: 'done' });
    return { reason: 'done', steps: this.state.step, history: this.history, state: { ...this.state } };
  }
}

function nullable(m: Metrics): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const [k, v] of Object.entries(m)) out[k] = Number.isFinite(v) ? v : null;
  return out;
}
