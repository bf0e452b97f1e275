/**
 * Model presets (the policy's shape; vocabulary and context come from the tokenizer and the run) and where a
 * run's initial weights come from (`actor_rollout_ref.model.path`): 'sft' is the shipped SFT checkpoint of
 * the harness (`public/checkpoints/<harness>.safetensors`, made by `lab sft` / tests/tools/make-checkpoints.sh
 * for the default preset), 'init' the seeded initialisation of `lab.model`, anything else a checkpoint file or
 * URL. Loading bytes is left to the caller (fs in Node, fetch in the page).
 */
import { decodeCheckpoint } from '../engine/checkpoint';
import { initParams, type PolicyConfig, resolveConfig } from '../engine/model';
import type { TrainConfig } from './config';
import { hashSeed } from './rng';

export const MODEL_PRESETS = {
  /** the default: ~0.23M parameters, < 1 MB per checkpoint; learns the short harness in minutes on a CPU */
  tiny: { layers: 2, width: 64, heads: 4 },
  small: { layers: 4, width: 128, heads: 4 },
} as const;

export type ModelPreset = keyof typeof MODEL_PRESETS;

export function policyConfigFor(
  preset: ModelPreset,
  vocabSize: number,
  contextLength: number,
  seed: number,
): PolicyConfig {
  return resolveConfig({ ...MODEL_PRESETS[preset], vocabSize, contextLength, seed });
}

/** The shipped SFT checkpoint's path relative to the served folder (public/ in the repository). */
export function sftCheckpointPath(harness: string): string {
  return `checkpoints/${harness}.safetensors`;
}

export interface InitialWeights {
  config: PolicyConfig;
  params: Float32Array;
  /** where they came from, for logs and checkpoint metadata */
  source: string;
  metadata: Record<string, string>;
}

/** Resolves actor_rollout_ref.model.path to weights; `load` reads a path (relative ones against public/). */
export async function initialWeights(
  cfg: TrainConfig,
  vocabSize: number,
  load: (path: string) => Promise<Uint8Array>,
): Promise<InitialWeights> {
  const path = cfg.actor_rollout_ref.model.path;
  if (path === 'init') {
    const config = policyConfigFor(
      cfg.lab.model,
      vocabSize,
      cfg.actor_rollout_ref.rollout.max_model_len,
      hashSeed(cfg.lab.seed, 'init') % 2 ** 31,
    );
    return { config, params: initParams(config), source: `init(${cfg.lab.model})`, metadata: {} };
  }
  const file = path === 'sft' ? sftCheckpointPath(cfg.lab.harness) : path;
  const ck = decodeCheckpoint(await load(file), file);
  if (ck.config.vocabSize < vocabSize)
    throw new Error(
      `${file}: the policy's vocabulary (${ck.config.vocabSize}) is smaller than the tokenizer's (${vocabSize})`,
    );
  return { config: ck.config, params: ck.params, source: file, metadata: ck.metadata };
}
