import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TRAINER_OPTIONS,
  DEFAULT_TRAINER_SETTINGS,
  TRAINER_OPTIONS,
} from '../../src/core/pipeline/options';
import { controlSpecs, resolveOptions } from '../../src/ui/lab/options';
import { translateLegacyHash, type UrlState, viewSchema } from '../../src/ui/store';
import { formFromConfig, formKey, trainTabDefaults } from '../../src/ui/train/formConfig';
import { decodeHash, decodeHashChecked, encodeHash } from '../../src/ui/urlState';

describe('the page view in the URL', () => {
  it('round-trips every control, the selection and the colouring', () => {
    const v: UrlState = {
      ...DEFAULT_TRAINER_SETTINGS,
      ...formFromConfig(trainTabDefaults()),
      [formKey('algorithm.adv_estimator')]: 'rloo',
      [formKey('actor_rollout_ref.rollout.n')]: '8',
      [formKey('lab.behaviours')]: 'strip-think,summarize',
      tab: 'advantages',
      sample: 'coding-random',
      rollout: 'search-train-s42-3 / odd&id',
      call: 2,
      traceView: 'merge',
      colorBy: 'logprob',
      sign: 'grad',
      tokenSource: 'retokenize',
      traceAggregatorLevel: 'transition',
      trajectoryMaxPromptLength: 2048 + 7,
      trajectoryMaxResponseLength: 1024,
      dataMaxPromptLength: 300,
      dataMaxResponseLength: 200,
      advEstimator: 'rloo',
      normAdvByStdInGrpo: false,
      enableRolloutLevelAdvantage: false,
      rewardDtype: 'float32',
      lossAggMode: 'seq-mean-token-sum-norm',
      policyLossMode: 'vanilla',
      clipRatioLow: 0.1,
      clipRatioHigh: 0.28,
      clipRatioC: 10,
      lossScaleFactor: 64,
      ppoMiniBatchSize: 8,
      maxPpoUpdateTimes: null,
      rolloutIs: 'token',
      rolloutRs: 'token_k1,seq_max_k2',
      rolloutRsThreshold: '0.5_2,1.5',
      run: 'run-mx4hm6kj-d71499',
      trainRun: 'r-1',
      trainCompare: 'r-1,r-2',
      trainSmoothing: 0.9,
      trainView: 'timeline',
      trainStep: 3,
      sim: 'verl-one-step-off-7b-fsdp2',
      simMode: 'one_step_off',
      simSet: 'cluster.gpus=16,workload.turns=2',
    };
    const hash = encodeHash(viewSchema, v);
    expect(decodeHash(viewSchema, hash)).toEqual(v);
    // the keys links have always used
    for (const k of [
      'tab=',
      'sample=',
      'r=',
      'c=',
      'tv=',
      'color=',
      'sign=',
      'tokens=',
      'level=',
      'maxp=',
      'maxr=',
      'dmaxp=',
      'dmaxr=',
      'run=',
      'trun=',
      'tcmp=',
      'tsmooth=',
      'tview=',
      'tstep=',
      'sim=',
      'smode=',
      'sset=',
      'algorithm.adv_estimator=rloo',
      'actor_rollout_ref.rollout.n=8',
    ])
      expect(hash).toContain(k);
    for (const k of [
      'adv=',
      'std=',
      'rla=',
      'pl=',
      'agg=',
      'clo=',
      'chi=',
      'dtype=',
      'cc=',
      'lsf=',
      'mb=',
      'ris=',
    ])
      expect(hash).toContain(k);
    // every trainer option has its own URL field, defaults left out
    expect(new Set(TRAINER_OPTIONS.map((o) => o.urlKey)).size).toBe(TRAINER_OPTIONS.length);
    expect(encodeHash(viewSchema, { ...v, ...DEFAULT_TRAINER_SETTINGS })).not.toContain('adv=');
    // null is spelled as in flags and overrides
    expect(encodeHash(viewSchema, { ...v, clipRatioLow: null })).toContain('clo=null');
  });
  it('falls back to core’s defaults for values core does not accept', () => {
    const v = decodeHash(viewSchema, '#adv=nonsense&pl=mean-of-nothing&tokens=x&level=y&maxp=-3&cc=0.5');
    const o = resolveOptions(v);
    expect(o.advEstimator).toBe('grpo');
    expect(o.lossMode).toBe(DEFAULT_TRAINER_OPTIONS.lossMode);
    expect(o.tokenSource).toBe('engine');
    expect(o.traceAggregatorLevel).toBe('trajectory');
    expect(o.maxPromptLength).toBe(DEFAULT_TRAINER_OPTIONS.maxPromptLength);
    expect(o.clipRatioC).toBe(3);
    // ReMax needs greedy-baseline rewards a recorded trace does not have: not accepted
    expect(resolveOptions({ ...v, advEstimator: 'remax' }).advEstimator).toBe('grpo');
    expect(resolveOptions({ ...v, advEstimator: 'rloo' }).advEstimator).toBe('rloo');
  });
  it('names every parameter of a link it cannot use, with what it shows instead', () => {
    const { state, problems } = decodeHashChecked(
      viewSchema,
      '#tab=graphs&c=two&sign=up&agg=token-mean&frobnicate=1&std=maybe',
    );
    expect(state.tab).toBe('trace');
    expect(state.sign).toBe('push');
    expect(state.lossAggMode).toBe('token-mean');
    const byKey = Object.fromEntries(problems.map((p) => [p.key, p]));
    expect(Object.keys(byKey).sort()).toEqual(['c', 'frobnicate', 'sign', 'std', 'tab']);
    expect(byKey.tab.message).toMatch(/expects one of trace, advantages.*; showing trace/);
    expect(byKey.c.message).toMatch(/expects an integer; showing 0/);
    expect(byKey.sign.message).toMatch(/expects one of push, grad/);
    expect(byKey.std.message).toMatch(/expects 1 or 0/);
    expect(byKey.frobnicate.message).toMatch(/not a setting/);
    expect(byKey.frobnicate.raw).toBe('1');
    // a clean link has none
    expect(decodeHashChecked(viewSchema, encodeHash(viewSchema, state)).problems).toEqual([]);
  });
  it('generates the controls from core’s registries, with ReMax offered disabled and explained', () => {
    const specs = controlSpecs(DEFAULT_TRAINER_OPTIONS);
    expect(specs.map((s) => s.field)).toEqual(TRAINER_OPTIONS.filter((o) => o.page).map((o) => o.name));
    const est = specs.find((s) => s.field === 'advEstimator');
    if (est?.kind !== 'select') throw new Error('estimator control missing');
    const remax = est.options.find((o) => o.value === 'remax');
    expect(remax?.disabled).toBe(true);
    expect(remax?.title).toMatch(/reward_baselines/);
    const agg = specs.find((s) => s.field === 'lossAggMode');
    if (agg?.kind !== 'select') throw new Error('aggregation control missing');
    expect(agg.options.map((o) => o.value)).toEqual([
      'token-mean',
      'seq-mean-token-sum',
      'seq-mean-token-mean',
      'seq-mean-token-sum-norm',
    ]);
    // per_rollout_mean (the default policy loss) ignores the aggregation: shown disabled, and the formula shown
    // is the policy loss's
    expect(agg.disabled).toBe(true);
    const pl = specs.find((s) => s.field === 'policyLossMode');
    if (pl?.kind !== 'select') throw new Error('policy loss control missing');
    expect(pl.options.map((o) => o.value)).toEqual(['vanilla', 'per_rollout_mean']);
    expect(pl.formula?.text).toBeTruthy();
    expect(agg.formula).toBeUndefined();
    const vanilla = controlSpecs({
      ...DEFAULT_TRAINER_OPTIONS,
      policyLossMode: 'vanilla',
      lossMode: 'token-mean',
    });
    const agg2 = vanilla.find((s) => s.field === 'lossAggMode');
    expect(agg2?.kind === 'select' && !agg2.disabled && agg2.formula?.text).toBeTruthy();
    // the level decides which lengths are read
    const dmaxp = specs.find((s) => s.field === 'dataMaxPromptLength');
    expect(dmaxp?.kind === 'number' && dmaxp.disabled).toBe(true);
    // gamma is REINFORCE++'s: disabled for GRPO
    const gamma = specs.find((s) => s.field === 'gamma');
    expect(gamma?.kind === 'number' && gamma.disabled).toBe(true);
    const g2 = controlSpecs({ ...DEFAULT_TRAINER_OPTIONS, advEstimator: 'reinforce_plus_plus' }).find(
      (s) => s.field === 'gamma',
    );
    expect(g2?.kind === 'number' && g2.disabled).toBe(false);
  });
  it('opens links written before the config table, translated and with a note for each', () => {
    const { hash, notes } = translateLegacyHash(
      '#adv=rloo&loss=seq-mean-token-mean&mb=none&lsf=none&tab=advantages',
    );
    const { state, problems } = decodeHashChecked(viewSchema, hash);
    expect(problems).toEqual([]);
    expect(state.policyLossMode).toBe('vanilla');
    expect(state.lossAggMode).toBe('seq-mean-token-mean');
    expect(state.ppoMiniBatchSize).toBeNull();
    expect(state.lossScaleFactor).toBeNull();
    expect(resolveOptions(state).lossMode).toBe('seq-mean-token-mean');
    expect(notes.map((n) => n.key).sort()).toEqual(['loss', 'lsf', 'mb']);
    expect(notes.find((n) => n.key === 'loss')?.message).toMatch(
      /older link.*pl=vanilla agg=seq-mean-token-mean/,
    );
    expect(notes.find((n) => n.key === 'mb')?.message).toMatch(/spelling of null/);
    // per_rollout_mean is a policy loss: the aggregation stays the user's
    const p = translateLegacyHash('#loss=per_rollout_mean');
    expect(decodeHashChecked(viewSchema, p.hash).state.policyLossMode).toBe('per_rollout_mean');
    // a current link is left as it is
    expect(translateLegacyHash('#pl=vanilla&agg=token-mean').notes).toEqual([]);
  });
});
