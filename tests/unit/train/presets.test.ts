import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../../src/cli/args';
import { command as train } from '../../../src/cli/commands/train';
import { comparePresetRuns, formatComparison, type VariantHistory } from '../../../src/train/presetMetrics';
import { getPreset, listPresets, presetConfigs, UnknownPresetError } from '../../../src/train/presets';
import { runPresetInline } from '../../tools/presetRun';

// Each preset runs its variants on one fixed seed from the shipped SFT checkpoints (CPU engine, inline
// rollouts), at a smaller scale than the preset's own (fewer tasks per step), and the test asserts the
// DIRECTION of the effect on the structural metrics the preset names. The dynamic effects (wrong answers
// growing, tool calls falling, reward curves) are measured by `npm run bench:presets` across seeds and
// stated in each preset's derived claim text, not asserted here.

/** The mean over the steps of one metric of one variant. */
function meanOf(runs: VariantHistory[], variant: string, metric: string): number {
  const row = comparePresetRuns([metric], runs)[0];
  const cell = row.cells.find((c) => c.variant === variant);
  if (!cell) throw new Error(`no variant ${variant}`);
  return cell.mean;
}

const scale = (tasks: number, n: number) => ({
  data: { train_batch_size: tasks },
  actor_rollout_ref: { actor: { ppo_mini_batch_size: tasks }, rollout: { n } },
});

describe('the preset registry', () => {
  it('has the five presets, each with a source, what to look for, metrics and a measured robustness', () => {
    expect(listPresets().map((p) => p.slug)).toEqual([
      'length-bias',
      'turn-count-bias',
      'retokenization-drift',
      'staleness',
      'merge-failures',
    ]);
    for (const p of listPresets()) {
      expect(p.source.length, p.slug).toBeGreaterThan(20);
      expect(p.lookFor.length, p.slug).toBeGreaterThan(20);
      expect(p.robustness, p.slug).not.toMatch(/PENDING/);
      expect(p.metrics.length, p.slug).toBeGreaterThan(1);
      // every variant resolves, shares the base's harness and seed, and differs from the others
      const runs = presetConfigs(p, { seed: 7, steps: 2 });
      expect(new Set(runs.map((r) => r.config.lab.harness)).size).toBe(1);
      expect(runs.every((r) => r.config.lab.seed === 7 && r.config.trainer.total_training_steps === 2)).toBe(
        true,
      );
      expect(new Set(runs.map((r) => JSON.stringify(r.config))).size).toBe(runs.length);
    }
  });

  it('names the valid presets on a bad name, and the variant on a bad combination', () => {
    expect(() => getPreset('length')).toThrow(UnknownPresetError);
    expect(() => getPreset('length')).toThrow(/valid: length-bias, turn-count-bias/);
    // an override the variant cannot live with is reported with the preset and the variant
    expect(() =>
      presetConfigs(getPreset('staleness'), { overrides: { data: { train_batch_size: 16 } } }),
    ).toThrow(
      /async_train_batch_size \(12\) must be > data.train_batch_size \(16\) \(preset staleness, variant async\)/,
    );
  });

  it('caller overrides never erase what a variant sets', () => {
    const runs = presetConfigs(getPreset('length-bias'), {
      overrides: { actor_rollout_ref: { actor: { loss_agg_mode: 'token-mean' } } },
    });
    expect(runs.map((r) => r.config.actor_rollout_ref.actor.loss_agg_mode)).toEqual([
      'seq-mean-token-mean',
      'seq-mean-token-sum-norm',
      'token-mean',
    ]);
  });
});

