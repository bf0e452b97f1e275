import { describe, expect, it } from 'vitest';
import { listAdvEstimators } from '../../src/core/algos/advantage';
import { aggLoss } from '../../src/core/algos/aggLoss';
import { UpstreamError } from '../../src/core/algos/numeric';
import { getPolicyLoss } from '../../src/core/algos/policyLoss';
import { getReferenceStack, listReferenceStacks } from '../../src/core/algos/stacks';
import { resolveTrainerOptions, type TrainerOptionsInput } from '../../src/core/pipeline/options';
import {
  buildRows,
  computeTrainerAdvantages,
  computeTrainerView,
  prepareTrainerBatch,
} from '../../src/core/pipeline/trainer';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import { diffWeights } from '../../src/core/weightDiff';

/**
 * A multi-turn trace: each rollout is three model calls whose prompts extend the previous prompt + response +
 * a tool observation, so at trajectory level every row is [turn, observation, turn, observation, turn] with the
 * observations masked (mask 0), as Agent Lightning's adapter builds them.
 */
function call(prompt: number[], response: number[], shift: number): ModelCall {
  return {
    request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from(prompt),
    responseTokenIds: Int32Array.from(response),
    // the engine's log-probs; the trainer's old log-probs below differ from them by a per-token shift
    responseLogProbs: Float32Array.from(response, (_, i) => -0.3 - 0.07 * i - shift),
    httpStatus: 200,
  };
}

function multiTurn(id: string, group: string, reward: number, idx: number): Rollout {
  const calls: ModelCall[] = [];
  let prompt = [1, 2, 3, 4 + idx];
  for (let turn = 0; turn < 3; turn++) {
    const response = Array.from({ length: 3 + ((idx + turn) % 3) }, (_, i) => 100 + 10 * turn + i + idx);
    calls.push(call(prompt, response, 0.05 * ((idx + turn) % 4)));
    const observation = Array.from({ length: 2 + turn }, (_, i) => 500 + 10 * turn + i);
    prompt = [...prompt, ...response, ...observation];
  }
  return {
    rolloutId: id,
    dataId: group,
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [{ value: reward }],
    finalReward: reward,
    metadata: {},
    step: 0,
    sampleIdxInStep: idx,
  };
}

const rewards = [1, 0, 0.5, 1, 0, 0.25, 1, 0];
const rollouts = rewards.map((r, i) => multiTurn(`r${i}`, i < 4 ? 'g0' : 'g1', r, i));
const V08 = 'agentlightning-1.0+verl-0.8.0' as const;
const V09 = 'verl-0.9.0' as const;

/** Trainer advantages (with returns) and the whole view under one stack. */
function run(stack: typeof V08 | typeof V09, input: TrainerOptionsInput) {
  const o = resolveTrainerOptions({ traceAggregatorLevel: 'trajectory', ...input, referenceStack: stack });
  const tb = prepareTrainerBatch(rollouts, buildRows(rollouts, o), o);
  // the trainer's old log-probs: the engine's shifted, so rollout correction has something to correct
  const engine = tb.batch.responseLogProbs as Float32Array;
  const oldLogProbs = Float32Array.from(engine, (x, t) => x + 0.4 * Math.sin(1.7 * t));
  const adv = computeTrainerAdvantages(tb, { oldLogProbs });
  const view = computeTrainerView({ rollouts, options: o, oldLogProbs: undefined });
  return { tb, adv, view };
}

/** Positions where two arrays differ (bit for bit). */
function differing(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  expect(a.length).toBe(b.length);
  const out: number[] = [];
  for (let t = 0; t < a.length; t++) if (!Object.is(a[t], b[t])) out.push(t);
  return out;
}

