/**
 * Every default of the config field table against the composed Agent Lightning 1.0.0 + verl 0.8.0 config, at both
 * trace_aggregator levels. The fixture is extracted from the installed upstream packages by
 * python/extract_upstream_defaults.py (its docstring has the command); regenerate it when a key is added.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_TABLE, type ConfigFieldDef, isUpstreamKey } from '../../src/core/config/fields';
import { resolveTrainerOptions, type TrainerOptions } from '../../src/core/pipeline/options';
import { getPath, resolveTrainConfig } from '../../src/train/config';
import { trainerOptions } from '../../src/train/objective';

interface Level {
  values: Record<string, unknown>;
  absent: string[];
  mandatory: string[];
  adapter: { max_prompt_length: number; max_response_length: number };
}
const FIXTURE = 'tests/fixtures/upstream/agl-1.0.0-verl-0.8.0-defaults.json';
const upstream = JSON.parse(readFileSync(FIXTURE, 'utf8')) as {
  source: { agentlightning: string; verl: string };
  levels: Record<'trajectory' | 'transition', Level>;
};
const LEVELS = ['trajectory', 'transition'] as const;
const REGENERATE =
  'npx tsx tests/tools/config-keys.ts | python/.venv-peer/bin/python python/extract_upstream_defaults.py > ' +
  FIXTURE;

/**
 * Where a run's default is not upstream's, and why. Everything else must equal upstream; an entry here whose
 * default has become upstream's fails too.
 */
const DEVIATIONS: Record<string, string> = {
  'algorithm.adv_estimator':
    "verl's gae needs a critic model, which this trainer does not have; Agent Lightning's examples run grpo",
  'data.train_batch_size': 'a step of a few tasks on one machine (verl: 1024)',
  'data.seed': 'runs are reproducible by default (verl: null, unseeded)',
  'actor_rollout_ref.model.path': "the shipped SFT checkpoint (verl's default names a 7B model directory)",
  'actor_rollout_ref.actor.ppo_mini_batch_size': 'scaled with data.train_batch_size (verl: 256 of 1024)',
  'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu':
    'verl requires one of the micro-batch sizes to be set; this is the one the trainer reads',
  'actor_rollout_ref.actor.optim.lr': 'the small policy learns at 1e-4 (verl: 1e-6 for a 7B model)',
  'actor_rollout_ref.rollout.n': 'grpo needs groups: 4 samples per task (verl: 1, for gae)',
  'actor_rollout_ref.rollout.max_model_len': "the policy's context (verl: null, the model's own)",
  'agentlightning.async_rollout.async_train_batch_size':
    'must exceed data.train_batch_size when async rollout is on (upstream: null, required then)',
  'trainer.total_training_steps': 'a short run (verl: null, derived from the dataset and epochs)',
  'trainer.test_freq': 'validates every 5 steps (verl: -1, never)',
  'trainer.save_freq':
    'checkpoints only when asked (verl: -1 saves none either; 0 is the lab spelling of off)',
};
/** Keys verl 0.8.0 marks mandatory (`???`, no default): ours names the lab's own choice. */
const MANDATORY: Record<string, string> = {
  'actor_rollout_ref.rollout.name': "the rollout engine, the trainer's own policy by default",
};
/** Keys of later verl versions that verl 0.8.0's config does not have. */
const NOT_IN_VERL_0_8: Record<string, string> = {
  'trainer.v1.sampler.max_off_policy_threshold': 'a verl 0.9 sampler key',
  'trainer.v1.sampler.max_off_policy_strategy': 'a verl 0.9 sampler key',
  'actor_rollout_ref.actor.policy_loss.dro_beta': "verl 0.9.0's DRO policy loss (reference stack verl-0.9.0)",
};

const upstreamFields = CONFIG_TABLE.filter((f) => isUpstreamKey(f.key));
const levelOf = (f: ConfigFieldDef, level: string) =>
  f.key === 'agentlightning.trace_aggregator.level' ? level : f.default;

describe('the field table against the composed Agent Lightning 1.0.0 + verl 0.8.0 config', () => {
  it('the fixture is of those versions and knows every upstream key of the table', () => {
    expect(upstream.source).toMatchObject({ agentlightning: '1.0.0', verl: '0.8.0' });
    for (const level of LEVELS) {
      const l = upstream.levels[level];
      const known = [...Object.keys(l.values), ...l.absent, ...l.mandatory].sort();
      expect(known, `regenerate the fixture: ${REGENERATE}`).toEqual(upstreamFields.map((f) => f.key).sort());
      expect(l.absent.sort()).toEqual(Object.keys(NOT_IN_VERL_0_8).sort());
      expect(l.mandatory.sort()).toEqual(Object.keys(MANDATORY).sort());
      expect(l.values['agentlightning.trace_aggregator.level']).toBe(level);
    }
  });

  for (const level of LEVELS)
    it(`${level} level: every default equals upstream's, except the listed ones, which differ`, () => {
      const values = upstream.levels[level].values;
      const same: string[] = [];
      for (const f of upstreamFields) {
        if (!(f.key in values)) continue;
        const ours = levelOf(f, level);
        if (f.key in DEVIATIONS) expect(ours, `${f.key} is listed as deviating`).not.toEqual(values[f.key]);
        else {
          expect(ours, f.key).toEqual(values[f.key]);
          same.push(f.key);
        }
      }
      // most of the table is upstream's own defaults
      expect(same.length).toBeGreaterThan(40);
    });

  for (const level of LEVELS)
    it(`${level} level: the analysis options and a run's config resolve to upstream's values and adapter lengths`, () => {
      const values = upstream.levels[level].values;
      const analysis = resolveTrainerOptions({ traceAggregatorLevel: level });
      const run = resolveTrainConfig({ agentlightning: { trace_aggregator: { level } } });
      for (const f of upstreamFields) {
        if (!(f.key in values) || f.key in DEVIATIONS) continue;
        if (f.option && f.scopes.includes('analysis'))
          expect(analysis[f.option as keyof TrainerOptions], f.key).toEqual(values[f.key]);
        if (f.scopes.includes('run')) expect(getPath(run, f.key), f.key).toEqual(values[f.key]);
      }
      // the lengths the trainer hands the rollout adapter at this level (trainer.py: trajectory_* or data.*)
      const { max_prompt_length, max_response_length } = upstream.levels[level].adapter;
      for (const o of [analysis, trainerOptions(run)]) {
        expect(o.maxPromptLength).toBe(max_prompt_length);
        expect(o.maxResponseLength).toBe(max_response_length);
      }
    });
});
