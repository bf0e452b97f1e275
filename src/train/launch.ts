/**
 * Building and starting a run, the same way for `lab train` (Node) and the Train tab's trainer worker (the page):
 * the config's rollout engine checked for the platform, the weights (a checkpoint's when resuming, else the
 * config's initial weights), the trainer's policy engine (`lab.backend`), the optimizer state of a resumed run,
 * the reference policy (`use_kl_loss`), the harness worker pool and the loop (createLocalRun). Only what differs
 * by platform is given (`RunPlatform`): the tokenizer, how shipped files are read, the WebGPU device, how a
 * harness worker is spawned.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { GpuContext, Unavailable } from '../engine/gpu/device';
import type { LlamaFolder } from '../engine/llama/hfFolder';
import { CpuPolicy, GpuPolicy, type PolicyEngine } from '../engine/policy';
import { serveChannel } from '../harness/http';
import { type WorkerHandle, WorkerPool } from '../harness/pool';
import type { TrainCheckpoint } from './checkpoint';
import type { TrainConfig } from './config';
import type { TrainEvent } from './events';
import { createLocalRun, type LocalRun } from './local';
import { initialWeights } from './models';
import { type RolloutEngineEnv, type RolloutPlatform, resolveRolloutChoice } from './rolloutEngines';
import type { TrainStorage } from './storage';

/** A run that cannot be built as configured: `path` is the config key to blame, `detail` what is wrong with it. */
export class RunLaunchError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`${path} ${detail}`);
  }
}

/** What a platform provides to runs. */
export interface RunPlatform {
  name: RolloutPlatform;
  tokenizer: ChatTokenizer;
  /** a file the project ships (initial weights, `checkpoints/<harness>.safetensors`), by its path in public/ */
  readShipped: (path: string) => Promise<Uint8Array>;
  /** a WebGPU device, or why there is none */
  gpu: () => Promise<GpuContext | Unavailable>;
  spawnHarnessWorker: () => WorkerHandle;
  /** how long a new harness worker may take to start (the pool's default when absent) */
  workerStartTimeoutMs?: number;
  /** the rollout engines' runtime (default: the platform's) */
  rolloutEnv?: RolloutEngineEnv;
}

export interface LaunchOptions {
  config: TrainConfig;
  /** continue from this checkpoint: its weights, optimizer state and run state */
  resume?: TrainCheckpoint | null;
  platform: RunPlatform;
  storage: TrainStorage | null;
  onEvent?: (e: TrainEvent) => void;
  consoleLog?: boolean;
  /** after everything the run needs was had and before the loop exists (a resumed run's later files go here) */
  beforeLoop?: () => Promise<void>;
  /**
   * A brought model (a Hugging Face folder) whose engines the platform built, a resumed run's trainable tensors
   * and optimizer state already restored: the run trains it instead of the config's initial weights, with its
   * tokenizer; `resume` then gives only the run state.
   */
  model?: BroughtModel | null;
}

export interface BroughtModel {
  policy: PolicyEngine;
  /** the KL reference (null without use_kl_loss) */
  reference: PolicyEngine | null;
  tokenizer: ChatTokenizer;
  /** where the weights came from */
  source: string;
  /** the WebGPU context its engines run on (destroyed when the run closes), or null on the CPU */
  gpu?: GpuContext | null;
  /** its folder without the weights (config, layout, tokenizer), for a rollout engine that exports it */
  folder?: LlamaFolder | null;
}

export interface LaunchedRun {
  local: LocalRun;
  /** the trainer's engine */
  policy: PolicyEngine;
  backend: 'webgpu' | 'cpu';
  /** why the backend is not the one asked for, or null */
  note: string | null;
  /** where the weights came from */
  weights: string;
  resumedFromStep: number | null;
  gpu: GpuContext | null;
  /** stops the workers, releases the rollout engine, both policies and the device */
  close(): void;
}

interface Engine {
  policy: PolicyEngine;
  backend: 'webgpu' | 'cpu';
  note: string | null;
  ctx: GpuContext | null;
}

/**
 * 'cpu': the CPU engine. 'webgpu': WebGPU, or (resuming) the CPU engine when the device cannot be had again,
 * saying so. 'auto': WebGPU on a hardware adapter; a software fallback adapter (SwiftShader) is slower than the
 * CPU engine, so 'auto' takes the CPU there and says why.
 */
