/**
 * A run on this machine (Node or the page): harness workers → two in-process proxies (training calls at the
 * rollout temperature, validation calls at val_kwargs; one handler routes by the rollout's mode) → the rollout
 * engine; the trainer updates its policy engine and syncs the rollout engine. Only the worker pool is given
 * (`makeRunner`: worker_threads in Node, Web Workers in the page, inline in tests), so the rest is identical
 * everywhere.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { LlamaFolder } from '../engine/llama/hfFolder';
import type { PolicyEngine } from '../engine/policy/types';
import type { HttpHandler } from '../harness/http';
import { LlmProxy } from '../harness/proxy';
import type { RunState } from './checkpoint';
import type { TrainConfig } from './config';
import type { TrainEvent } from './events';
import type { RolloutEngine } from './rolloutEngine';
import { type RolloutEngineEnv, rolloutEngineFor } from './rolloutEngines';
import { TrainRun } from './run';
import { HarnessRolloutSource, type JobRunner } from './source';
import type { TrainStorage } from './storage';

export interface LocalRunOptions {
  config: TrainConfig;
  policy: PolicyEngine;
  tokenizer: ChatTokenizer;
  /** the harness worker pool, serving `handler` (both proxies) to its workers */
  makeRunner: (handler: HttpHandler) => JobRunner;
  /**
   * default: the engine the config names (actor_rollout_ref.rollout.name; rolloutEngines.ts): `policy`
   * samples from `policy` itself (colocated), the others are built from its current weights
   */
  rolloutEngine?: RolloutEngine;
  /** the Llama-family folder `policy` was built from (params unused), for a rollout engine that exports it */
  rolloutModel?: LlamaFolder | null;
  /** where those engines get their runtime (default: the platform's, rolloutEnvNode.ts / rolloutEnvPage.ts) */
  rolloutEnv?: RolloutEngineEnv;
  reference?: PolicyEngine | null;
  storage?: TrainStorage | null;
  onEvent?: (e: TrainEvent) => void;
  now?: () => number;
  resumeState?: RunState;
  consoleLog?: boolean;
}

export interface LocalRun {
  run: TrainRun;
  trainProxy: LlmProxy;
  valProxy: LlmProxy;
  rolloutEngine: RolloutEngine;
  /** stops workers and releases the rollout engine (not the trainer's policy) */
  close(): void;
}

const CHAT_MODE = /\/mode\/(train|val)\/openai\//;
const EVENTS = /^\/api\/rollouts\/([^/]+)\/attempt\//;

export function createLocalRun(o: LocalRunOptions): LocalRun {
  const cfg = o.config;
  const ro = cfg.actor_rollout_ref.rollout;
  const rolloutEngine =
    o.rolloutEngine ??
    rolloutEngineFor({
      config: cfg,
      policy: o.policy,
      model: o.rolloutModel,
      tokenizer: o.tokenizer,
      env: o.rolloutEnv,
    });
  const version = o.resumeState?.policyVersion ?? 0;
  let trainSource: HarnessRolloutSource | null = null;
  let valSource: HarnessRolloutSource | null = null;
  const proxyFor = (mode: 'train' | 'val') => {
    const val = mode === 'val';
    const temperature = val ? (ro.val_kwargs.do_sample ? ro.val_kwargs.temperature : 0) : ro.temperature;
    return new LlmProxy({
      engine: rolloutEngine.chat({ temperature, topP: val ? ro.val_kwargs.top_p : ro.top_p }),
      tokenizer: o.tokenizer,
      maxContextTokens: ro.max_model_len,
      maxResponseTokens: cfg.data.max_response_length,
      // Agent Lightning's proxy forces the sampling temperature; validation samples at val_kwargs
      temperature,
      retryAfterSeconds: 0.1,
      now: o.now,
      policyVersion: version,
      onPausedRejection: (rid, at) => (val ? valSource : trainSource)?.noteRejection(rid, at),
    });
  };
  const trainProxy = proxyFor('train');
  const valProxy = proxyFor('val');
  const handler: HttpHandler = (req) => {
    const path = req.path.split('?')[0];
    const m = CHAT_MODE.exec(path);
    if (m) return (m[1] === 'val' ? valProxy : trainProxy).handle(req);
    const e = EVENTS.exec(path);
    if (e && valSource?.owns(decodeURIComponent(e[1]))) return valProxy.handle(req);
    return trainProxy.handle(req);
  };
  const runner = o.makeRunner(handler);
  const common = {
    harness: cfg.lab.harness,
    behaviours: cfg.lab.behaviours,
    maxTurns: cfg.lab.max_turns,
    runner,
    ownsRunner: false,
    now: o.now,
  };
  trainSource = new HarnessRolloutSource({ ...common, proxy: trainProxy });
  valSource = new HarnessRolloutSource({ ...common, proxy: valProxy });
  const run = new TrainRun({
    config: cfg,
    policy: o.policy,
    reference: o.reference ?? null,
    tokenizer: o.tokenizer,
    rolloutEngine,
    source: trainSource,
    valSource,
    storage: o.storage,
    onEvent: o.onEvent,
    now: o.now,
    resumeState: o.resumeState,
    consoleLog: o.consoleLog,
  });
  const ts = trainSource;
  const vs = valSource;
  return {
    run,
    trainProxy,
    valProxy,
    rolloutEngine,
    close() {
      ts.close();
      vs.close();
      runner.close();
      if (rolloutEngine !== o.rolloutEngine) rolloutEngine.dispose();
    },
  };
}
