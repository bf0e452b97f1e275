/**
 * Sample building against a plain reference: the adapter's rules (agentlightning/verl/rollout_adapter.py,
 * trajectory and transition levels, the gateway's call filter) written the simple way, on number[] lists and
 * one object per row, compared field by field with the typed-array builder on varied random batches. The
 * batches mix what the fast paths special-case: merge failures, observations, failed and duplicate calls,
 * missing, short, mismatched and non-finite log-prob lists, empty responses, empty rollouts, null rewards,
 * prompt and response truncation down to rows with nothing to train on.
 */
import { describe, expect, it } from 'vitest';
import { type BuildOptions, buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { bf16 } from '../../src/core/algos/numeric';
import { mulberry32 } from '../../src/core/random';
import type { ModelCall, Rollout } from '../../src/core/trace/types';

interface RefCall {
  p: number[];
  r: number[];
  lp: number[] | null;
  idx: number;
}

interface RefRow {
  ri: number;
  turn: number;
  first: number;
  count: number;
  prompt: number[];
  drop: boolean;
  resp: number[];
  mask: number[];
  call: number[];
  lp: number[] | null;
  reward: number;
}

const same = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  a.length === b.length && Array.from(a).every((x, i) => x === b[i]);

function refSelect(r: Rollout, gateway: boolean): RefCall[] {
  const out: RefCall[] = [];
  r.calls.forEach((c, i) => {
    if (gateway) {
      const p = c.promptTokenIds ?? new Int32Array(0);
      const later = r.calls.slice(i + 1).some((d) => same(d.promptTokenIds ?? new Int32Array(0), p));
      if (later || c.error !== undefined || c.httpStatus >= 400 || !c.responseTokenIds?.length) return;
    }
    if (!c.promptTokenIds || !c.responseTokenIds) return;
    const raw = c.responseLogProbs ?? c.mismatchedLogProbs;
    let lp = raw ? Array.from(raw) : null;
    if (gateway && lp?.some((x) => !Number.isFinite(x))) lp = null;
    out.push({ p: Array.from(c.promptTokenIds), r: Array.from(c.responseTokenIds), lp, idx: i });
  });
  return out;
}

function reference(rollouts: Rollout[], o: BuildOptions) {
  const order = rollouts.map((_, i) => i);
  order.sort(
    (a, b) =>
      (rollouts[a].step ?? 0) - (rollouts[b].step ?? 0) ||
      (rollouts[a].sampleIdxInStep ?? 0) - (rollouts[b].sampleIdxInStep ?? 0),
  );
  const rows: RefRow[] = [];
  let nTrunc = 0;
  let nSkippedEmpty = 0;
  let nUnmerged = 0;
  const failures: [number, number, number][] = [];
  const close = (row: RefRow) => {
    let { resp, mask, call } = row;
    if (resp.length > o.maxResponseLength) {
      nTrunc++;
      resp = resp.slice(0, o.maxResponseLength);
      mask = mask.slice(0, o.maxResponseLength);
      call = call.slice(0, o.maxResponseLength);
    }
    if (!mask.some((m) => m === 1)) {
      nSkippedEmpty++;
      return;
    }
    const lp = row.lp?.slice(0, o.maxResponseLength) ?? null;
    const drop = row.prompt.length > o.maxPromptLength;
    rows.push({
      ...row,
      resp,
      mask,
      call,
      lp: lp && lp.length === resp.length ? lp : null,
      prompt: drop ? row.prompt.slice(0, o.maxPromptLength) : row.prompt,
      drop,
    });
  };
  const start = (ri: number, c: RefCall, turn: number, reward: number): RefRow => ({
    ri,
    turn,
    first: c.idx,
    count: 1,
    prompt: c.p,
    drop: false,
    resp: [...c.r],
    mask: c.r.map(() => 1),
    call: c.r.map(() => c.idx),
    lp: c.lp ? [...c.lp] : null,
    reward,
  });
  for (const ri of order) {
    const calls = refSelect(rollouts[ri], (o.callFilter ?? 'agl-manager') === 'agl-manager');
    if (!calls.length) continue;
    const reward = bf16(rollouts[ri].finalReward ?? o.rewardFillnaValue);
    if (o.level === 'transition') {
      for (let t = 0; t < calls.length; t++) close(start(ri, calls[t], t, reward));
      continue;
    }
    let row = start(ri, calls[0], -1, reward);
    let groups = 1;
    for (let k = 1; k < calls.length; k++) {
      const c = calls[k];
      const ctx = [...calls[k - 1].p, ...calls[k - 1].r];
      if (c.p.length >= ctx.length && same(c.p.slice(0, ctx.length), ctx)) {
        const obs = c.p.slice(ctx.length);
        row.resp.push(...obs, ...c.r);
        row.mask.push(...obs.map(() => 0), ...c.r.map(() => 1));
        row.call.push(...obs.map(() => c.idx), ...c.r.map(() => c.idx));
        if (row.lp)
          row.lp = c.lp && c.lp.length === c.r.length ? [...row.lp, ...obs.map(() => 0), ...c.lp] : null;
        row.count++;
      } else {
        failures.push([ri, c.idx, calls[k - 1].idx]);
        close(row);
        groups++;
        row = start(ri, c, -1, reward);
      }
    }
    close(row);
    if (groups > 1) nUnmerged++;
  }
  return { rows, nTrunc, nSkippedEmpty, nUnmerged, failures };
}

/** A random batch of agent-like rollouts with the irregularities the builder handles. */
function randomBatch(seed: number): Rollout[] {
  const rand = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const ids = (n: number) => Array.from({ length: n }, () => int(0, 50));
  const out: Rollout[] = [];
  for (let ri = 0; ri < 40; ri++) {
    const calls: ModelCall[] = [];
    let prompt = ids(int(1, 12));
    const n = rand() < 0.05 ? 0 : int(1, 7);
    for (let k = 0; k < n; k++) {
      const r = ids(rand() < 0.08 ? 0 : int(1, 9));
      const c: ModelCall = {
        request: { messages: [], sampling: {} },
        response: null,
        promptTokenIds: Int32Array.from(prompt),
        responseTokenIds: Int32Array.from(r),
        responseLogProbs: Float32Array.from(r, () => -rand()),
        httpStatus: 200,
      };
      // odd seeds spoil log-prob lists; even seeds keep them all, so the batch's log-probs are compared too
      const spoil = seed % 2 === 1;
      const u = rand();
      if (u < 0.06) c.httpStatus = 500;
      else if (u < 0.1) c.error = 'failed';
      else if (u < 0.13) c.responseTokenIds = undefined;
      else if (spoil && u < 0.18) c.responseLogProbs = undefined;
      else if (spoil && u < 0.23 && r.length > 1) {
        c.mismatchedLogProbs = c.responseLogProbs?.slice(1);
        c.responseLogProbs = undefined;
      } else if (spoil && u < 0.27 && r.length > 0) (c.responseLogProbs as Float32Array)[0] = Number.NaN;
      calls.push(c);
      if (rand() < 0.1 && calls.length > 1) calls.push({ ...calls[calls.length - 2] }); // a repeated prompt
      const v = rand();
      if (v < 0.15)
        prompt = ids(int(1, 12)); // a new context: the prefix rule fails
      else if (v < 0.25)
        prompt = [...prompt, ...r.slice(0, -1)]; // the context cut short
      else prompt = [...prompt, ...r, ...ids(rand() < 0.3 ? 0 : int(1, 6))];
    }
    out.push({
      rolloutId: `r${ri}`,
      dataId: `d${ri % 5}`,
      isTrain: true,
      state: 'succeeded',
      calls,
      rewards: [],
      finalReward: rand() < 0.1 ? null : rand() * 2 - 1,
      metadata: {},
      step: int(0, 2),
      sampleIdxInStep: int(0, 3),
    });
  }
  return out;
}

describe('sample building equals the plain reference', () => {
  const base: BuildOptions = {
    level: 'trajectory',
    maxPromptLength: 1000,
    maxResponseLength: 1000,
    padTokenId: 0,
    rewardFillnaValue: -0.25,
  };
  const cases: [string, Partial<BuildOptions>][] = [
    ['trajectory, no truncation', { level: 'trajectory', maxPromptLength: 1000, maxResponseLength: 1000 }],
    ['trajectory, truncating', { level: 'trajectory', maxPromptLength: 6, maxResponseLength: 7 }],
    [
      'trajectory, every call, rows cut to observations only',
      { level: 'trajectory', callFilter: 'all', maxPromptLength: 4, maxResponseLength: 2 },
    ],
    ['transition, truncating', { level: 'transition', maxPromptLength: 5, maxResponseLength: 4 }],
    ['trajectory, every call (completed triplets)', { level: 'trajectory', callFilter: 'all' }],
    ['transition, every call', { level: 'transition', callFilter: 'all', maxResponseLength: 3 }],
  ];
  for (const [name, extra] of cases)
    it(name, () => {
      for (let seed = 1; seed <= 12; seed++) {
        const rollouts = randomBatch(seed);
        const o: BuildOptions = { ...base, ...extra };
        const ref = reference(rollouts, o);
        if (ref.rows.length === 0) {
          expect(() => buildTrainingBatch(rollouts, o)).toThrow(/zero training rows/);
          continue;
        }
        const { batch: b, rowHasLogProbs, counters, mergeFailures } = buildTrainingBatch(rollouts, o);
        const rows = ref.rows;
        const cat = (f: (r: RefRow) => number[]) => rows.flatMap(f);
        const offsets = [0];
        for (const r of rows) offsets.push(offsets[offsets.length - 1] + r.resp.length);
        const promptOffsets = [0];
        for (const r of rows) promptOffsets.push(promptOffsets[promptOffsets.length - 1] + r.prompt.length);
        expect({
          nRows: b.nRows,
          offsets: Array.from(b.offsets),
          responseIds: Array.from(b.responseIds),
          mask: Array.from(b.mask),
          tokenCall: Array.from(b.tokenCall),
          promptOffsets: Array.from(b.promptOffsets),
          promptIds: Array.from(b.promptIds),
          isDrop: Array.from(b.isDrop),
          rowRollout: Array.from(b.rowRollout),
          rolloutIds: b.rolloutIds,
          turnIndex: Array.from(b.turnIndex),
          firstCall: Array.from(b.firstCall),
          nCalls: Array.from(b.nCalls),
          reward: Array.from(b.reward),
          rowHasLogProbs: Array.from(rowHasLogProbs),
          logProbs: b.responseLogProbs && Array.from(b.responseLogProbs),
          nTrunc: counters.nTrunc,
          nSkippedEmpty: counters.nSkippedEmpty,
          nUnmerged: counters.nUnmerged,
          failures: mergeFailures.map((f) => [f.rolloutIndex, f.callIndex, f.prevCallIndex]),
        }).toEqual({
          nRows: rows.length,
          offsets,
          responseIds: cat((r) => r.resp),
          mask: cat((r) => r.mask),
          tokenCall: cat((r) => r.call),
          promptOffsets,
          promptIds: cat((r) => r.prompt),
          isDrop: rows.map((r) => (r.drop ? 1 : 0)),
          rowRollout: rows.map((r) => r.ri),
          rolloutIds: rows.map((r) => rollouts[r.ri].rolloutId),
          turnIndex: rows.map((r) => r.turn),
          firstCall: rows.map((r) => r.first),
          nCalls: rows.map((r) => r.count),
          reward: rows.map((r) => r.reward),
          rowHasLogProbs: rows.map((r) => (r.lp ? 1 : 0)),
          logProbs: rows.every((r) => r.lp) ? cat((r) => (r.lp as number[]).map(Math.fround)) : null,
          nTrunc: ref.nTrunc,
          nSkippedEmpty: ref.nSkippedEmpty,
          nUnmerged: o.level === 'trajectory' ? ref.nUnmerged : null,
          failures: o.level === 'trajectory' ? ref.failures : [],
        });
      }
    });

  it('the random batches reach every irregular case', () => {
    // guards the generator: without these the comparisons above would not exercise the special paths
    const seen = { failures: 0, truncated: 0, skippedEmpty: 0, rowsWithoutLp: 0, drops: 0, batchesWithLp: 0 };
    for (const [, extra] of cases)
      for (let seed = 1; seed <= 12; seed++) {
        const o = { ...base, ...extra };
        let res: ReturnType<typeof buildTrainingBatch>;
        try {
          res = buildTrainingBatch(randomBatch(seed), o);
        } catch {
          continue;
        }
        seen.failures += res.mergeFailures.length;
        seen.truncated += res.counters.nTrunc;
        seen.skippedEmpty += res.counters.nSkippedEmpty;
        seen.rowsWithoutLp += res.rowHasLogProbs.filter((x) => x === 0).length;
        if (res.batch.responseLogProbs) seen.batchesWithLp++;
        seen.drops += res.batch.isDrop.filter((x) => x === 1).length;
      }
    for (const [what, n] of Object.entries(seen)) expect(n, what).toBeGreaterThan(0);
  });
});
