/**
 * Training checkpoints: one safetensors file (engine/checkpoint.ts) holding the parameters, AdamW's moments
 * (`optimizer.m`, `optimizer.v`, laid out like the parameters) and, in the metadata, the optimizer step, the
 * run state (RL step, policy version, the task cursor; the run's randomness is derived from the seed and these
 * counters, see rng.ts) and the full TrainConfig. Resuming restores all of it, so the next step is the one an
 * uninterrupted run would have taken. The same file loads as a plain policy checkpoint (`lab rollout
 * --checkpoint`), which ignores the optimizer tensors.
 */
import { type Checkpoint, decodeCheckpoint, encodeCheckpoint } from '../engine/checkpoint';
import type { Layout, PolicyConfig } from '../engine/model';
import type { OptimizerState } from '../engine/policy/types';
import { resolveTrainConfig, type TrainConfig } from './config';

const STATE_KEY = 'harness_lab.train_state';
const CONFIG_KEY = 'harness_lab.train_config';

/** The counters a run needs to continue. */
export interface RunState {
  /** RL steps completed */
  step: number;
  /** weight versions published to the rollout engine (0 = the initial weights) */
  policyVersion: number;
  /** tasks consumed from the training set so far (epoch = floor(cursor / train_tasks)) */
  cursor: number;
  /** SFT steps the initial weights had (from the SFT checkpoint's metadata), for the record */
  sftSteps?: number;
}

export interface TrainCheckpoint {
  policyConfig: PolicyConfig;
  params: Float32Array;
  optimizer: OptimizerState;
  state: RunState;
  config: TrainConfig;
  metadata: Record<string, string>;
  /** the tensors of `params` when not the GPT-2 layout of policyConfig (a Llama-family model or LoRA adapter) */
  paramsLayout?: Layout;
}

export function encodeTrainCheckpoint(c: TrainCheckpoint): Uint8Array {
  return encodeCheckpoint(
    c.policyConfig,
    c.params,
    {
      ...c.metadata,
      [STATE_KEY]: JSON.stringify({ ...c.state, adamStep: c.optimizer.step }),
      [CONFIG_KEY]: JSON.stringify(c.config),
    },
    { 'optimizer.m': c.optimizer.m, 'optimizer.v': c.optimizer.v },
    c.paramsLayout,
  );
}

/** The run config stored in a training checkpoint, without its tensors (to find the model folder it needs). */
export function trainCheckpointConfig(bytes: Uint8Array, source = 'checkpoint'): TrainConfig {
  if (bytes.length < 8)
    throw new Error(`${source}: ${bytes.length} bytes is too short for a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  let meta: Record<string, string>;
  try {
    meta = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))).__metadata__ ?? {};
  } catch (e) {
    throw new Error(`${source}: header is not valid JSON (${(e as Error).message})`);
  }
  const raw = meta[CONFIG_KEY];
  if (raw === undefined)
    throw new Error(`${source}: not a training checkpoint (no '${CONFIG_KEY}' metadata)`);
  try {
    return resolveTrainConfig(JSON.parse(raw));
  } catch (e) {
    throw new Error(`${source}: stored train config is invalid: ${(e as Error).message}`);
  }
}

function intField(o: Record<string, unknown>, k: string, source: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new Error(`${source}: train state '${k}' must be a non-negative integer, got ${JSON.stringify(v)}`);
  return v;
}

/** Decodes a training checkpoint; a policy-only checkpoint (no optimizer state) is an error naming what is missing. */
export function decodeTrainCheckpoint(
  bytes: Uint8Array,
  source = 'checkpoint',
  paramsLayout?: Layout,
): TrainCheckpoint {
  const ck: Checkpoint = decodeCheckpoint(bytes, source, paramsLayout);
  const rawState = ck.metadata[STATE_KEY];
  const rawConfig = ck.metadata[CONFIG_KEY];
  if (rawState === undefined || rawConfig === undefined)
    throw new Error(
      `${source}: not a training checkpoint (no '${rawState === undefined ? STATE_KEY : CONFIG_KEY}' metadata); a policy checkpoint starts a run with actor_rollout_ref.model.path instead`,
    );
  const m = ck.extra['optimizer.m'];
  const v = ck.extra['optimizer.v'];
  if (!m || !v) throw new Error(`${source}: training checkpoint lacks optimizer.m / optimizer.v`);
  if (m.length !== ck.params.length || v.length !== ck.params.length)
    throw new Error(
      `${source}: optimizer moments have ${m.length}/${v.length} values, params ${ck.params.length}`,
    );
  let st: Record<string, unknown>;
  let cfg: unknown;
  try {
    st = JSON.parse(rawState);
    cfg = JSON.parse(rawConfig);
  } catch (e) {
    throw new Error(`${source}: train metadata is not JSON (${(e as Error).message})`);
  }
  const state: RunState = {
    step: intField(st, 'step', source),
    policyVersion: intField(st, 'policyVersion', source),
    cursor: intField(st, 'cursor', source),
  };
  if (st.sftSteps !== undefined) state.sftSteps = intField(st, 'sftSteps', source);
  let config: TrainConfig;
  try {
    config = resolveTrainConfig(cfg);
  } catch (e) {
    throw new Error(`${source}: stored train config is invalid: ${(e as Error).message}`);
  }
  const metadata = { ...ck.metadata };
  delete metadata[STATE_KEY];
  delete metadata[CONFIG_KEY];
  return {
    policyConfig: ck.config,
    params: ck.params,
    optimizer: { m, v, step: intField(st, 'adamStep', source) },
    state,
    config,
    metadata,
    ...(paramsLayout ? { paramsLayout } : {}),
  };
}
