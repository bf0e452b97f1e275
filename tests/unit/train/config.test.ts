import { describe, expect, it } from 'vitest';
import { LOSS_AGG_MODES } from '../../../src/core/algos/aggLoss';
import {
  applyDotlist,
  CONFIG_FIELDS,
  configDiff,
  defaultTrainConfig,
  fieldByPath,
  getPath,
  resolveTrainConfig,
  setConfigValue,
  TrainConfigError,
} from '../../../src/train/config';
import { objectiveEstimators } from '../../../src/train/objective';

function leaves(o: unknown, prefix = ''): string[] {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return [prefix];
  return Object.entries(o).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

describe('TrainConfig: one typed object, keys named after upstream keys', () => {
  it('declares every leaf of the defaults exactly once, with a unique flag, and the defaults pass their own checks', () => {
    const paths = leaves(defaultTrainConfig()).sort();
    expect(CONFIG_FIELDS.map((f) => f.path).sort()).toEqual(paths);
    expect(new Set(CONFIG_FIELDS.map((f) => f.flag)).size).toBe(CONFIG_FIELDS.length);
    expect(resolveTrainConfig({})).toEqual(defaultTrainConfig());
    // upstream keys are spelled as verl / Agent Lightning spell them
    for (const p of [
      'algorithm.adv_estimator',
      'actor_rollout_ref.actor.loss_agg_mode',
      'actor_rollout_ref.actor.policy_loss.loss_mode',
      'agentlightning.trace_aggregator.level',
      'algorithm.enable_rollout_level_advantage',
      'actor_rollout_ref.rollout.n',
      'agentlightning.async_rollout.async_train_batch_size',
      'algorithm.rollout_correction.rollout_is_threshold',
    ])
      expect(fieldByPath(p)?.upstream).toBe(true);
    expect(fieldByPath('lab.harness')?.upstream).toBe(false);
  });

  it('takes its choices from the registries', () => {
    expect(fieldByPath('actor_rollout_ref.actor.loss_agg_mode')?.choices?.()).toEqual(LOSS_AGG_MODES);
    const est = fieldByPath('algorithm.adv_estimator')?.choices?.() ?? [];
    expect(est).toEqual(objectiveEstimators());
    expect(est).toContain('grpo');
    expect(est).not.toContain('remax'); // needs greedy baselines a run does not produce
  });

  it('rejects bad values naming the key, the rule and the value', () => {
    expect(() => resolveTrainConfig({ actor_rollout_ref: { rollout: { n: 0 } } })).toThrow(
      'actor_rollout_ref.rollout.n must be ≥ 1, got 0',
    );
    expect(() => resolveTrainConfig({ actor_rollout_ref: { rollout: { n: 1.5 } } })).toThrow(
      'actor_rollout_ref.rollout.n must be an integer ≥ 1, got 1.5',
    );
    expect(() => resolveTrainConfig({ algorithm: { adv_estimator: 'ppo' } })).toThrow(
      /algorithm.adv_estimator must be one of grpo, .*got 'ppo'/,
    );
    expect(() => resolveTrainConfig({ algorithm: { adv_estimatr: 'grpo' } })).toThrow(
      'algorithm.adv_estimatr is not a known key',
    );
    expect(() => resolveTrainConfig({ lab: { behaviours: ['strip-think', 'nope'] } })).toThrow(
      'lab.behaviours items must be among',
    );
    expect(() =>
      resolveTrainConfig({ agentlightning: { async_rollout: { enabled: true, async_train_batch_size: 8 } } }),
    ).toThrow('agentlightning.async_rollout.async_train_batch_size (8) must be > data.train_batch_size (8)');
    expect(() => resolveTrainConfig({ actor_rollout_ref: { actor: { entropy_coeff: 0.01 } } })).toThrow(
      'actor_rollout_ref.actor.entropy_coeff must be ≤ 0',
    );
    expect(() =>
      resolveTrainConfig({ trainer: { v1: { sampler: { max_off_policy_threshold: 2 } } } }),
    ).toThrow(
      'trainer.v1.sampler.max_off_policy_threshold applies only with agentlightning.async_rollout.enabled',
    );
  });

  it('parses strings the way CLI flags, dotlist overrides and URL fields give them', () => {
    const c = defaultTrainConfig();
    applyDotlist(c, [
      'algorithm.adv_estimator=rloo',
      'actor_rollout_ref.rollout.n=8',
      'algorithm.enable_rollout_level_advantage=false',
      'algorithm.rollout_correction.rollout_is=token',
      'algorithm.rollout_correction.rollout_is_threshold=null',
      'actor_rollout_ref.actor.optim.betas=[0.9,0.95]',
      '+lab.behaviours=strip-think,summarize',
    ]);
    expect(c.algorithm.adv_estimator).toBe('rloo');
    expect(c.actor_rollout_ref.rollout.n).toBe(8);
    expect(c.algorithm.enable_rollout_level_advantage).toBe(false);
    expect(c.algorithm.rollout_correction.rollout_is).toBe('token');
    expect(c.algorithm.rollout_correction.rollout_is_threshold).toBeNull();
    expect(c.actor_rollout_ref.actor.optim.betas).toEqual([0.9, 0.95]);
    expect(c.lab.behaviours).toEqual(['strip-think', 'summarize']);
    expect(() => setConfigValue(c, 'actor_rollout_ref.rollout.n', 'eight')).toThrow(
      "actor_rollout_ref.rollout.n must be an integer ≥ 1, got 'eight'",
    );
    expect(() => applyDotlist(c, ['algorithm.adv_estimator'])).toThrow(TrainConfigError);
    // a diff against the defaults is a Hydra override list that reproduces the config
    const again = defaultTrainConfig();
    applyDotlist(again, configDiff(c));
    expect(again).toEqual(c);
    expect(configDiff(c, { upstreamOnly: true }).every((o) => !o.startsWith('lab.'))).toBe(true);
    expect(getPath(c, 'data.train_batch_size')).toBe(8);
  });
});

describe('lab.task_level', () => {
  it("is null by default and must be one of the harness's levels", () => {
    expect(resolveTrainConfig({}).lab.task_level).toBeNull();
    expect(resolveTrainConfig({ lab: { harness: 'search', task_level: 3 } }).lab.task_level).toBe(3);
    expect(() => resolveTrainConfig({ lab: { harness: 'search', task_level: 4 } })).toThrow(
      "lab.task_level must be null or one of the levels of harness 'search' (1, 2, 3), got 4",
    );
    expect(() => resolveTrainConfig({ lab: { harness: 'instruction-short', task_level: 2 } })).toThrow(
      "levels of harness 'instruction-short' (1)",
    );
  });
});
