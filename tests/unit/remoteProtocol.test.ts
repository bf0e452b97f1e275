/** The gateway's wire types, the job-template registry and verl's metric-log formats. */
import { describe, expect, it } from 'vitest';
import { HARNESS_CATALOGUE } from '../../src/cli/aglCpu';
import { listAdvEstimators, traceUnavailable } from '../../src/core/algos/advantage';
import { LOSS_AGG_MODES } from '../../src/core/algos/aggLoss';
import { listPolicyLosses } from '../../src/core/algos/policyLoss';
import {
  eventData,
  parseClusterInfo,
  parseRunEvent,
  parseRunSummary,
  parseSetClusterBody,
  parseSubmitRunBody,
  type RunEvent,
} from '../../src/server/protocol/api';
import { checkParams, defaultParams, type ParamSpec } from '../../src/server/protocol/params';
import {
  AGENT_ENV_MAP,
  aglVerlOverrides,
  checkTemplateParams,
  jobTemplates,
  TEMPLATE_NAMES,
} from '../../src/server/protocol/templates';
import {
  FILE_LOGGER_MARKER,
  fileLoggerPayload,
  formatConsoleLine,
  formatFileLoggerLine,
  parseConsoleLine,
  parseFileLoggerLine,
} from '../../src/train/verlLog';
import { paramsFromView } from '../../src/ui/remote/prefill';
import { viewSchema } from '../../src/ui/store';
import { decodeHash } from '../../src/ui/urlState';

const viewDefaults = decodeHash(viewSchema, '');

const templates = jobTemplates(HARNESS_CATALOGUE);

function enumValues(spec: ParamSpec | undefined): string[] {
  if (spec?.kind !== 'enum') throw new Error(`not an enum: ${spec?.name}`);
  return spec.values.map((v) => v.value);
}