describe('reference stacks: verl 0.9.0 differs from Agent Lightning 1.0 + verl 0.8.0 exactly where its changes say', () => {
  it('the trace is multi-turn with masked observation spans inside rows', () => {
    const { adv } = run(V08, {});
    const { offsets, mask } = adv.rows;
    let holes = 0;
    for (let r = 0; r < adv.rows.nRows; r++) {
      let seenValid = false;
      let inHole = false;
      for (let t = offsets[r]; t < offsets[r + 1]; t++) {
        if (mask[t] && inHole && seenValid) holes++;
        inHole = !mask[t];
        if (mask[t]) seenValid = true;
      }
    }
    // two observation spans in each of the eight rows
    expect(adv.rows.nRows).toBe(8);
    expect(holes).toBe(16);
  });

  it('lists every change with the upstream change that made it; the default stack lists none', () => {
    expect(listReferenceStacks().map((s) => s.name)).toEqual([V08, V09]);
    expect(getReferenceStack(V08).changes).toEqual([]);
    const changes = getReferenceStack(V09).changes;
    expect(changes.map((c) => c.id)).toEqual([
      'reinforce_returns_through_observations',
      'token_sum_aggregation',
      'dro_policy_loss',
      'is_seq_fraction_on_raw_weights',
      'rs_k1_threshold_order',
    ]);
    for (const c of changes) expect(c.madeBy).toMatch(/verl\/(trainer|workers)\/.+\.py/);
  });

  it('every estimator but REINFORCE++ gives bit-identical advantages, returns, IS weights and view weights', () => {
    const estimators = listAdvEstimators()
      .filter((e) => !e.requires?.length)
      .map((e) => e.name);
    expect(estimators).toContain('grpo');
    for (const advEstimator of estimators) {
      if (advEstimator === 'reinforce_plus_plus') continue;
      for (const enableRolloutLevelAdvantage of [true, false]) {
        const opts = { advEstimator, enableRolloutLevelAdvantage, rolloutIs: 'token' as const };
        const a = run(V08, opts);
        const b = run(V09, opts);
        const what = `${advEstimator} rollout-level=${enableRolloutLevelAdvantage}`;
        expect(differing(a.adv.advantages, b.adv.advantages), what).toEqual([]);
        expect(differing(a.adv.returns, b.adv.returns), what).toEqual([]);
        expect(differing(a.adv.rolloutIsWeights ?? [], b.adv.rolloutIsWeights ?? []), what).toEqual([]);
        for (let k = 0; k < a.view.modes.length; k++)
          expect(differing(a.view.modes[k].weights, b.view.modes[k].weights), what).toEqual([]);
      }
    }
  });

  it('REINFORCE++: the returns differ exactly at the valid tokens before an observation span and at the observations', () => {
    for (const gamma of [1, 0.9]) {
      const opts = { advEstimator: 'reinforce_plus_plus', enableRolloutLevelAdvantage: false, gamma };
      const a = run(V08, opts).adv;
      const b = run(V09, opts).adv;
      const { offsets, mask } = a.rows;
      // what #7300 says: a valid token followed (later in its row) by a mask-0 position and then a valid token
      // got the later return in 0.9.0 and lost it in 0.8.0; a mask-0 position is 0 in 0.9.0 (its own r_t + γ·G
      // in 0.8.0, nonzero only where the return reaches it)
      const predicted: number[] = [];
      for (let r = 0; r < a.rows.nRows; r++) {
        let lastValid = -1;
        for (let t = offsets[r]; t < offsets[r + 1]; t++) if (mask[t]) lastValid = t;
        for (let t = offsets[r]; t < offsets[r + 1]; t++) {
          if (!mask[t]) {
            if (a.returns[t] !== 0) predicted.push(t);
            continue;
          }
          let hole = false;
          for (let u = t + 1; u <= lastValid; u++) if (!mask[u]) hole = true;
          // (a row whose reward is 0 has nothing to carry)
          if (hole && a.returns[lastValid] !== 0) predicted.push(t);
        }
      }
      expect(predicted.length, `γ=${gamma}`).toBeGreaterThan(25);
      expect(differing(a.returns, b.returns), `γ=${gamma}`).toEqual(predicted);
      // 0.9.0: at the valid tokens the return is the last turn's discounted by the valid tokens between
      for (let r = 0; r < a.rows.nRows; r++) {
        const valid: number[] = [];
        for (let t = offsets[r]; t < offsets[r + 1]; t++) if (mask[t]) valid.push(t);
        const last = valid[valid.length - 1];
        valid.forEach((t, k) => {
          const steps = valid.length - 1 - k;
          expect(b.returns[t]).toBeCloseTo(b.returns[last] * gamma ** steps, 2);
        });
      }
    }
  });

  it('rollout correction: the weights and masks agree; only rollout_is_seq_fraction_high/low differ', () => {
    for (const rolloutIs of ['token', 'sequence'] as const) {
      const opts = { rolloutIs, rolloutIsThreshold: 1.1, rolloutRs: 'token_k1', rolloutRsThreshold: '0.3_3' };
      const a = run(V08, opts).adv;
      const b = run(V09, opts).adv;
      expect(differing(a.rolloutIsWeights ?? [], b.rolloutIsWeights ?? [])).toEqual([]);
      expect(differing(a.responseMask, b.responseMask)).toEqual([]);
      const keys = Object.keys(a.metrics);
      expect(Object.keys(b.metrics)).toEqual(keys);
      const changed = keys.filter((k) => !Object.is(a.metrics[k], b.metrics[k]));
      if (rolloutIs === 'token') {
        // truncated row means never exceed the threshold; raw ones do on this trace
        expect(a.metrics['rollout_corr/rollout_is_seq_fraction_high']).toBe(0);
        expect(b.metrics['rollout_corr/rollout_is_seq_fraction_high']).toBeGreaterThan(0);
        expect(changed.sort()).toEqual([
          'rollout_corr/rollout_is_seq_fraction_high',
          'rollout_corr/rollout_is_seq_fraction_low',
        ]);
      } else {
        // a sequence-level weight is one value per row: the raw row mean exceeds the threshold where it was cut
        expect(changed).toContain('rollout_corr/rollout_is_seq_fraction_high');
        for (const k of changed) expect(k).toMatch(/^rollout_corr\/rollout_is_seq_fraction_(high|low)$/);
      }
    }
  });

  it('an inverted k1 threshold is accepted by 0.8.0 (every token rejected) and a ValueError in 0.9.0', () => {
    const opts = { rolloutRs: 'token_k1', rolloutRsThreshold: '2_0.5', enableRolloutLevelAdvantage: false };
    const a = run(V08, opts).adv;
    expect(a.responseMask.every((m) => m === 0)).toBe(true);
    expect(() => run(V09, opts)).toThrow(/must be lower <= upper/);
  });

  it('token-sum and dro exist only on verl 0.9.0, with the upstream error on 0.8.0', () => {
    const rows = { nRows: 2, offsets: Int32Array.from([0, 3, 6]), mask: Uint8Array.from([1, 0, 1, 1, 1, 0]) };
    const loss = Float32Array.from([1, 5, 2, -1, 0.5, 9]);
    expect(aggLoss(rows, loss, 'token-sum', { stack: V09, dpSize: 2 })).toBe(5);
    expect(() => aggLoss(rows, loss, 'token-sum', { stack: V08 })).toThrow(UpstreamError);
    expect(() => aggLoss(rows, loss, 'token-sum')).toThrow(/Invalid loss_agg_mode: token-sum/);
    expect(getPolicyLoss('dro', V09).name).toBe('dro');
    expect(() => getPolicyLoss('dro', V08)).toThrow(/Unsupported loss mode: dro/);
  });

  it('the view and the analysis name the chosen stack', () => {
    expect(run(V08, {}).view.reference.label).toBe('Agent Lightning 1.0.x + verl 0.8.0');
    expect(run(V09, {}).view.reference.label).toBe('Agent Lightning 1.0.x rows + verl 0.9.0');
    expect(() => resolveTrainerOptions({ referenceStack: 'verl-0.7' as never })).toThrow(
      /lab.reference_stack \(--reference-stack\): must be one of agentlightning-1.0\+verl-0.8.0, verl-0.9.0/,
    );
  });
});

