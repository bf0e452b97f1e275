import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { command as analyze } from '../../src/cli/commands/analyze';
import type { Analysis } from '../../src/core/analyze';
import {
  DEFAULT_TRAINER_OPTIONS,
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
    if (v === DEFAULT_TRAINER_OPTIONS[spec.name]) continue;
    if (spec.kind === 'bool') out.push(v ? `--${spec.flag}` : `--no-${spec.flag}`);
    else out.push(`--${spec.flag}`, v === null ? 'none' : String(v));
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

async function analyzeJson(paths: string[], o: TrainerOptions): Promise<Analysis> {
  const out: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((m: string) => void out.push(m));
  vi.spyOn(console, 'error').mockImplementation(() => {});
  expect(await analyze.run([...paths, ...flagsFor(o), '--json'])).toBe(0);
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
      const o: TrainerOptions = { ...DEFAULT_TRAINER_OPTIONS, ...c.options };
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
