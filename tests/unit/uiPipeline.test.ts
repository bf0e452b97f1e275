import { describe, expect, it } from 'vitest';
import { getAdvEstimator, listAdvEstimators, traceUnavailable } from '../../src/core/algos/advantage';
import { listLossModes } from '../../src/core/algos/lossModes';
import { DEFAULT_TRAINER_OPTIONS, type TrainerOptions } from '../../src/core/pipeline/options';
import { computeTrainerView, withLossMode } from '../../src/core/pipeline/trainer';
import { combineTraces } from '../../src/core/trace/combine';
import { toJsonlTrace } from '../../src/core/trace/io';
import { AGENT_BATCH_SHAPE, syntheticAgentBatch } from '../../src/core/trace/synthetic';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import { compute, forTransfer, newBuildCache, parseTrace, splitResult } from '../../src/ui/lab/pipeline';

function call(prompt: number[], response: number[]): ModelCall {
  return {
    request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from(prompt),
    responseTokenIds: Int32Array.from(response),
    responseLogProbs: Float32Array.from(response, () => -0.5),
    httpStatus: 200,
  };
}

function rollout(id: string, group: string, reward: number, calls: ModelCall[]): Rollout {
  return {
    rolloutId: id,
    dataId: group,
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [{ value: reward }],
    finalReward: reward,
    metadata: {},
  };
}

/** Two groups; r0 merges two calls (observation tokens 7 8), r1 breaks its merge, r2/r3 single calls. */
const rollouts = [
  rollout('r0', 'g0', 1, [call([1, 2], [3, 4]), call([1, 2, 3, 4, 7, 8], [5])]),
  rollout('r1', 'g0', 0, [call([1, 2], [3, 4, 5]), call([9, 9], [6, 6])]),
  rollout('r2', 'g1', 1, [call([1], [2, 3, 4, 5, 6])]),
  rollout('r3', 'g1', 0, [call([1], [2])]),
];

const opts: TrainerOptions = {
  ...DEFAULT_TRAINER_OPTIONS,
  maxPromptLength: 64,
  maxResponseLength: 64,
  lossMode: 'token-mean',
};

