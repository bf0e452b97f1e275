/**
 * The simulator against our own loop: fitted to the sync run's recorded timeline (`npm run bench:train -- --sections
 * async --phase-steps 3 --backends cpu --events tests/fixtures/sim`), it predicts the measured step time of the
 * sync run and of the async run (Agent Lightning's async: 12 groups in flight, pause and drain) within ±15%.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveTrainConfig } from '../../../src/train/config';
import { parseTrainEvent, type TrainEvent } from '../../../src/train/events';
import { fitLocalTimeline, measuredStepSeconds, predictLocalSteps } from '../../../src/train/simFit';

const dir = join(__dirname, '../../fixtures/sim');
const load = (mode: string): TrainEvent[] =>
  readFileSync(join(dir, `local-${mode}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => parseTrainEvent(JSON.parse(l)));
// bench:train's async section configuration (benchConfig for instruction-short)
const cfg = (async: boolean) =>
  resolveTrainConfig({
    lab: { harness: 'instruction-short', seed: 0, train_tasks: 256, val_tasks: 32, keep_traces: false },
    data: { train_batch_size: 8, max_response_length: 48 },
    actor_rollout_ref: { actor: { ppo_mini_batch_size: 4 }, rollout: { n: 4 } },
    trainer: { total_training_steps: 3, test_freq: 0, val_before_train: false },
    agentlightning: { async_rollout: { enabled: async, async_train_batch_size: 12 } },
  });

describe('the simulator predicts the local loop', () => {
  const sync = load('sync');
  const asy = load('async');
  it('fits the sync timeline: decode rate, lengths, phases', () => {
    const fit = fitLocalTimeline(sync);
    expect(fit.steps).toBe(3);
    expect(fit.turns).toBe(1);
    expect(fit.maxResponse).toBeLessThanOrEqual(48);
    expect(fit.secondsPerToken).toBeGreaterThan(0);
    expect(fit.phases.update_actor).toBeGreaterThan(0);
  });
  it('sync and async step times within ±15% of the measured ones', () => {
    const p = predictLocalSteps(sync, cfg(false), cfg(true), { concurrency: 4 });
    const ms = measuredStepSeconds(sync);
    const ma = measuredStepSeconds(asy);
    expect(Math.abs(p.sync / ms - 1), `sync ${p.sync} vs ${ms}`).toBeLessThan(0.15);
    expect(Math.abs(p.async / ma - 1), `async ${p.async} vs ${ma}`).toBeLessThan(0.15);
  });
  it('refuses a timeline without rollouts', () => {
    expect(() => fitLocalTimeline(sync.filter((e) => e.type !== 'rollout'))).toThrow(/no training rollouts/);
  });
});
