import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command as analyze } from '../../src/cli/commands/analyze';
import { command as convert } from '../../src/cli/commands/convert';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { effectiveWeights } from '../../src/core/algos/effectiveWeights';
import type { Analysis } from '../../src/core/analyze';
import { toAglEventsBundle } from '../../src/core/trace/io';
import { AGENT_BATCH_SHAPE, syntheticAgentBatch } from '../../src/core/trace/synthetic';

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
  it('analyzes a trace converted from Agent Lightning events, matching core numbers', async () => {
    const events = join(dir, 'events.json');
    const jsonl = join(dir, 'trace.jsonl');
    writeFileSync(events, JSON.stringify(toAglEventsBundle(rollouts)));
    expect(await convert.run([events, jsonl])).toBe(0);
    out = [];
    const code = await analyze.run([
      jsonl,
      '--rollout-level-adv',
      '--loss-agg',
      'per_rollout_mean',
      '--json',
    ]);
    expect(code).toBe(0);
    const a = JSON.parse(out.join('\n')) as Analysis;
    expect(a.input.rollouts).toBe(24);
    expect(a.input.calls).toBe(24 * 5);

    const built = buildTrainingBatch(rollouts, {
      level: 'trajectory',
      maxPromptLength: 1 << 20,
      maxResponseLength: 1 << 20,
      padTokenId: 0,
      rewardFillnaValue: 0,
    });
    expect(a.merge.rows).toBe(built.batch.nRows);
    expect(a.merge.counters.nMergeMismatchRows).toBe(built.counters.nMergeMismatchRows);
    expect(a.merge.rows).toBeGreaterThan(24); // mismatches split rollouts into several rows
    const eff = effectiveWeights(built.batch, {
      advEstimator: 'grpo',
      normAdvByStd: true,
      rolloutLevel: true,
      lossAggMode: 'per_rollout_mean',
    });
    for (const r of a.weights.perRollout) {
      const idx = rollouts.findIndex((x) => x.rolloutId === r.rolloutId);
      expect(r.weight).toBeCloseTo(eff.rolloutSums[idx], 10);
    }
    // per_rollout_mean gives every rollout of a group the weight −A_r/N, whatever its length or rows.
    const byGroup = new Map<string, Map<number | null, Set<string>>>();
    for (const r of a.weights.perRollout) {
      const g = byGroup.get(r.dataId) ?? new Map();
      const s = g.get(r.reward) ?? new Set();
      s.add(r.weight.toPrecision(6));
      g.set(r.reward, s);
      byGroup.set(r.dataId, g);
    }
    for (const g of byGroup.values()) for (const s of g.values()) expect(s.size).toBe(1);
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
    expect(text).toContain('merge (level=transition, tokens=engine): 120 rows');
    expect(text).toContain('advantages (rloo, row-level)');
    expect(text).toMatch(/per_rollout_mean\s+Σ\|w\|/);
  });

  it('rejects bad flags and files with usage errors', async () => {
    const jsonl = join(dir, 'trace.jsonl');
    writeFileSync(jsonl, '');
    await expect(analyze.run([jsonl, '--adv', 'nope'])).rejects.toThrow(UsageError);
    await expect(analyze.run([jsonl, '--loss-agg', 'mean'])).rejects.toThrow(/--loss-agg must be one of/);
    await expect(analyze.run([jsonl, '--level', 'step'])).rejects.toThrow(/--level must be one of/);
    await expect(analyze.run([jsonl, '--token-source', 'retokenize'])).rejects.toThrow(/needs --tokenizer/);
    await expect(analyze.run([join(dir, 'missing.jsonl')])).rejects.toThrow(/does not exist/);
    await expect(analyze.run([jsonl, '--frobnicate'])).rejects.toThrow(/unknown flag --frobnicate/);
    await expect(analyze.run([jsonl, '--max-prompt-length', '-3'])).rejects.toThrow(/positive integer/);
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
