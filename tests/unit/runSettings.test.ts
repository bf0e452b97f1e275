import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveTrainConfig } from '../../src/train/config';
import { resolveOptions } from '../../src/ui/lab/options';
import { compute, newBuildCache, parseTrace } from '../../src/ui/lab/pipeline';
import {
  effectiveOptions,
  runSettingsFor,
  settingsInSight,
  useRunSettings,
} from '../../src/ui/lab/runSettings';
import { type UrlState, useView, viewSchema } from '../../src/ui/store';
import { explorerOptionsOf } from '../../src/ui/train/explorerOptions';
import { decodeHash, encodeHash } from '../../src/ui/urlState';

function sample(f: string) {
  return parseTrace(readFileSync(join('public', 'samples', f), 'utf8'), f, () => {}).trace;
}

describe('settings a run brings apply to its batch only', () => {
  // a run whose mini-batch is 4 tasks × 4 rollouts = 16 rows, with 1024-token limits (what a chart point used to
  // write into the URL as maxp=1024&maxr=1024&mb=16)
  const cfg = resolveTrainConfig({
    data: { train_batch_size: 8 },
    actor_rollout_ref: { actor: { ppo_mini_batch_size: 4 }, rollout: { n: 4 } },
    agentlightning: {
      trace_aggregator: { trajectory_max_prompt_length: 1024, trajectory_max_response_length: 1024 },
    },
  });
  const runSource = 'run A · step 7';

  it('open a chart point, then another trace: the other trace gets its numbers under the user’s settings', () => {
    const user = decodeHash(viewSchema, '');
    const urlBefore = encodeHash(viewSchema, useView.getState() as unknown as UrlState);
    useRunSettings.getState().bring({
      runId: 'r-1',
      runName: 'run A',
      step: 7,
      source: runSource,
      settings: explorerOptionsOf(cfg),
    });
    const active = useRunSettings.getState().active;
    // the URL is the user's: nothing of the run's settings was written into it
    expect(encodeHash(viewSchema, useView.getState() as unknown as UrlState)).toBe(urlBefore);
    expect(urlBefore).not.toMatch(/mb=|maxp=|maxr=/);
    // on the run's own batch its settings apply
    const onRun = effectiveOptions(user, runSettingsFor(active, runSource));
    expect(onRun.ppoMiniBatchSize).toBe(16);
    expect(onRun.maxPromptLength).toBe(1024);
    // another trace (a bundled sample) is shown: the user's settings again
    const other = 'coding-random.jsonl';
    const run = runSettingsFor(active, other);
    expect(run).toBeNull();
    const trace = sample(other);
    const shown = compute(trace, resolveOptions(user, run), undefined, newBuildCache());
    const yours = compute(trace, resolveOptions(user), undefined, newBuildCache());
    expect(shown.trainerCounters).toEqual(yours.trainerCounters);
    expect(Array.from(shown.rolloutWeight)).toEqual(Array.from(yours.rolloutWeight));
    // and they are not the run's numbers (the 16-row mini-batch trims this trace)
    const underRun = compute(trace, onRun, undefined, newBuildCache());
    expect(underRun.trainerCounters).not.toEqual(yours.trainerCounters);
  });

  it('shows the settings the numbers use, marking the run’s and the changed ones; revert hands the batch back', () => {
    const user = decodeHash(viewSchema, '');
    const active = useRunSettings.getState().active;
    const onRun = settingsInSight(user, runSettingsFor(active, runSource));
    const mb = onRun.find((s) => s.key === 'lab.mini_batch_rows');
    expect(mb).toMatchObject({ value: '16', changed: true, origin: 'run' });
    expect(onRun.find((s) => s.key === 'algorithm.adv_estimator')).toMatchObject({ changed: false });
    const mine = settingsInSight({ ...user, advEstimator: 'rloo' }, null);
    expect(mine.filter((s) => s.changed).map((s) => [s.key, s.value, s.origin])).toEqual([
      ['algorithm.adv_estimator', 'rloo', 'yours'],
    ]);
    useRunSettings.getState().revert();
    expect(runSettingsFor(useRunSettings.getState().active, runSource)).toBeNull();
  });
});
