/**
 * What the agl-cpu template's two Node processes (the policy server and the trainer) must agree on: the
 * policy's shape and initial weights (seeded), and the catalogue the job templates are checked against.
 */

import type { TraceAggregatorLevel } from '../core/aggregate/buildTrainingBatch';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import { loadCheckpointFile } from '../engine/checkpoint';
import { defaultConfig, type PolicyConfig } from '../engine/model';
import { createPolicyEngine } from '../engine/policy';
import type { PolicyEngine } from '../engine/policy/types';
import { BEHAVIOURS, type Behaviour } from '../harness/harness';
import { HARNESSES, type HarnessName } from '../harness/registry';
import type { ParamValues } from '../server/protocol/params';
import { AGL_CPU_CONTEXT, type Catalogue } from '../server/protocol/templates';
import { resolveTrainConfig, type TrainConfig } from '../train/config';

export const HARNESS_CATALOGUE: Catalogue = { harnesses: HARNESSES.names(), behaviours: BEHAVIOURS };

/** The policy of an agl-cpu run: the default shape sized for the tokenizer, context 256, seeded. */
export function aglCpuPolicyConfig(tok: ChatTokenizer, seed: number): PolicyConfig {
  return { ...defaultConfig, vocabSize: tok.vocabSize, contextLength: AGL_CPU_CONTEXT, seed: seed + 1 };
}

/** The CPU engine with the run's initial weights: a checkpoint when given, else the seeded initialisation. */
export async function aglCpuPolicy(
  tok: ChatTokenizer,
  seed: number,
  checkpoint?: string,
): Promise<PolicyEngine> {
  if (checkpoint) {
    const ck = await loadCheckpointFile(checkpoint);
    if (ck.config.vocabSize < tok.vocabSize)
      throw new Error(
        `checkpoint ${checkpoint}: vocabulary ${ck.config.vocabSize} < tokenizer's ${tok.vocabSize}`,
      );
    return (await createPolicyEngine({ backend: 'cpu', config: ck.config, params: ck.params })).engine;
  }
  return (await createPolicyEngine({ backend: 'cpu', config: aglCpuPolicyConfig(tok, seed) })).engine;
}

/**
 * The agl-cpu template's parameters as the training loop's config (`lab train`'s, keyed by the upstream names the
 * template's parameters name): one mini-batch per step (`ppo_mini_batch_size` = tasks per step), the prompt and
 * response limits at both aggregation levels, validation after the last step on `AGL_CPU_VAL_TASKS` val tasks
 * (`val/reward`, `val/pass@1` in its metrics), `max_model_len` the policy's context.
 */
export const AGL_CPU_VAL_TASKS = 4;

export function aglCpuTrainConfig(p: ParamValues, contextLength: number): TrainConfig {
  const behaviour = p.behaviour as string;
  return resolveTrainConfig({
    lab: {
      harness: p.harness as HarnessName,
      behaviours: behaviour === 'none' ? [] : [behaviour as Behaviour],
      seed: p.seed as number,
      keep_traces: false,
      val_tasks: AGL_CPU_VAL_TASKS,
    },
    data: {
      train_batch_size: p.train_batch_size as number,
      max_prompt_length: p.max_prompt_length as number,
      max_response_length: p.max_response_length as number,
    },
    agentlightning: {
      trace_aggregator: {
        level: p.trace_aggregator_level as TraceAggregatorLevel,
        trajectory_max_prompt_length: p.max_prompt_length as number,
        trajectory_max_response_length: p.max_response_length as number,
      },
    },
    algorithm: {
      adv_estimator: p.adv_estimator as string,
      norm_adv_by_std_in_grpo: p.norm_adv_by_std_in_grpo as boolean,
      enable_rollout_level_advantage: p.enable_rollout_level_advantage as boolean,
    },
    actor_rollout_ref: {
      actor: {
        ppo_mini_batch_size: p.train_batch_size as number,
        loss_agg_mode: p.loss_agg_mode as string,
        policy_loss: { loss_mode: p.policy_loss_mode as string },
        clip_ratio_low: p.clip_ratio_low as number,
        clip_ratio_high: p.clip_ratio_high as number,
        optim: { lr: p.lr as number },
      },
      rollout: { n: p.rollout_n as number, max_model_len: contextLength },
    },
    trainer: {
      total_training_steps: p.total_training_steps as number,
      // validate once, after the last step (verl's rule: the last step validates whenever test_freq > 0)
      test_freq: p.total_training_steps as number,
      val_before_train: false,
      save_freq: 0,
    },
  });
}