describe('lab pipeline over core', () => {
  it('parses our JSONL and reports lines and format', () => {
    const text = `${toJsonlTrace(rollouts)}{"broken": \n`;
    const { trace, summary } = parseTrace(text, 't.jsonl', () => {});
    expect(trace.rollouts.map((r) => r.rolloutId)).toEqual(['r0', 'r1', 'r2', 'r3']);
    expect(trace.issues).toHaveLength(1);
    expect(trace.issues[0].where).toBe('line 5');
    expect(summary).toEqual({ name: 't.jsonl', lines: 5, format: 'jsonl' });
  });

  it('is core’s trainer view: per-rollout weights of every loss mode, per source rollout', () => {
    const trace = { rollouts, issues: [], counters: {} };
    for (const m of listLossModes()) {
      const res = compute(trace, { ...opts, lossMode: m.name });
      const view = computeTrainerView({ rollouts, options: { ...opts, lossMode: m.name } });
      expect(Array.from(res.rolloutWeight)).toEqual(Array.from(view.selected.rolloutSums));
      expect(Array.from(res.tokenWeight)).toEqual(Array.from(view.selected.weights));
      // the all-modes table agrees with the selected mode's column
      const col = res.modes.find((x) => x.name === m.name);
      expect(col?.key).toBe(m.key);
      expect(Array.from(col?.rolloutWeight ?? [])).toEqual(Array.from(res.rolloutWeight));
    }
    const res = compute(trace, opts);
    expect(res.mergeFailures.map((f) => [f.rolloutId, f.callIndex])).toEqual([['r1', 1]]);
    expect(res.rolloutWeight.some((w) => w !== 0)).toBe(true);
    expect(res.groupKeys).toEqual(['g0', 'g1']);
    expect(res.reference).toBe('Agent Lightning 1.0.x + verl 0.8.0');
    expect(res.advantagesDType).toBe('bfloat16');
  });

  it('gives the uncached numbers from its stage cache, through every loss mode and estimator toggle', () => {
    // a small agent batch: merges, merge breaks, groups of 4, engine log-probs (rollout correction applies)
    const agent = syntheticAgentBatch({
      ...AGENT_BATCH_SHAPE,
      rollouts: 16,
      callsPerRollout: 4,
      groupSize: 4,
      mismatchRate: 0.2,
    });
    const trace = { rollouts: agent, issues: [], counters: {} };
    const cache = newBuildCache();
    const estimators = listAdvEstimators()
      .filter((e) => !traceUnavailable(getAdvEstimator(e.name)))
      .map((e) => e.name);
    expect(estimators.length).toBeGreaterThan(2);
    const strip = ({ buildSerial: _b, viewSerial: _v, ...rest }: ReturnType<typeof compute>) => rest;
    let lastView = -1;
    for (const advEstimator of estimators) {
      const serials = new Set<number>();
      for (const m of [...listLossModes(), ...listLossModes().reverse()]) {
        const o = { ...opts, advEstimator, lossMode: m.name, rolloutIs: 'token' as const };
        const cached = compute(trace, o, undefined, cache);
        expect(strip(cached)).toEqual(strip(compute(trace, o)));
        serials.add(cached.viewSerial);
      }
      // a loss-mode change reuses the view; an estimator change computes a new one
      expect(serials.size).toBe(1);
      expect([...serials][0]).not.toBe(lastView);
      lastView = [...serials][0];
    }
    // rollout correction kept across those toggles is computed again when its own options change
    for (const rolloutIsThreshold of [1.01, 2, 1.01]) {
      const o = { ...opts, rolloutIs: 'token' as const, rolloutIsThreshold };
      expect(strip(compute(trace, o, undefined, cache))).toEqual(strip(compute(trace, o)));
    }
  });

  it('selects another loss mode on a view only when nothing else differs', () => {
    const view = computeTrainerView({ rollouts, options: opts });
    for (const m of listLossModes()) {
      const other = computeTrainerView({ rollouts, options: { ...opts, lossMode: m.name } });
      const moved = withLossMode(view, { ...opts, lossMode: m.name });
      expect(moved.selected.name).toBe(m.name);
      expect(moved.options).toEqual(other.options);
      expect(moved.groups).toEqual(other.groups);
      expect(Array.from(moved.selected.weights)).toEqual(Array.from(other.selected.weights));
    }
    expect(() => withLossMode(view, { ...opts, advEstimator: 'rloo' })).toThrow(/more than the loss mode/);
  });

  it('hands over copies of the weights, so the cached arrays survive the transfer', () => {
    const trace = { rollouts, issues: [], counters: {} };
    const cache = newBuildCache();
    const res = compute(trace, opts, undefined, cache);
    const { weights } = splitResult(res);
    const sent = forTransfer(weights);
    expect(sent.weights).toEqual(weights);
    expect(sent.transfer.length).toBeGreaterThan(5);
    expect(new Set(sent.transfer).size).toBe(sent.transfer.length);
    const before = Array.from(weights.tokenWeight);
    structuredClone(sent.weights, { transfer: sent.transfer });
    expect(sent.weights.tokenWeight.length).toBe(0); // detached: it went over
    expect(Array.from(weights.tokenWeight)).toEqual(before);
    expect(Array.from(compute(trace, opts, undefined, cache).tokenWeight)).toEqual(before);
  });

  it('reuses built rows when only weight options change, and rebuilds when sample building changes', () => {
    const trace = { rollouts, issues: [], counters: {} };
    const cache = newBuildCache();
    const a = compute(trace, opts, undefined, cache);
    const b = compute(
      trace,
      { ...opts, lossMode: 'per_rollout_mean', advEstimator: 'rloo' },
      undefined,
      cache,
    );
    expect(b.batch).toBe(a.batch);
    expect(b.buildSerial).toBe(a.buildSerial);
    const c = compute(trace, { ...opts, traceAggregatorLevel: 'transition' }, undefined, cache);
    expect(c.buildSerial).toBe(a.buildSerial + 1);
    expect(c.batch.nRows).toBe(6); // one row per call
    const { rows, weights } = splitResult(c);
    expect(rows.batch).toBe(c.batch);
    expect('batch' in weights).toBe(false);
  });
});

describe('a sample of several files', () => {
  it('keeps every rollout, renames taken ids after their file, and names the file of each issue', () => {
    const a = { rollouts: [rollouts[0], rollouts[1]], issues: [], counters: { n: 1 } };
    const b = {
      rollouts: [rollouts[0], rollouts[2]],
      issues: [{ where: 'line 3', message: 'is not valid JSON' }],
      counters: { n: 2 },
    };
    const t = combineTraces([
      { name: 'expert.jsonl', trace: a },
      { name: 'coding-random.jsonl', trace: b },
    ]);
    expect(t.rollouts.map((r) => r.rolloutId)).toEqual(['r0', 'r1', 'r0@random', 'r2']);
    expect(t.rollouts[2].calls).toBe(rollouts[0].calls);
    expect(t.issues).toEqual([{ where: 'coding-random.jsonl line 3', message: 'is not valid JSON' }]);
    expect(t.counters.n).toBe(3);
  });
});
