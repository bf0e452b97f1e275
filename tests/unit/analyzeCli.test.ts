import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command as analyze } from '../../src/cli/commands/analyze';
import { command as convert } from '../../src/cli/commands/convert';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import type { Analysis } from '../../src/core/analyze';
import { getWeightSign, signed } from '../../src/core/pipeline/sign';
import { computeTrainerView } from '../../src/core/pipeline/trainer';
import { toAglEventsBundle } from '../../src/core/trace/io';
import { AGENT_BATCH_SHAPE, syntheticAgentBatch } from '../../src/core/trace/synthetic';
import type { WeightDiff } from '../../src/core/weightDiff';

let dir: string;
let out: string[];
let errors: string[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lab-analyze-'));
  out = [];
  errors = [];
  vi.spyOn(console, 'log').mockImplementation((m: string) => void out.push(m));
  vi.spyOn(console, 'error').mockImplementation((m: string) => void errors.push(m));
});
afterEach(() => vi.restoreAllMocks());

const rollouts = syntheticAgentBatch({
  ...AGENT_BATCH_SHAPE,
  rollouts: 24,
  callsPerRollout: 5,
  groupSize: 4,
  mismatchRate: 0.2,
  vocabSize: 500,
  seed: 7,
});

describe('lab analyze', () => {
  it('--diff-reference: the weight differences against another stack, with the change that causes them', async () => {
    const events = join(dir, 'events.json');
    const jsonl = join(dir, 'trace.jsonl');
    writeFileSync(events, JSON.stringify(toAglEventsBundle(rollouts)));
    expect(await convert.run([events, jsonl])).toBe(0);
    const args = [jsonl, '--adv-estimator', 'reinforce_plus_plus', '--no-enable-rollout-level-advantage'];
    out = [];
    expect(await analyze.run([...args, '--diff-reference', 'verl-0.9.0', '--json'])).toBe(0);
    const a = JSON.parse(out.join('\n')) as Analysis & { diffReference: WeightDiff };
    const d = a.diffReference;
    expect(d.b.reference).toBe('Agent Lightning 1.0.x rows + verl 0.9.0');
    expect(d.causes[0].changes?.map((c) => c.id)).toEqual(['reinforce_returns_through_observations']);
    expect(d.counts.rollouts).toBeGreaterThan(0);
    out = [];
    expect(await analyze.run([...args, '--diff-reference', 'verl-0.9.0'])).toBe(0);
    const text = out.join('\n');
    expect(text).toMatch(
      /weight differences: Agent Lightning 1\.0\.x \+ verl 0\.8\.0 \(per_rollout_mean\) → /,
    );
    expect(text).toMatch(/reinforce_returns_through_observations: .*verl-project\/verl#7300/);
    expect(text).toMatch(/rollouts that differ: [1-9]/);
    await expect(analyze.run([jsonl, '--diff-reference', 'verl-0.7'])).rejects.toThrow(UsageError);
  });

  it('analyzes a trace converted from Agent Lightning events, matching core numbers', async () => {
    const events = join(dir, 'events.json');
    const jsonl = join(dir, 'trace.jsonl');
    writeFileSync(events, JSON.stringify(toAglEventsBundle(rollouts)));
    expect(await convert.run([events, jsonl])).toBe(0);
    out = [];
    const code = await analyze.run([jsonl, '--loss-mode', 'per_rollout_mean', '--json']);
    expect(code).toBe(0);
    const a = JSON.parse(out.join('\n')) as Analysis;
    expect(a.reference).toBe('Agent Lightning 1.0.x + verl 0.8.0');
    expect(a.input.rollouts).toBe(24);
    expect(a.input.calls).toBe(24 * 5);
    // upstream defaults: trajectory level, rollout-level GRPO in bf16, per_rollout_mean, 2048/8192
    expect(a.options).toMatchObject({
      traceAggregatorLevel: 'trajectory',
      advEstimator: 'grpo',
      enableRolloutLevelAdvantage: true,
      rewardDtype: 'bfloat16',
      maxPromptLength: 2048,
      maxResponseLength: 8192,
    });
    expect(a.advantages.dtype).toBe('bfloat16');

    const built = buildTrainingBatch(rollouts, {
      level: 'trajectory',
      maxPromptLength: 2048,
      maxResponseLength: 8192,
      padTokenId: 0,
      rewardFillnaValue: 0,
    });
    expect(a.merge.rows).toBe(built.batch.nRows);
    expect(a.merge.counters.nMergeMismatchRows).toBe(built.counters.nMergeMismatchRows);
    expect(a.merge.rows).toBeGreaterThan(24); // mismatches split rollouts into several rows
    const view = computeTrainerView({ rollouts, options: { lossMode: 'per_rollout_mean' } });
    for (const r of a.weights.perRollout) {
      const idx = rollouts.findIndex((x) => x.rolloutId === r.rolloutId);
      // the push −∂L/∂logπ by default
      expect(r.weight).toBe(signed(view.selected.rolloutSums[idx], getWeightSign('push')));
    }
    // per_rollout_mean gives every rollout of a group the weight −A_r/N, whatever its length or rows: exactly in
    // float32; in bf16 (as upstream) each token's A/(T·N) is rounded, so the totals spread by up to ~2^-8
    out = [];
    expect(await analyze.run([jsonl, '--reward-dtype', 'float32', '--json'])).toBe(0);
    const f32 = JSON.parse(out.join('\n')) as Analysis;
    for (const [analysis, digits, spread] of [
      [f32, 6, 1e-6],
      [a, 2, 2 ** -7],
    ] as const) {
      const byGroup = new Map<string, number[]>();
      for (const r of analysis.weights.perRollout) {
        const k = `${r.dataId} ${r.reward}`;
        byGroup.set(k, [...(byGroup.get(k) ?? []), r.weight]);
      }
      for (const ws of byGroup.values()) {
        expect(new Set(ws.map((w) => w.toPrecision(digits))).size).toBe(1);
        const lo = Math.min(...ws);
        const hi = Math.max(...ws);
        expect(hi - lo).toBeLessThanOrEqual(spread * Math.max(Math.abs(lo), Math.abs(hi)));
      }
    }
    expect(Object.keys(a.allModes).sort()).toEqual([
      'per_rollout_mean',
      'seq-mean-token-mean',
      'seq-mean-token-sum',
      'seq-mean-token-sum-norm',
      'token-mean',
    ]);
  });

  it('prints a readable summary by default', async () => {
    const jsonl = join(dir, 'trace.jsonl');
    const { toJsonlTrace } = await import('../../src/core/trace/io');
    writeFileSync(jsonl, toJsonlTrace(rollouts));
    expect(await analyze.run([jsonl, '--level', 'transition', '--adv', 'rloo'])).toBe(0);
    const text = out.join('\n');
    expect(text).toContain('Agent Lightning 1.0.x + verl 0.8.0');
    expect(text).toContain('merge (level=transition, tokens=engine): 120 rows');
    expect(text).toContain('advantages (rloo, rollout-level, bfloat16)');
    expect(text).toMatch(/per_rollout_mean\s+Σ\|w\|/);
    expect(text).toContain('effective weights, push −∂L/∂logπ (positive = reinforced');
    out = [];
    expect(
      await analyze.run([jsonl, '--adv', 'rloo', '--no-rollout-level-adv', '--reward-dtype', 'float32']),
    ).toBe(0);
    expect(out.join('\n')).toContain('advantages (rloo, row-level, float32)');
  });

  it('rejects bad flags and files with usage errors that name the flag and the upstream key', async () => {
    const jsonl = join(dir, 'trace.jsonl');
    writeFileSync(jsonl, '');
    await expect(analyze.run([jsonl, '--adv', 'nope'])).rejects.toThrow(UsageError);
    await expect(analyze.run([jsonl, '--adv', 'nope'])).rejects.toThrow(
      /algorithm.adv_estimator \(--adv-estimator\)/,
    );
    await expect(analyze.run([jsonl, '--loss-mode', 'mean'])).rejects.toThrow(/--loss-mode.*must be one of/);
    await expect(analyze.run([jsonl, '--loss-agg', 'mean'])).rejects.toThrow(
      /--loss-agg-mode.*must be one of/,
    );
    // the flag means policy_loss.loss_mode here as in lab train; an aggregation mode says where it goes
    await expect(analyze.run([jsonl, '--loss-mode', 'token-mean'])).rejects.toThrow(
      /token-mean is a loss_agg_mode: --loss-agg-mode token-mean --loss-mode vanilla/,
    );
    // a run's setting is refused with what the analysis reads instead
    await expect(analyze.run([jsonl, '--ppo-mini-batch-size', '4'])).rejects.toThrow(
      /ppo_mini_batch_size, a setting of a training run.*--mini-batch-rows/,
    );
    await expect(analyze.run([jsonl, '--mini-batch-rows', 'none'])).rejects.toThrow(/null is spelled 'null'/);
    await expect(analyze.run([jsonl, '--level', 'step'])).rejects.toThrow(
      /trace_aggregator.level \(--trace-aggregator-level\)/,
    );
    await expect(analyze.run([jsonl, '--reward-dtype', 'fp16'])).rejects.toThrow(/bfloat16, float32/);
    await expect(analyze.run([jsonl, '--token-source', 'retokenize', '--tokenizer', 'none'])).rejects.toThrow(
      /needs a tokenizer/,
    );
    await expect(analyze.run([jsonl, '--sign', 'up'])).rejects.toThrow(/--sign must be one of push.*grad/);
    await expect(analyze.run([join(dir, 'missing.jsonl')])).rejects.toThrow(/does not exist/);
    await expect(analyze.run([jsonl, '--frobnicate'])).rejects.toThrow(/unknown flag --frobnicate/);
    await expect(analyze.run([jsonl, '--trajectory-max-prompt-length', '-3'])).rejects.toThrow(/must be ≥ 1/);
    await expect(analyze.run([jsonl, '--clip-ratio-c', '1'])).rejects.toThrow(/clip_ratio_c/);
    await expect(analyze.run([jsonl, '--gamma', 'x'])).rejects.toThrow(/--gamma expects a number/);
    // an estimator a trace cannot feed: a clear error, not a stack trace
    await expect(analyze.run([jsonl, '--adv', 'remax'])).rejects.toThrow(
      /remax cannot run on a recorded trace: ReMax needs reward_baselines/,
    );
  });

  it('skips rollouts without calls at rollout level, and reports what the trainer would raise', async () => {
    const { toJsonlTrace } = await import('../../src/core/trace/io');
    const noCalls = { ...rollouts[0], rolloutId: 'no-calls', calls: [] };
    const jsonl = join(dir, 'nocalls.jsonl');
    writeFileSync(jsonl, toJsonlTrace([noCalls, ...rollouts.slice(0, 8)]));
    expect(await analyze.run([jsonl, '--json'])).toBe(0);
    const a = JSON.parse(out.join('\n')) as Analysis;
    expect(a.weights.perRollout.map((r) => r.rolloutId)).not.toContain('no-calls');
    expect(a.trainer.metrics['training/rollout_level_advantage/n_rollouts']).toBe(8);
    // every row over max_prompt_length: the trainer skips the step, and says so
    out = [];
    expect(await analyze.run([jsonl, '--trajectory-max-prompt-length', '2'])).toBe(0);
    expect(out.join('\n')).toMatch(/nothing to train on: the trainer skips this step/);
    // data.max_prompt_length is the transition level's: at trajectory level it is noted as unread
    out = [];
    errors = [];
    expect(await analyze.run([jsonl, '--max-prompt-length', '2'])).toBe(0);
    expect(out.join('\n')).not.toMatch(/nothing to train on/);
    expect(errors.join('\n')).toMatch(
      /--max-prompt-length sets data.max_prompt_length, which these settings do not read/,
    );
    out = [];
    expect(await analyze.run([jsonl, '--max-prompt-length', '2', '--level', 'transition'])).toBe(0);
    expect(out.join('\n')).toMatch(/nothing to train on: the trainer skips this step/);
    // pass@k with a one-rollout group raises upstream: reported as upstream's ValueError
    const single = join(dir, 'single.jsonl');
    writeFileSync(single, toJsonlTrace(rollouts.slice(0, 1)));
    expect(await analyze.run([single, '--adv', 'grpo_passk'])).toBe(1);
    expect(errors.join('\n')).toMatch(/the trainer raises ValueError: Pass@k requires at least 2 samples/);
  });

  it('reads a trace with the tokenizer its rollouts name, and says when it has to guess', async () => {
    const { toJsonlTrace } = await import('../../src/core/trace/io');
    const named = join(dir, 'named.jsonl');
    writeFileSync(
      named,
      toJsonlTrace(
        rollouts.slice(0, 4).map((r) => ({ ...r, metadata: { ...r.metadata, tokenizer: 'policy' } })),
      ),
    );
    expect(await analyze.run([named, '--json', '--no-retokenization'])).toBe(0);
    expect((JSON.parse(out.join('\n')) as Analysis).options.tokenizer).toBe('policy');
    expect(errors.join('\n')).not.toMatch(/names no tokenizer/);
    out = [];
    const unnamed = join(dir, 'unnamed.jsonl');
    writeFileSync(unnamed, toJsonlTrace(rollouts.slice(0, 4)));
    expect(await analyze.run([unnamed, '--json', '--no-retokenization'])).toBe(0);
    expect((JSON.parse(out.join('\n')) as Analysis).options.tokenizer).toBe('qwen3');
    expect(errors.join('\n')).toMatch(
      /the trace names no tokenizer \(metadata.tokenizer\); reading its ids as qwen3/,
    );
  });

  it('reports malformed lines and keeps the valid ones', async () => {
    const { toJsonlTrace } = await import('../../src/core/trace/io');
    const lines = toJsonlTrace(rollouts.slice(0, 3)).trimEnd().split('\n');
    lines.splice(1, 0, '{"rolloutId": 5}', 'not json');
    const jsonl = join(dir, 'bad.jsonl');
    writeFileSync(jsonl, lines.join('\n') + '\n');
    expect(await analyze.run([jsonl, '--json'])).toBe(0);
    const a = JSON.parse(out.join('\n')) as Analysis;
    expect(a.input.rollouts).toBe(3);
    expect(a.input.issues).toBe(2);
    expect(errors.join('\n')).toMatch(/line 2/);
    expect(errors.join('\n')).toMatch(/line 3/);
  });
});