describe('each preset shows its effect on a fixed seed', () => {
  it('length-bias: 1/|o| per-token weight under GRPO and per_rollout_mean, none under Dr. GRPO', {
    timeout: 300_000,
  }, async () => {
    const runs = await runPresetInline(getPreset('length-bias'), {
      seed: 0,
      steps: 1,
      overrides: scale(4, 4),
    });
    const exp = (v: string) => meanOf(runs, v, 'preset/token_weight/length_exponent');
    expect(exp('grpo')).toBeCloseTo(-1, 2);
    expect(exp('per-rollout-mean')).toBeCloseTo(-1, 2);
    expect(Math.abs(exp('dr-grpo'))).toBeLessThan(1e-6);
    // step 1 samples before any update, so all three start from the same rollouts
    expect(meanOf(runs, 'grpo', 'response_length/mean')).toBe(
      meanOf(runs, 'dr-grpo', 'response_length/mean'),
    );
  });

  it('turn-count-bias: rows per rollout follow calls; only per_rollout_mean makes rollout weight independent of its size', {
    timeout: 300_000,
  }, async () => {
    const runs = await runPresetInline(getPreset('turn-count-bias'), {
      seed: 0,
      steps: 1,
      overrides: scale(2, 4),
    });
    for (const v of ['transition-rows', 'rollout-level', 'per-rollout-mean'])
      expect(meanOf(runs, v, 'lab/rows_per_rollout'), v).toBeGreaterThan(1);
    const slope = (v: string) => meanOf(runs, v, 'preset/rollout_weight/calls_slope');
    expect(Math.abs(slope('per-rollout-mean'))).toBeLessThan(1e-5);
    expect(Math.abs(slope('transition-rows'))).toBeGreaterThan(0.05);
    expect(Math.abs(slope('rollout-level'))).toBeGreaterThan(0.05);
  });

  it('retokenization-drift: retokenized ids lose the engine log-probs that engine ids keep; int8 sampling widens the gap, TIS weighs it', {
    timeout: 300_000,
  }, async () => {
    const runs = await runPresetInline(getPreset('retokenization-drift'), {
      seed: 0,
      steps: 1,
      overrides: scale(2, 4),
    });
    expect(meanOf(runs, 'engine-ids', 'lab/retokenization_mismatch_rate')).toBeGreaterThan(0);
    expect(meanOf(runs, 'engine-ids', 'training/rollout_probs_diff_valid')).toBe(1);
    expect(meanOf(runs, 'engine-ids', 'training/rollout_probs_diff_max')).toBeLessThan(1e-3);
    expect(meanOf(runs, 'retokenize', 'training/rollout_probs_diff_valid')).toBeNaN();
    // the engine/trainer precision mismatch: int8 sampling on onnxruntime-web is far from the trainer's f32
    const gap = (v: string) => meanOf(runs, v, 'lab/rollout_logprob_diff/mean');
    for (const v of ['int8', 'int8-tis']) {
      expect(meanOf(runs, v, 'training/rollout_probs_diff_valid'), v).toBe(1);
      expect(gap(v), v).toBeGreaterThan(1e-3);
      expect(gap(v), v).toBeGreaterThan(100 * gap('engine-ids'));
      expect(meanOf(runs, v, 'training/rollout_probs_diff_max'), v).toBeGreaterThan(
        10 * meanOf(runs, 'engine-ids', 'training/rollout_probs_diff_max'),
      );
    }
    // truncated IS weighs the int8 run's tokens (weights ≤ 2); the uncorrected runs report no IS weights
    const isMean = meanOf(runs, 'int8-tis', 'rollout_corr/rollout_is_mean');
    expect(isMean).toBeGreaterThan(0);
    expect(isMean).toBeLessThanOrEqual(2);
    expect(meanOf(runs, 'int8', 'rollout_corr/rollout_is_mean')).toBeNaN();
  });

  it('staleness: sync trains on fresh calls; async on calls older than the update, with engine/trainer drift', {
    timeout: 300_000,
  }, async () => {
    const runs = await runPresetInline(getPreset('staleness'), {
      seed: 0,
      steps: 3,
      overrides: scale(2, 2),
      concurrency: 4,
    });
    expect(meanOf(runs, 'sync', 'lab/staleness/call_max')).toBe(0);
    expect(meanOf(runs, 'sync', 'training/rollout_probs_diff_max')).toBeLessThan(1e-3);
    for (const v of ['async', 'async-tis']) {
      expect(meanOf(runs, v, 'lab/staleness/call_max'), v).toBeGreaterThan(0);
      expect(meanOf(runs, v, 'training/rollout_probs_diff_mean'), v).toBeGreaterThan(
        meanOf(runs, 'sync', 'training/rollout_probs_diff_mean'),
      );
    }
    expect(meanOf(runs, 'async-tis', 'rollout_corr/rollout_is_mean')).toBeGreaterThan(0);
    expect(meanOf(runs, 'async', 'rollout_corr/rollout_is_mean')).toBeNaN();
  });

  it('merge-failures: a sliding window or a summary splits rollouts into more rows and more trained tokens', {
    timeout: 300_000,
  }, async () => {
    const runs = await runPresetInline(getPreset('merge-failures'), {
      seed: 0,
      steps: 1,
      overrides: scale(2, 4),
    });
    const clean = (k: string) => meanOf(runs, 'clean', k);
    expect(clean('lab/merge_failures/truncation_or_summarization')).toBe(0);
    for (const v of ['sliding-window', 'summarize']) {
      expect(meanOf(runs, v, 'lab/merge_failures/truncation_or_summarization'), v).toBeGreaterThan(0);
      expect(meanOf(runs, v, 'lab/rows_per_rollout'), v).toBeGreaterThan(clean('lab/rows_per_rollout'));
      expect(meanOf(runs, v, 'preset/train_tokens_per_rollout'), v).toBeGreaterThan(
        clean('preset/train_tokens_per_rollout'),
      );
    }
    expect(formatComparison(comparePresetRuns(getPreset('merge-failures').metrics, runs))).toMatch(
      /lab\/rows_per_rollout/,
    );
  });
});

