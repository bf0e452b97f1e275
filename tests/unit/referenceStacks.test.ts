import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { trainerFlags, trainerFlagsUsage } from '../../src/cli/trainerFlags';
import { listAdvEstimators } from '../../src/core/algos/advantage';
import { aggLoss } from '../../src/core/algos/aggLoss';
import { UpstreamError } from '../../src/core/algos/numeric';
import { getPolicyLoss } from '../../src/core/algos/policyLoss';
import { getReferenceStack, listReferenceStacks } from '../../src/core/algos/stacks';
import {
  resolveTrainerOptions,
  resolveTrainerOptionsLenient,
  type TrainerOptionsInput,
} from '../../src/core/pipeline/options';
import {
  buildRows,
  computeTrainerAdvantages,
  computeTrainerView,
  prepareTrainerBatch,
} from '../../src/core/pipeline/trainer';
import { microBatchGradient, ppoMiniBatches } from '../../src/core/pipeline/update';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import { diffAgainstStack, diffWeights, otherReferenceStack } from '../../src/core/weightDiff';

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
        // the 0.8.0 modes (0.9.0 lists token-sum beside them)
        for (const m of a.view.modes) {
          const other = b.view.modes.find((x) => x.name === m.name);
          expect(other, `${what} ${m.name}`).toBeDefined();
          expect(differing(m.weights, other?.weights ?? []), `${what} ${m.name}`).toEqual([]);
        }
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

describe("verl 0.9.0's token-sum and dro as analysis options", () => {
  it('the default stack refuses them, naming the stack that has them; dro needs policy_loss.dro_beta', () => {
    expect(() => resolveTrainerOptions({ lossAggMode: 'token-sum' })).toThrow(
      /loss_agg_mode \(--loss-agg-mode\): token-sum exists only on reference stack verl-0\.9\.0; lab\.reference_stack \(--reference-stack\) is agentlightning-1\.0\+verl-0\.8\.0/,
    );
    expect(() => resolveTrainerOptions({ policyLossMode: 'dro', droBeta: 0.1 })).toThrow(
      /policy_loss\.loss_mode \(--loss-mode\): dro exists only on reference stack verl-0\.9\.0/,
    );
    expect(() => resolveTrainerOptions({ policyLossMode: 'dro', referenceStack: V09 })).toThrow(
      /policy_loss\.dro_beta \(--dro-beta\): must be a positive value when policy_loss\.loss_mode is dro/,
    );
    expect(() => resolveTrainerOptions({ droBeta: 0, referenceStack: V09 })).toThrow(/dro_beta.*must be > 0/);
    const o = resolveTrainerOptions({
      policyLossMode: 'dro',
      droBeta: 0.2,
      lossAggMode: 'token-sum',
      referenceStack: V09,
    });
    expect([o.policyLossMode, o.lossAggMode, o.lossMode, o.droBeta]).toEqual([
      'dro',
      'token-sum',
      'token-sum',
      0.2,
    ]);
  });

  it('a link with a value its stack lacks falls back to the default, saying why', () => {
    const r = resolveTrainerOptionsLenient({ lossAggMode: 'token-sum', policyLossMode: 'dro' });
    expect(r.options.lossAggMode).toBe('token-mean');
    expect(r.options.policyLossMode).toBe('per_rollout_mean');
    expect(r.replaced.map((x) => x.name).sort()).toEqual(['lossAggMode', 'policyLossMode']);
    expect(r.replaced[0].reason).toMatch(/exists only on reference stack verl-0\.9\.0/);
    const kept = resolveTrainerOptionsLenient({ lossAggMode: 'token-sum', referenceStack: V09 });
    expect(kept.replaced).toEqual([]);
    expect(kept.options.lossAggMode).toBe('token-sum');
  });

  it('token-sum weights a token by its advantage alone (dp = 1); the stack lists it beside the four', () => {
    const { view } = run(V09, { policyLossMode: 'vanilla', lossAggMode: 'token-sum' });
    expect(view.selected.name).toBe('token-sum');
    expect(view.modes.map((m) => m.name)).toContain('token-sum');
    expect(run(V08, {}).view.modes.map((m) => m.name)).not.toContain('token-sum');
    let valid = 0;
    for (let t = 0; t < view.selected.weights.length; t++) {
      const isw = view.rolloutIsWeights ? view.rolloutIsWeights[t] : 1;
      // ∂ℓ/∂logπ at ratio 1 is −A·w_IS, and token-sum's c_r is dp = 1
      const w = view.responseMask[t] ? -view.advantages[t] * isw : 0;
      if (view.responseMask[t]) valid++;
      expect(view.selected.weights[t], `token ${t}`).toBeCloseTo(w, 6);
    }
    expect(valid).toBeGreaterThan(0);
    const mean = run(V09, { policyLossMode: 'vanilla', lossAggMode: 'token-mean' }).view.selected;
    expect(differing(view.selected.weights, mean.weights).length).toBeGreaterThan(0);
  });

  it('dro: at logπ = logπ_old the weights are vanilla’s; once the policy moves, ∂L/∂logπ gains β·Δlogπ·c_r', () => {
    const dro = run(V09, { policyLossMode: 'dro', droBeta: 0.5, lossAggMode: 'seq-mean-token-mean' });
    const vanilla = run(V09, { policyLossMode: 'vanilla', lossAggMode: 'seq-mean-token-mean' });
    expect(differing(dro.view.selected.weights, vanilla.view.selected.weights)).toEqual([]);
    const plan = ppoMiniBatches(dro.tb, dro.adv)[0];
    const old = dro.adv.oldLogProbs;
    const off = dro.adv.rows.offsets;
    const delta = (t: number) => 0.01 * ((t % 5) - 2);
    const lp: number[] = [];
    const oldOf: number[] = [];
    for (const r of plan.rows)
      for (let t = off[r]; t < off[r + 1]; t++) {
        lp.push(Math.fround(old[t] + delta(t)));
        oldOf.push(old[t]);
      }
    const logProbs = Float32Array.from(lp);
    const gd = microBatchGradient(dro.tb, dro.adv, plan, plan.rows, logProbs);
    const gv = microBatchGradient(vanilla.tb, vanilla.adv, plan, plan.rows, logProbs);
    let moved = 0;
    let k = 0;
    for (const r of plan.rows) {
      const n = off[r + 1] - off[r];
      let valid = 0;
      for (let t = off[r]; t < off[r + 1]; t++) valid += dro.adv.rows.mask[t];
      for (let t = off[r]; t < off[r + 1]; t++, k++) {
        if (!dro.adv.rows.mask[t]) {
          expect(gd.grad[k]).toBe(0);
          continue;
        }
        // seq-mean-token-mean: c_r = 1 / (valid tokens of the row · rows of the mini-batch)
        const c = 1 / (valid * plan.rows.length);
        const a = dro.adv.advantages[t];
        const w = dro.adv.rolloutIsWeights ? dro.adv.rolloutIsWeights[t] : 1;
        const lr = Math.fround(logProbs[k] - oldOf[k]);
        expect(gd.grad[k]).toBeCloseTo((-a + 0.5 * lr) * w * c, 5);
        if (Math.abs(gd.grad[k] - gv.grad[k]) > 1e-7) moved++;
      }
      expect(n).toBeGreaterThan(0);
    }
    expect(moved).toBeGreaterThan(0);
  });
});