describe('job templates', () => {
  it('are keyed by every template name, with choices generated from the registries', () => {
    expect(Object.keys(templates).sort()).toEqual([...TEMPLATE_NAMES].sort());
    const feedable = listAdvEstimators()
      .filter((e) => traceUnavailable(e) === null)
      .map((e) => e.name);
    expect(feedable).toContain('grpo');
    expect(feedable).not.toContain('remax');
    for (const t of Object.values(templates)) {
      const by = new Map(t.params.map((p) => [p.name, p]));
      expect(enumValues(by.get('adv_estimator'))).toEqual(feedable);
      expect(enumValues(by.get('loss_agg_mode'))).toEqual([...LOSS_AGG_MODES]);
      expect(enumValues(by.get('policy_loss_mode'))).toEqual(listPolicyLosses().map((p) => p.name));
      expect(enumValues(by.get('trace_aggregator_level')).sort()).toEqual(['trajectory', 'transition']);
      expect(enumValues(by.get('harness'))).toEqual(HARNESS_CATALOGUE.harnesses);
      expect(enumValues(by.get('behaviour'))).toEqual(['none', ...HARNESS_CATALOGUE.behaviours]);
      // every default passes its own check
      expect(checkParams(t.params, {})).toEqual(defaultParams(t.params));
    }
  });

  it('refuse unknown templates, unknown or out-of-range parameters by name', () => {
    const bad: [string, unknown, RegExp][] = [
      ['nope', {}, /^template: unknown template "nope" \(known: agl-cpu, agl-verl\)/],
      ['agl-cpu', { entrypoint: 'rm -rf /' }, /^params\.entrypoint: unknown parameter/],
      ['agl-cpu', { rollout_n: 0 }, /^params\.rollout_n: must be in \[1, 32\]; got 0/],
      ['agl-cpu', { rollout_n: 2.5 }, /^params\.rollout_n: must be a whole number; got 2\.5/],
      ['agl-cpu', { rollout_n: '2' }, /^params\.rollout_n: must be a whole number; got the string "2"/],
      ['agl-cpu', { adv_estimator: 'remax' }, /^params\.adv_estimator: must be one of grpo/],
      ['agl-cpu', { enable_rollout_level_advantage: 'yes' }, /must be true or false/],
      [
        'agl-cpu',
        { max_prompt_length: 250, max_response_length: 48 },
        /must fit the policy's context of 256 tokens; got 298/,
      ],
      ['agl-verl', { model_path: 'Qwen/x algorithm.adv_estimator=gae' }, /^params\.model_path: must match/],
      ['agl-verl', { model_path: 'a,b' }, /^params\.model_path: must match/],
      ['agl-verl', { model_path: `\${oc.env:HOME}` }, /^params\.model_path: must match/],
      [
        'agl-verl',
        { train_batch_size: 8, ppo_mini_batch_size: 16 },
        /^params\.ppo_mini_batch_size: must be at most train_batch_size \(8\)/,
      ],
      ['agl-cpu', [1, 2], /^params: must be an object/],
    ];
    for (const [name, params, re] of bad)
      expect(() => checkTemplateParams(templates, name, params), `${name} ${JSON.stringify(params)}`).toThrow(
        re,
      );
    const ok = checkTemplateParams(templates, 'agl-verl', {
      model_path: '/models/Qwen2.5-7B-Instruct',
      rollout_n: 16,
    });
    expect(ok.params.rollout_n).toBe(16);
    expect(ok.params.adv_estimator).toBe('grpo');
  });

  it('turn agl-verl parameters into Hydra overrides of the upstream keys', () => {
    const { params } = checkTemplateParams(templates, 'agl-verl', {
      adv_estimator: 'rloo',
      loss_agg_mode: 'seq-mean-token-mean',
      trace_aggregator_level: 'transition',
      enable_rollout_level_advantage: false,
      rollout_n: 4,
    });
    const o = aglVerlOverrides(params);
    expect(o).toContain('algorithm.adv_estimator=rloo');
    expect(o).toContain('actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean');
    expect(o).toContain('agentlightning.trace_aggregator.level=transition');
    expect(o).toContain('algorithm.enable_rollout_level_advantage=false');
    expect(o).toContain('actor_rollout_ref.rollout.n=4');
    for (const k of Object.keys(AGENT_ENV_MAP))
      expect(o.some((x) => x.startsWith(`+agentlightning.local.env_map.${k}=`))).toBe(true);
    // one override per key
    const keys = o.map((x) => x.split('=')[0]);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('REST bodies', () => {
  it('submit bodies: only template, params, name', () => {
    expect(parseSubmitRunBody({ template: 'agl-cpu' })).toEqual({
      template: 'agl-cpu',
      params: {},
      name: null,
    });
    expect(() => parseSubmitRunBody({ template: 'agl-cpu', entrypoint: 'bash' })).toThrow(
      /^body\.entrypoint is not a field/,
    );
    expect(() => parseSubmitRunBody({ template: 'agl-cpu', runtime_env: {} })).toThrow(/^body\.runtime_env/);
    expect(() => parseSubmitRunBody({ template: 3 })).toThrow(
      /^body\.template must be a string, got number 3/,
    );
    expect(() => parseSubmitRunBody({ template: 'x', name: 'a;b' })).toThrow(
      /^body\.name must be at most 80/,
    );
    expect(() => parseSubmitRunBody('x')).toThrow(/^body must be an object/);
  });

  it('cluster addresses are scheme://host:port only', () => {
    expect(parseSetClusterBody({ address: 'http://10.0.0.5:8265/' })).toEqual({
      address: 'http://10.0.0.5:8265',
    });
    expect(() => parseSetClusterBody({ address: '10.0.0.5:6379' })).toThrow(
      /must (be an http\(s\) URL|use http)/,
    );
    expect(() => parseSetClusterBody({ address: 'ray://10.0.0.5:10001' })).toThrow(/must use http or https/);
    expect(() => parseSetClusterBody({ address: 'http://h:1/api/jobs' })).toThrow(/no path/);
    expect(() => parseSetClusterBody({ address: 'http://u:p@h:1' })).toThrow(/no path, query or credentials/);
  });

  it('run summaries and cluster info are checked field by field', () => {
    const run = {
      id: 'r',
      name: 'n',
      template: 'agl-cpu',
      params: { a: 1 },
      state: 'running',
      message: '',
      submissionId: 's',
      createdMs: 1,
      updatedMs: 2,
      lastStep: null,
      rollouts: 0,
      missedRollouts: 0,
      aglGateway: null,
    };
    expect(parseRunSummary(run)).toEqual(run);
    expect(() => parseRunSummary({ ...run, state: 'exploded' })).toThrow(
      /^run\.state must be one of submitting/,
    );
    expect(() => parseRunSummary({ ...run, params: { a: [1] } })).toThrow(
      /^run\.params\.a must be a string, number or boolean/,
    );
    expect(() =>
      parseClusterInfo({
        gateway: { version: '1' },
        ray: { address: 'x', reachable: 'yes', tokenAuth: false },
      }),
    ).toThrow(/^body\.ray\.reachable must be true or false/);
  });

  it('SSE events round-trip through eventData/parseRunEvent and refuse bad data', () => {
    const events: RunEvent[] = [
      { kind: 'status', state: 'running', message: 'm' },
      { kind: 'log', lines: ['a', 'b'] },
      { kind: 'metric', step: 3, data: { 'actor/pg_loss': 0.5 }, source: 'file' },
      {
        kind: 'rollout',
        rolloutId: 'r',
        state: 'succeeded',
        dataId: 'd',
        isTrain: true,
        reward: null,
        calls: 2,
        step: 1,
      },
      { kind: 'notice', level: 'warning', message: 'w' },
    ];
    for (const e of events)
      expect(parseRunEvent(e.kind, JSON.parse(JSON.stringify(eventData(e))))).toEqual(e);
    expect(() => parseRunEvent('boom', {})).toThrow(/^event must be one of status, log/);
    expect(() => parseRunEvent('metric', { step: 1, data: { x: 'NaN' }, source: 'file' })).toThrow(
      /^metric event\.data\["x"\] must be a finite number/,
    );
    expect(() => parseRunEvent('log', { lines: [1] })).toThrow(/^log event\.lines\[0\] must be a string/);
  });
});

describe("verl's console and file loggers", () => {
  it('console lines round-trip and are found behind a Ray actor prefix', () => {
    const data = { 'actor/pg_loss': -0.125, 'critic/score/mean': 0.5, 'timing_s/gen': 1e-7, n: 4 };
    const line = formatConsoleLine(3, data, new Set(['n']));
    expect(line).toBe('step:3 - actor/pg_loss:-0.125 - critic/score/mean:0.5 - timing_s/gen:1e-07 - n:4');
    expect(parseConsoleLine(line)).toEqual({ step: 3, data });
    expect(parseConsoleLine(`(TaskRunner pid=4242) ${line}`)).toEqual({ step: 3, data });
    expect(parseConsoleLine('[trainer] step:7 - a:np.float64(0.25) - b:True - c:nan - d:inf')).toEqual({
      step: 7,
      data: { a: 0.25, b: 1 },
    });
    expect(parseConsoleLine('no step here')).toBeNull();
    expect(parseConsoleLine('mystep:3 - a:1')).toBeNull();
  });

  it('file-logger lines: orjson nulls dropped, bad lines explained', () => {
    const line = formatFileLoggerLine(2, { a: 1.5, b: Number.NaN });
    expect(line).toBe('{"step":2,"data":{"a":1.5,"b":null}}');
    expect(parseFileLoggerLine(line)).toEqual({ step: 2, data: { a: 1.5 } });
    expect(fileLoggerPayload(`${FILE_LOGGER_MARKER}${line}`)).toBe(line);
    expect(fileLoggerPayload(line)).toBeNull();
    expect(() => parseFileLoggerLine('{"step":-1,"data":{}}')).toThrow(/step must be a non-negative integer/);
    expect(() => parseFileLoggerLine('{"step":1}')).toThrow(/data must be an object/);
    expect(() => parseFileLoggerLine('{oops')).toThrow(/not JSON/);
  });
});

describe('the template form pre-filled from the Advantages settings', () => {
  const view = {
    ...viewDefaults,
    advEstimator: 'rloo',
    normAdvByStdInGrpo: false,
    enableRolloutLevelAdvantage: false,
    lossAggMode: 'seq-mean-token-sum-norm',
    policyLossMode: 'vanilla',
    traceAggregatorLevel: 'transition' as const,
    clipRatioLow: 0.1,
    clipRatioHigh: 0.28,
    trajectoryMaxPromptLength: 8192,
    trajectoryMaxResponseLength: 8192,
    dataMaxResponseLength: 8192,
  };
  it('takes every setting the template accepts and keeps defaults for the rest', () => {
    const cpu = paramsFromView(view, templates['agl-cpu']);
    expect(cpu.params).toMatchObject({
      adv_estimator: 'rloo',
      norm_adv_by_std_in_grpo: false,
      enable_rollout_level_advantage: false,
      loss_agg_mode: 'seq-mean-token-sum-norm',
      policy_loss_mode: 'vanilla',
      trace_aggregator_level: 'transition',
      clip_ratio_low: 0.1,
      clip_ratio_high: 0.28,
      // beyond the policy's 256-token context: the template's defaults stay
      max_prompt_length: 200,
      max_response_length: 48,
    });
    expect(cpu.taken).not.toContain('max_prompt_length');
    const verl = paramsFromView(view, templates['agl-verl']);
    expect(verl.params.max_prompt_length).toBe(8192);
    expect(verl.taken).toContain('max_response_length');
  });
  it("maps Agent Lightning's per_rollout_mean to the policy loss, and an estimator not offered to the default", () => {
    const p = paramsFromView(
      { ...view, policyLossMode: 'per_rollout_mean', advEstimator: 'remax' },
      templates['agl-cpu'],
    ).params;
    expect(p.policy_loss_mode).toBe('per_rollout_mean');
    expect(p.loss_agg_mode).toBe('seq-mean-token-sum-norm');
    expect(p.adv_estimator).toBe('grpo');
  });
});