describe('lab train --preset', () => {
  const dir = mkdtempSync(join(tmpdir(), 'preset-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists the presets, and a bad name or a bad combination is a usage error', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await train.run(['--preset', 'list'])).toBe(0);
      expect(log.mock.calls.flat().join('\n')).toMatch(/staleness +Staleness in async rollouts/);
    } finally {
      log.mockRestore();
    }
    await expect(train.run(['--preset', 'nope'])).rejects.toThrow(
      new UsageError(
        "--preset: unknown preset 'nope' (valid: length-bias, turn-count-bias, retokenization-drift, staleness, merge-failures)",
      ),
    );
    await expect(train.run(['--preset', 'staleness', '--steps', '0'])).rejects.toThrow(
      "--steps must be an integer ≥ 1, got '0'",
    );
    await expect(train.run(['--preset', 'staleness', '--resume', dir])).rejects.toThrow(
      '--resume does not apply with --preset',
    );
    await expect(train.run(['--preset', 'staleness', '--train-batch-size', '16'])).rejects.toThrow(
      /\(preset staleness, variant async\)/,
    );
    await expect(train.run(['--steps', '2'])).rejects.toThrow('--steps applies with --preset');
  });

  it('runs every variant into its own run folder and writes the comparison', {
    timeout: 300_000,
  }, async () => {
    const out = join(dir, 'len');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    let printed = '';
    const flags = [
      '--train-batch-size',
      '2',
      '--ppo-mini-batch-size',
      '2',
      '--rollout-n',
      '2',
      '--workers',
      '1',
    ];
    try {
      expect(
        await train.run([
          '--preset',
          'length-bias',
          '--steps',
          '1',
          '--seed',
          '3',
          '--out',
          out,
          '--quiet',
          ...flags,
        ]),
      ).toBe(0);
      printed = log.mock.calls.flat().join('\n');
    } finally {
      log.mockRestore();
    }
    for (const v of ['grpo', 'dr-grpo', 'per-rollout-mean']) {
      expect(existsSync(join(out, v, 'metrics.jsonl')), v).toBe(true);
      expect(existsSync(join(out, v, 'traces', 'step_000001.jsonl')), v).toBe(true);
      expect(JSON.parse(readFileSync(join(out, v, 'config.json'), 'utf8')).lab.seed).toBe(3);
    }
    const cmp = JSON.parse(readFileSync(join(out, 'comparison.json'), 'utf8'));
    expect(cmp).toMatchObject({
      preset: 'length-bias',
      seed: 3,
      variants: ['grpo', 'dr-grpo', 'per-rollout-mean'],
    });
    const exp = cmp.rows.find((r: { metric: string }) => r.metric === 'preset/token_weight/length_exponent');
    expect(exp.cells.map((c: { first: number }) => Math.round(c.first) + 0)).toEqual([-1, 0, -1]);
    expect(printed).toMatch(/preset\/token_weight\/length_exponent/);
    // a second run into the same folder would mix its steps into the first's: refused, the first run kept
    const before = readFileSync(join(out, 'grpo', 'metrics.jsonl'), 'utf8');
    await expect(
      train.run([
        '--preset',
        'length-bias',
        '--steps',
        '1',
        '--seed',
        '3',
        '--out',
        out,
        '--quiet',
        ...flags,
      ]),
    ).rejects.toThrow(/already holds a run/);
    expect(readFileSync(join(out, 'grpo', 'metrics.jsonl'), 'utf8')).toBe(before);
    await expect(
      train.run(['--preset', 'length-bias', '--steps', '1e1', '--out', join(dir, 'x')]),
    ).rejects.toThrow(/--steps must be an integer/);
  });
});
