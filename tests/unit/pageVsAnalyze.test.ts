import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { command as analyze } from '../../src/cli/commands/analyze';
import { loadTokenizer } from '../../src/cli/tokenizers';
import type { Analysis } from '../../src/core/analyze';
import {
  DEFAULT_TRAINER_OPTIONS,
  DEFAULT_TRAINER_SETTINGS,
  resolveTrainerOptions,
  TRAINER_OPTIONS,
  type TrainerOptions,
} from '../../src/core/pipeline/options';
import { callWeights, rowsOfRollouts } from '../../src/core/pipeline/perCall';
import type { TraceBatch } from '../../src/core/trace/types';
import { combineTraces, compute, newBuildCache, parseTrace } from '../../src/ui/lab/pipeline';

/** A bundled sample read as the page's worker reads it (each file parsed, then combined). */
function sample(files: string[]): { paths: string[]; trace: TraceBatch } {
  const paths = files.map((f) => join('public', 'samples', f));
  const parts = files.map((f, i) => ({
    name: f,
    trace: parseTrace(readFileSync(paths[i], 'utf8'), f, () => {}).trace,
  }));
  return { paths, trace: parts.length === 1 ? parts[0].trace : combineTraces(parts) };
}

/** The CLI flags that set `o` (from core's option registry, as `lab analyze` parses them). */
function flagsFor(o: TrainerOptions): string[] {
  const out: string[] = [];
  for (const spec of TRAINER_OPTIONS) {
    const v = o[spec.name];
    if (v === DEFAULT_TRAINER_SETTINGS[spec.name]) continue;
    if (spec.kind === 'bool') out.push(v ? `--${spec.flag}` : `--no-${spec.flag}`);
    else out.push(`--${spec.flag}`, v === null ? 'null' : String(v));
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

async function analyzeJson(
  paths: string[],
  o: TrainerOptions,
  extra = ['--sign', 'grad'],
): Promise<Analysis> {
  const out: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((m: string) => void out.push(m));
  vi.spyOn(console, 'error').mockImplementation(() => {});
  expect(await analyze.run([...paths, ...flagsFor(o), ...extra, '--json'])).toBe(0);
  vi.restoreAllMocks();
  return JSON.parse(out.join('\n')) as Analysis;
}

const cases: { name: string; files: string[]; options: Partial<TrainerOptions> }[] = [
  {
    name: 'defaults, mixed-reward coding sample',
    files: ['coding-scripted.jsonl', 'coding-random.jsonl'],
    options: {},
  },
  {
    name: 'transition level, row-level RLOO in float32, token-mean',
    files: ['coding-scripted.jsonl', 'coding-random.jsonl'],
    options: {
      traceAggregatorLevel: 'transition',
      advEstimator: 'rloo',
      enableRolloutLevelAdvantage: false,
      rewardDtype: 'float32',
      lossMode: 'token-mean',
    },
  },
  {
    name: 'merge failures, is_drop rows, trimming to mini-batches, seq-mean-token-sum-norm',
    files: ['search-strip-think.jsonl', 'search-summarize.jsonl'],
    options: {
      maxPromptLength: 300,
      maxResponseLength: 200,
      ppoMiniBatchSize: 4,
      lossMode: 'seq-mean-token-sum-norm',
      advEstimator: 'opo',
      clipRatioHigh: 0.28,
    },
  },
  {
    name: 'REINFORCE++ baseline (whitened over the batch), seq-mean-token-mean, dual clip c = 5',
    files: ['coding-scripted.jsonl', 'coding-random.jsonl', 'instruction-scripted.jsonl'],
    options: { advEstimator: 'reinforce_plus_plus_baseline', lossMode: 'seq-mean-token-mean', clipRatioC: 5 },
  },
];

describe('the page’s worker pipeline and `lab analyze --json` give the same numbers', () => {
  for (const c of cases)
    it(c.name, async () => {
      const { paths, trace } = sample(c.files);
      const o = resolveTrainerOptions(c.options);
      const page = compute(trace, o, undefined, newBuildCache());
      const a = await analyzeJson(paths, o);
      expect(a.options).toMatchObject(o);
      expect(page.reference).toBe(a.reference);
      expect(page.trainerCounters).toEqual(a.trainer.counters);
      expect(page.batch.nRows).toBe(a.merge.rows);
      expect(page.advantagesDType).toBe(a.advantages.dtype);
      const ids = trace.rollouts.map((r) => r.rolloutId);
      // every mode's per-rollout totals
      expect(page.modes.map((m) => m.name)).toEqual(Object.keys(a.allModes));
      let nonzero = 0;
      for (const m of page.modes) {
        expect(m.key).toBe(a.allModes[m.name].key);
        ids.forEach((id, i) => {
          const got = a.allModes[m.name].perRollout[id];
          expect(m.rolloutWeight[i], `${m.name} ${id}`).toBe(got ?? 0);
          if (m.rolloutWeight[i] !== 0) nonzero++;
        });
      }
      expect(nonzero).toBeGreaterThan(0);
      // the selected mode: per rollout, per group, per call
      for (const r of a.weights.perRollout)
        expect(page.rolloutWeight[ids.indexOf(r.rolloutId)]).toBe(r.weight);
      expect(page.groupKeys).toEqual(a.weights.perGroup.map((g) => g.dataId));
      expect(Array.from(page.groupWeight)).toEqual(a.weights.perGroup.map((g) => g.weight));
      expect(Array.from(page.groupNegative)).toEqual(a.weights.perGroup.map((g) => g.negative));
      const rows = rowsOfRollouts(page, ids.length);
      for (const pc of a.perCall) {
        const i = ids.indexOf(pc.rolloutId);
        const cw = callWeights(
          {
            batch: page.batch,
            trainPosition: page.trainPosition,
            responseMask: page.responseMask,
            weights: page.tokenWeight,
            advantages: page.tokenAdvantage,
          },
          i,
          trace.rollouts[i].calls.length,
          rows[i],
        );
        expect(Array.from(cw.weight)).toEqual(pc.calls.map((x) => x.weight));
        expect(Array.from(cw.tokens)).toEqual(pc.calls.map((x) => x.trainable));
        expect(Array.from(cw.untrained)).toEqual(pc.calls.map((x) => x.untrained));
      }
    });
});

describe('the page and `lab analyze` share their defaults', () => {
  it('classify merge failures with the same tokenizer and show the push −∂L/∂logπ by default', async () => {
    const { paths, trace } = sample([
      'coding-scripted.jsonl',
      'coding-random.jsonl',
      'search-strip-think.jsonl',
    ]);
    // the page's worker reads every trace with ids through the Qwen3 tokenizer; the CLI does so unless told not to
    const page = compute(trace, DEFAULT_TRAINER_OPTIONS, loadTokenizer('qwen3'), newBuildCache());
    const a = await analyzeJson(paths, DEFAULT_TRAINER_OPTIONS, []);
    expect(a.options.tokenizer).toBe('qwen3');
    const kinds = (fs: { kind: string }[]) => fs.map((f) => f.kind);
    expect(page.mergeFailures.length).toBeGreaterThan(0);
    expect(kinds(a.merge.examples)).toEqual(kinds(page.mergeFailures.slice(0, a.merge.examples.length)));
    const byKind: Record<string, number> = {};
    for (const f of page.mergeFailures) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
    for (const [k, n] of Object.entries(a.merge.failures)) expect(n, k).toBe(byKind[k] ?? 0);
    expect(a.merge.failures.other).toBe(0);
    // the default sign is the push: −(the page's ∂L/∂logπ), named so
    expect(a.sign).toEqual({ name: 'push', symbol: '−∂L/∂logπ' });
    const ids = trace.rollouts.map((r) => r.rolloutId);
    let nonzero = 0;
    for (const r of a.weights.perRollout) {
      const g = page.rolloutWeight[ids.indexOf(r.rolloutId)];
      expect(r.weight).toBe(g === 0 ? 0 : -g);
      if (g !== 0) nonzero++;
    }
    expect(nonzero).toBeGreaterThan(0);
    // successful rollouts are reinforced: a positive push
    for (const r of a.weights.perRollout)
      if (r.reward === 1 && r.weight !== 0) expect(r.weight).toBeGreaterThan(0);
    const grad = await analyzeJson(paths, DEFAULT_TRAINER_OPTIONS, ['--sign', 'grad', '--tokenizer', 'none']);
    // without a tokenizer the same breaks cannot be told apart (what the CLI used to print by default)
    expect(grad.merge.failures.other).toBe(page.mergeFailures.length);
    a.weights.perGroup.forEach((g, i) => {
      expect(g.positive).toBe(-grad.weights.perGroup[i].negative || 0);
      expect(g.negative).toBe(-grad.weights.perGroup[i].positive || 0);
    });
  });
});