describe('weight differences between two stacks or settings on one trace', () => {
  const resolve = (stack: typeof V08 | typeof V09, input: TrainerOptionsInput) =>
    resolveTrainerOptions({ traceAggregatorLevel: 'trajectory', ...input, referenceStack: stack });

  it('REINFORCE++: the stack moves tokens, calls and rollouts, largest first, attributed to #7300', () => {
    const opts = {
      advEstimator: 'reinforce_plus_plus',
      enableRolloutLevelAdvantage: false,
      policyLossMode: 'vanilla',
    };
    const d = diffWeights(rollouts, resolve(V08, opts), resolve(V09, opts), { limit: 5 });
    expect(d.causes.map((c) => c.key)).toEqual(['lab.reference_stack']);
    expect(d.causes[0].changes?.map((c) => c.id)).toEqual(['reinforce_returns_through_observations']);
    expect(d.causes[0].changes?.[0].madeBy).toMatch(/#7300/);
    expect(d.tokens).not.toBeNull();
    expect(d.counts.tokens).toBeGreaterThan(20);
    expect(d.tokens).toHaveLength(5);
    const deltas = (d.tokens ?? []).map((t) => Math.abs(t.delta));
    expect([...deltas].sort((x, y) => y - x)).toEqual(deltas);
    for (const t of d.tokens ?? []) {
      expect(t.causes).toEqual(['lab.reference_stack']);
      expect(t.b - t.a).toBeCloseTo(t.delta, 6);
    }
    expect(d.counts.calls).toBeGreaterThan(0);
    expect(d.counts.rollouts).toBeGreaterThan(0);
    expect(d.a.reference).toBe('Agent Lightning 1.0.x + verl 0.8.0');
    expect(d.b.reference).toBe('Agent Lightning 1.0.x rows + verl 0.9.0');
  });

  it('GRPO: no weight differs, and no listed change applies', () => {
    const d = diffWeights(rollouts, resolve(V08, {}), resolve(V09, {}));
    expect(d.counts).toEqual({ tokens: 0, calls: 0, rollouts: 0 });
    expect(d.causes[0].changes).toEqual([]);
  });

  it('two changed settings: each token names the settings whose switch alone moves it', () => {
    const base = {
      advEstimator: 'reinforce_plus_plus',
      enableRolloutLevelAdvantage: false,
      policyLossMode: 'vanilla',
    };
    const d = diffWeights(
      rollouts,
      resolve(V08, { ...base, lossAggMode: 'token-mean' }),
      resolve(V09, { ...base, lossAggMode: 'seq-mean-token-sum' }),
      { limit: 1000 },
    );
    expect(d.causes.map((c) => c.key).sort()).toEqual([
      'actor_rollout_ref.actor.loss_agg_mode',
      'lab.reference_stack',
    ]);
    // REINFORCE++ whitens over the batch, so the stack alone moves every token; the aggregation alone moves
    // every token too (its per-row coefficient changes): both are named, on every token
    expect(d.counts.tokens).toBeGreaterThan(0);
    for (const t of d.tokens ?? [])
      expect(t.causes.sort()).toEqual(['actor_rollout_ref.actor.loss_agg_mode', 'lab.reference_stack']);
  });
});