async function engineFor(
  cfg: TrainConfig,
  weights: { config: TrainCheckpoint['policyConfig']; params: Float32Array },
  resuming: boolean,
  gpu: RunPlatform['gpu'],
): Promise<Engine> {
  const cpu = (note: string | null): Engine => ({
    policy: new CpuPolicy(weights.config, {}, weights.params),
    backend: 'cpu',
    note,
    ctx: null,
  });
  const asked = cfg.lab.backend;
  if (asked === 'cpu') return cpu(null);
  const got = await gpu().catch(
    (e: unknown): Unavailable => ({
      available: false,
      reason: `requestDevice() failed: ${e instanceof Error ? e.message : String(e)}`,
    }),
  );
  if (!('device' in got)) {
    if (asked === 'webgpu' && !resuming) throw new RunLaunchError('lab.backend', `webgpu: ${got.reason}`);
    return cpu(
      asked === 'webgpu'
        ? `the WebGPU device could not be had again (${got.reason}): resumed on the CPU engine`
        : `WebGPU unavailable (${got.reason}): on the CPU engine`,
    );
  }
  if (asked === 'auto' && got.status.isFallbackAdapter) {
    got.destroy();
    return cpu(
      `lab.backend auto: the WebGPU adapter (${got.status.vendor} / ${got.status.architecture}) is a software fallback, slower than the CPU engine; on the CPU engine (lab.backend webgpu uses it anyway)`,
    );
  }
  return {
    policy: GpuPolicy.create(got, weights.config, {}, weights.params),
    backend: 'webgpu',
    note: null,
    ctx: got,
  };
}

/** Builds a run (weights, engines, pool, loop) without starting it: `launched.local.run.run()` starts it. */
export async function launchRun(o: LaunchOptions): Promise<LaunchedRun> {
  const cfg = o.config;
  const p = o.platform;
  const { problem } = resolveRolloutChoice(cfg, p.name);
  if (problem) throw new RunLaunchError(problem.path, problem.message);
  const resume = o.resume ?? null;
  if (o.model) return launchLoop(o, o.model, resume);
  const w = resume
    ? {
        config: resume.policyConfig,
        params: resume.params,
        source: `checkpoint of step ${resume.state.step}`,
      }
    : await initialWeights(cfg, p.tokenizer.vocabSize, p.readShipped);
  const eng = await engineFor(cfg, w, resume !== null, p.gpu);
  let reference: PolicyEngine | null = null;
  const release = () => {
    reference?.dispose();
    eng.policy.dispose();
    eng.ctx?.destroy();
  };
  let local: LocalRun;
  try {
    if (resume) await eng.policy.setOptimizerState(resume.optimizer);
    if (cfg.actor_rollout_ref.actor.use_kl_loss) {
      const r = await initialWeights(cfg, p.tokenizer.vocabSize, p.readShipped);
      reference = new CpuPolicy(r.config, {}, r.params);
    }
    await o.beforeLoop?.();
    local = loopOf(o, eng.policy, reference, p.tokenizer, resume);
  } catch (e) {
    release();
    throw e;
  }
  return {
    local,
    policy: eng.policy,
    backend: eng.backend,
    note: eng.note,
    weights: w.source,
    resumedFromStep: resume ? resume.state.step : null,
    gpu: eng.ctx,
    close() {
      local.close();
      release();
    },
  };
}

/** A brought model's run: its engines as built (on the CPU or on the WebGPU context it brings). */
async function launchLoop(
  o: LaunchOptions,
  m: BroughtModel,
  resume: TrainCheckpoint | null,
): Promise<LaunchedRun> {
  const release = () => {
    m.reference?.dispose();
    m.policy.dispose();
    m.gpu?.destroy();
  };
  let local: LocalRun;
  try {
    await o.beforeLoop?.();
    local = loopOf(o, m.policy, m.reference, m.tokenizer, resume, m.folder ?? null);
  } catch (e) {
    release();
    throw e;
  }
  return {
    local,
    policy: m.policy,
    backend: m.policy.backend,
    note:
      o.config.lab.backend !== 'cpu' && m.policy.backend === 'cpu'
        ? `lab.backend ${o.config.lab.backend}: the Hugging Face model folder trains on the CPU engine`
        : null,
    weights: m.source,
    resumedFromStep: resume ? resume.state.step : null,
    gpu: m.gpu ?? null,
    close() {
      local.close();
      release();
    },
  };
}

function loopOf(
  o: LaunchOptions,
  policy: PolicyEngine,
  reference: PolicyEngine | null,
  tokenizer: ChatTokenizer,
  resume: TrainCheckpoint | null,
  rolloutModel: LlamaFolder | null = null,
): LocalRun {
  const cfg = o.config;
  const p = o.platform;
  return createLocalRun({
    config: cfg,
    policy,
    reference,
    tokenizer,
    storage: o.storage,
    rolloutEnv: p.rolloutEnv,
    rolloutModel,
    resumeState: resume?.state,
    consoleLog: o.consoleLog,
    makeRunner: (handler) =>
      new WorkerPool({
        size: cfg.lab.workers,
        spawn: p.spawnHarnessWorker,
        connect: (port) => serveChannel(port, handler),
        timeoutMs: cfg.lab.rollout_timeout_ms,
        startTimeoutMs: p.workerStartTimeoutMs,
      }),
    onEvent: o.onEvent,
  });
}