describe('lab analyze flags for the verl 0.9.0 options', () => {
  it('--loss-agg-mode token-sum / --loss-mode dro --dro-beta are taken on --reference-stack verl-0.9.0 only', () => {
    const { options } = trainerFlags({
      'reference-stack': V09,
      'loss-mode': 'dro',
      'dro-beta': '0.3',
      'loss-agg-mode': 'token-sum',
    });
    expect([options.policyLossMode, options.droBeta, options.lossMode]).toEqual(['dro', 0.3, 'token-sum']);
    expect(() => trainerFlags({ 'loss-agg-mode': 'token-sum' })).toThrow(UsageError);
    expect(() => trainerFlags({ 'loss-agg-mode': 'token-sum' })).toThrow(
      /token-sum exists only on reference stack verl-0\.9\.0.*is agentlightning-1\.0\+verl-0\.8\.0/,
    );
    expect(() => trainerFlags({ 'reference-stack': V09, 'loss-mode': 'dro' })).toThrow(/--dro-beta/);
    // β is read only under dro
    expect(trainerFlags({ 'reference-stack': V09, 'dro-beta': '0.3' }).unread).toEqual([
      expect.stringMatching(/--dro-beta sets actor_rollout_ref\.actor\.policy_loss\.dro_beta/),
    ]);
    expect(trainerFlagsUsage()).toMatch(/--loss-agg-mode [^\]]*token-sum/);
    expect(trainerFlagsUsage()).toMatch(/--loss-mode [^\]]*dro/);
  });
});

describe('the diff against the other reference stack (the Advantages view)', () => {
  it('the other stack of each; refused with the option message when a setting does not exist there', () => {
    expect(otherReferenceStack(V08)).toBe(V09);
    expect(otherReferenceStack(V09)).toBe(V08);
    const o = resolveTrainerOptions({
      traceAggregatorLevel: 'trajectory',
      referenceStack: V09,
      lossAggMode: 'token-sum',
      policyLossMode: 'vanilla',
    });
    const r = diffAgainstStack(rollouts, o, V08);
    expect(r.diff).toBeNull();
    expect(r.refused).toMatch(/token-sum exists only on reference stack verl-0\.9\.0/);
  });

  it('is diffWeights against the same settings on that stack, attributed to the REINFORCE++ change', () => {
    const a = resolveTrainerOptions({
      traceAggregatorLevel: 'trajectory',
      advEstimator: 'reinforce_plus_plus',
      enableRolloutLevelAdvantage: false,
    });
    const r = diffAgainstStack(rollouts, a, V09);
    expect(r.refused).toBeNull();
    const direct = diffWeights(rollouts, a, resolveTrainerOptions({ ...a, referenceStack: V09 }));
    expect(r.diff).toEqual(direct);
    expect(r.diff?.causes.map((c) => c.key)).toEqual(['lab.reference_stack']);
    expect(r.diff?.causes[0].changes?.map((c) => c.id)).toEqual(['reinforce_returns_through_observations']);
    expect(r.diff?.counts.rollouts).toBeGreaterThan(0);
    for (const x of r.diff?.rollouts ?? []) expect(x.causes).toEqual(['lab.reference_stack']);
    // largest first
    const d = (r.diff?.calls ?? []).map((c) => Math.abs(c.delta));
    expect(d).toEqual([...d].sort((x, y) => y - x));
  });
});
