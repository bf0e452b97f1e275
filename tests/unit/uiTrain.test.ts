import { describe, expect, it } from 'vitest';
import { DEFAULT_TRAINER_OPTIONS } from '../../src/core/pipeline/options';
import { toJsonlTrace } from '../../src/core/trace/io';
import { syntheticAgentBatch } from '../../src/core/trace/synthetic';
import { resolveConfig } from '../../src/engine/model';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { encodeTrainCheckpoint } from '../../src/train/checkpoint';
import { CONFIG_FIELDS, resolveTrainConfig } from '../../src/train/config';
import type { TrainEvent } from '../../src/train/events';
import { fileLoggerLine } from '../../src/train/verlLog';
import { completionGroups, taskHistory } from '../../src/ui/train/completions';
import { configFromForm, formFromConfig, formKey, trainTabDefaults } from '../../src/ui/train/formConfig';
import { parseFromTrainWorker, parseToTrainWorker } from '../../src/ui/train/protocol';
import { archivedPaths, makeRunArchive, readRunArchive } from '../../src/ui/train/runArchive';
import {
  mergeMetrics,
  metricsUpTo,
  parseEventsFile,
  parseRunMeta,
  type RunMeta,
  readMetrics,
} from '../../src/ui/train/runData';
import { packLanes, stepTimeline } from '../../src/ui/train/timeline';

const enc = new TextEncoder();
const config = trainTabDefaults();
const meta: RunMeta = {
  version: 1,
  id: 'run-abc-1',
  name: 'instruction-short · grpo',
  color: '#2d5bd7',
  createdAt: 1_700_000_000_000,
  status: 'done',
  config,
  backend: 'cpu',
  note: null,
  error: null,
  lastStep: 2,
  checkpointStep: 2,
  parent: { id: 'run-abc-0', change: 'algorithm.adv_estimator=rloo' },
  pruned: 0,
  preset: null,
};

describe('trainer worker messages', () => {
  it('accepts a start with a config the loop resolves, and names what it refuses', () => {
    const m = parseToTrainWorker({
      type: 'start',
      runId: 'run-1',
      config: { lab: { seed: 3 } },
      resume: false,
    });
    expect(m.type === 'start' && m.config.lab.seed).toBe(3);
    expect(() => parseToTrainWorker({ type: 'start', runId: '../x', config: {}, resume: false })).toThrow(
      /start\.runId/,
    );
    expect(() =>
      parseToTrainWorker({
        type: 'start',
        runId: 'r',
        config: { actor_rollout_ref: { rollout: { n: 0 } } },
        resume: false,
      }),
    ).toThrow(/start\.config: .*actor_rollout_ref\.rollout\.n/);
    expect(() => parseToTrainWorker({ type: 'start', runId: 'r', config: {}, resume: 'yes' })).toThrow(
      /resume/,
    );
    expect(() => parseToTrainWorker({ type: 'launch' })).toThrow(/unknown message type "launch"/);
    // a preset's run names a registered preset
    const p = parseToTrainWorker({
      type: 'start',
      runId: 'r',
      config: {},
      resume: false,
      preset: { slug: 'staleness', variant: 'sync', group: 'staleness-1' },
    });
    expect(p.type === 'start' && p.preset?.variant).toBe('sync');
    expect(() =>
      parseToTrainWorker({
        type: 'start',
        runId: 'r',
        config: {},
        resume: false,
        preset: { slug: 'nope', variant: 'a', group: 'g' },
      }),
    ).toThrow(/start\.preset: unknown preset 'nope'/);
    expect(() =>
      parseToTrainWorker({
        type: 'start',
        runId: 'r',
        config: {},
        resume: false,
        preset: { slug: 'staleness' },
      }),
    ).toThrow(/preset\.variant must be a name/);
    expect(parseToTrainWorker({ type: 'pause' })).toEqual({ type: 'pause' });
  });

  it('checks replies, events included, naming the field', () => {
    expect(() =>
      parseFromTrainWorker({
        type: 'ready',
        backend: 'tpu',
        note: null,
        weights: 'x',
        resumedFromStep: null,
      }),
    ).toThrow(/backend must be 'webgpu' or 'cpu'/);
    expect(() =>
      parseFromTrainWorker({
        type: 'event',
        event: { type: 'step', step: 1, policyVersion: 1, metrics: { a: 'x' } },
      }),
    ).toThrow(/metrics\['a'\]/);
    expect(() => parseFromTrainWorker({ type: 'ended', reason: 'crashed', error: null })).toThrow(/reason/);
    const ok = parseFromTrainWorker({
      type: 'event',
      event: { type: 'step', step: 1, policyVersion: 1, metrics: {} },
    });
    expect(ok.type).toBe('event');
    expect(
      parseFromTrainWorker({ type: 'preset_metrics', step: 2, metrics: { 'preset/a': 1, 'preset/b': null } }),
    ).toEqual({ type: 'preset_metrics', step: 2, metrics: { 'preset/a': 1, 'preset/b': null } });
    expect(() => parseFromTrainWorker({ type: 'preset_metrics', step: 0, metrics: {} })).toThrow(
      /step must be/,
    );
    expect(() =>
      parseFromTrainWorker({ type: 'preset_metrics', step: 1, metrics: { 'preset/a': 'x' } }),
    ).toThrow(/preset\/a must be a finite number or null/);
  });
});

describe('run records', () => {
  it('round-trips run.json and names the field it refuses', () => {
    expect(parseRunMeta(JSON.parse(JSON.stringify(meta)))).toEqual(meta);
    const bad = (patch: Record<string, unknown>) =>
      parseRunMeta({ ...JSON.parse(JSON.stringify(meta)), ...patch });
    expect(() => bad({ status: 'exploded' })).toThrow(/run\.json: status must be one of/);
    expect(() => bad({ lastStep: -1 })).toThrow(/lastStep must be a non-negative integer/);
    expect(() => bad({ id: 'a/b' })).toThrow(/id must be a name/);
    expect(() => bad({ config: { data: { train_batch_size: 0 } } })).toThrow(
      /config: data\.train_batch_size/,
    );
    expect(() => bad({ version: 2 })).toThrow(/version must be 1/);
    const withPreset = { ...meta, preset: { slug: 'length-bias', variant: 'grpo', group: 'length-bias-x' } };
    expect(parseRunMeta(JSON.parse(JSON.stringify(withPreset)))).toEqual(withPreset);
    expect(() => bad({ preset: { slug: 'length-bias', variant: 'a b', group: 'g' } })).toThrow(
      /run\.json: preset\.variant must be a name/,
    );
    // an imported run says so, and what it came from
    const withImport = { ...meta, imported: { file: 'run-a.zip', at: 1_700_000_000_000 } };
    expect(parseRunMeta(JSON.parse(JSON.stringify(withImport)))).toEqual(withImport);
    expect(() => bad({ imported: { file: '' } })).toThrow(/run\.json: imported must be \{file, at\}/);
    expect(parseRunMeta(JSON.parse(JSON.stringify(meta))).imported).toBeUndefined();
    // a run.json from before presets has none
    const { preset: _p, ...old } = JSON.parse(JSON.stringify(meta));
    expect(parseRunMeta(old).preset).toBeNull();
  });

  it("merges a preset run's preset metrics into its step metrics", () => {
    const a = readMetrics(fileLoggerLine(1, { x: 1 }) + fileLoggerLine(2, { x: 2 }));
    const b = readMetrics(fileLoggerLine(2, { 'preset/y': 5 }) + fileLoggerLine(3, { 'preset/y': 6 }));
    expect(mergeMetrics(a, b)).toEqual([
      { step: 1, data: { x: 1 } },
      { step: 2, data: { x: 2, 'preset/y': 5 } },
      { step: 3, data: { 'preset/y': 6 } },
    ]);
  });

  it('keeps metrics up to a checkpoint, one entry per step', () => {
    const text = [0, 1, 2, 3].map((s) => fileLoggerLine(s, { 'critic/score/mean': s / 4 })).join('');
    expect(readMetrics(metricsUpTo(text, 2)).map((m) => m.step)).toEqual([0, 1, 2]);
    const twice = text + fileLoggerLine(1, { 'critic/score/mean': 9 });
    const m = readMetrics(twice);
    expect(m.map((x) => x.step)).toEqual([0, 1, 2, 3]);
    expect(m[1].data['critic/score/mean']).toBe(9);
  });

  it('reads step events and names a bad line', () => {
    const ok = `${JSON.stringify({ type: 'phase', step: 1, phase: 'gen', startMs: 1, endMs: 2 })}\n`;
    expect(parseEventsFile(ok, 'events/step_000001.jsonl')).toHaveLength(1);
    expect(() => parseEventsFile(`${ok}{"type":"phase","step":1}\n`, 'events/step_000001.jsonl')).toThrow(
      /events\/step_000001\.jsonl line 2: .*phase/,
    );
    expect(() => parseEventsFile('{oops\n', 'e.jsonl')).toThrow(/e\.jsonl line 1: not JSON/);
  });
});

describe('run archives', () => {
  async function files(): Promise<Map<string, Uint8Array>> {
    const pc = resolveConfig({ vocabSize: 64, contextLength: 32, layers: 1, width: 16, heads: 2, seed: 1 });
    const policy = new CpuPolicy(pc);
    const ck = encodeTrainCheckpoint({
      policyConfig: pc,
      params: await policy.getParams(),
      optimizer: await policy.getOptimizerState(),
      state: { step: 2, policyVersion: 2, cursor: 4 },
      config,
      metadata: {},
    });
    const rollouts = syntheticAgentBatch({
      rollouts: 4,
      callsPerRollout: 2,
      groupSize: 2,
      promptTokens: [4, 6],
      responseTokens: [3, 5],
      observationTokens: [1, 2],
      mismatchRate: 0,
      vocabSize: 64,
      seed: 3,
    });
    return new Map([
      ['run.json', enc.encode(JSON.stringify(meta))],
      ['config.json', enc.encode(JSON.stringify(config))],
      ['metrics.jsonl', enc.encode(fileLoggerLine(1, { a: 1 }) + fileLoggerLine(2, { a: 2 }))],
      ['preset_metrics.jsonl', enc.encode(fileLoggerLine(1, { 'preset/x': Number.NaN }))],
      ['traces/step_000002.jsonl', enc.encode(toJsonlTrace(rollouts))],
      [
        'events/step_000002.jsonl',
        enc.encode(`${JSON.stringify({ type: 'rejections', step: 2, items: [] })}\n`),
      ],
      ['checkpoints/latest', enc.encode('checkpoints/step_000002.safetensors')],
      ['checkpoints/step_000002.safetensors', ck],
    ]);
  }

  it('packs the files a run folder has and checks each on the way back in', async () => {
    const f = await files();
    const back = readRunArchive(makeRunArchive(f), 'a.zip');
    expect(back.meta).toEqual(meta);
    expect([...back.files.keys()].sort()).toEqual([...f.keys()].sort());
    expect(
      archivedPaths(
        [...f.keys(), 'checkpoints/step_000001.safetensors', 'notes.txt'],
        'checkpoints/step_000002.safetensors',
      ).sort(),
    ).toEqual([...f.keys()].sort());
  });

  it('refuses an archive whose files are not what a run folder holds, naming the file', async () => {
    const f = await files();
    const without = (k: string) => new Map([...f].filter(([p]) => p !== k));
    expect(() => readRunArchive(makeRunArchive(without('run.json')), 'a.zip')).toThrow(
      /a\.zip: run\.json is missing/,
    );
    expect(() =>
      readRunArchive(makeRunArchive(without('checkpoints/step_000002.safetensors')), 'a.zip'),
    ).toThrow(/checkpoints\/latest: names checkpoints\/step_000002\.safetensors, which the archive lacks/);
    const extra = new Map(f);
    extra.set('notes.txt', enc.encode('hi'));
    expect(() => readRunArchive(makeRunArchive(extra), 'a.zip')).toThrow(
      /notes\.txt: not a file a run folder has/,
    );
    const badMetrics = new Map(f);
    badMetrics.set('metrics.jsonl', enc.encode('{"step":1,"data":{}}\nnope\n'));
    expect(() => readRunArchive(makeRunArchive(badMetrics), 'a.zip')).toThrow(
      /metrics\.jsonl: metrics line 2/,
    );
    expect(() => readRunArchive(enc.encode('not a zip'), 'a.zip')).toThrow(/a\.zip: not a zip archive/);
    const badConfig = new Map(f);
    badConfig.set('config.json', enc.encode('{"anything":1}'));
    expect(() => readRunArchive(makeRunArchive(badConfig), 'a.zip')).toThrow(
      /config\.json: not a run config: .*anything/,
    );
    const latestElsewhere = new Map(f);
    latestElsewhere.set('checkpoints/latest', enc.encode('metrics.jsonl'));
    expect(() => readRunArchive(makeRunArchive(latestElsewhere), 'a.zip')).toThrow(
      /checkpoints\/latest: names metrics\.jsonl, not a checkpoint/,
    );
  });
});

describe('the config form', () => {
  it('gives the config of its fields, or problems naming the key', () => {
    const form = formFromConfig(config);
    expect(Object.keys(form)).toHaveLength(CONFIG_FIELDS.length);
    expect(configFromForm(form).config).toEqual(config);
    const r = configFromForm({ ...form, [formKey('actor_rollout_ref.rollout.n')]: '0' });
    expect(r.config).toBeNull();
    expect(r.problems[0].path).toBe('actor_rollout_ref.rollout.n');
    const changed = configFromForm({ ...form, [formKey('algorithm.adv_estimator')]: 'rloo' });
    expect(changed.config?.algorithm.adv_estimator).toBe('rloo');
    expect(config.actor_rollout_ref.model.path).toBe('sft');
  });
});

describe('the step timeline', () => {
  it('packs intervals onto the fewest lanes a first-free rule gives', () => {
    const bars = [
      { startMs: 0, endMs: 10 },
      { startMs: 1, endMs: 5 },
      { startMs: 5, endMs: 9 },
      { startMs: 10, endMs: 12 },
    ];
    const lanes = packLanes(bars);
    expect(lanes.map((l) => l.length)).toEqual([2, 2]);
  });

  it('draws phases, rollouts from their first call, stale calls and 429s', () => {
    const call = (startMs: number, endMs: number, policyVersion: number) => ({
      startMs,
      endMs,
      policyVersion,
      httpStatus: 200,
      promptTokens: 5,
      responseTokens: 3,
    });
    const rollout = (id: string, submitted: number, calls: ReturnType<typeof call>[]): TrainEvent => ({
      type: 'rollout',
      step: 3,
      split: 'train',
      rolloutId: id,
      dataId: 't@e0',
      state: 'succeeded',
      reward: 1,
      startMs: submitted,
      endMs: calls[calls.length - 1].endMs,
      calls,
    });
    const events: TrainEvent[] = [
      { type: 'phase', step: 3, phase: 'gen', startMs: 100, endMs: 400 },
      { type: 'phase', step: 3, phase: 'update_actor', startMs: 420, endMs: 600 },
      // two workers: a and b run at once, c waits in the pool for a's worker; b has a call from version 1
      rollout('a', 100, [call(110, 200, 2)]),
      rollout('b', 100, [call(105, 150, 1), call(160, 300, 2)]),
      rollout('c', 100, [call(210, 390, 2)]),
      { type: 'rejections', step: 3, items: [{ rolloutId: 'c', atMs: 405 }] },
      { type: 'step', step: 3, policyVersion: 3, metrics: {} },
      { type: 'phase', step: 4, phase: 'gen', startMs: 700, endMs: 800 },
    ];
    const t = stepTimeline(3, events);
    expect(t).not.toBeNull();
    if (!t) return;
    expect(t.trainedVersion).toBe(2);
    expect(t.lanes).toHaveLength(2);
    expect(t.phases.map((p) => p.phase)).toEqual(['gen', 'update_actor']);
    expect(t.stats).toMatchObject({ rollouts: 3, calls: 4, staleCalls: 1, rejections: 1, carriedOver: 0 });
    const c = t.lanes.flat().find((b) => b.rolloutId === 'c');
    expect(c?.submittedMs).toBe(100);
    expect(c?.startMs).toBe(210);
    expect(t.t0).toBe(100);
    expect(t.t1).toBe(600);
    expect(stepTimeline(9, events)).toBeNull();
  });
});

describe('the completions table', () => {
  it('groups a step by task with rewards and the trainer view’s advantages, and keeps history by task', () => {
    const rollouts = syntheticAgentBatch({
      rollouts: 6,
      callsPerRollout: 1,
      groupSize: 3,
      promptTokens: [4, 6],
      responseTokens: [3, 5],
      observationTokens: [1, 2],
      mismatchRate: 0,
      vocabSize: 64,
      seed: 5,
    });
    const groups = completionGroups(rollouts, DEFAULT_TRAINER_OPTIONS);
    expect(groups).toHaveLength(2);
    let signed = 0;
    for (const g of groups) {
      expect(g.samples).toHaveLength(3);
      const rewards = g.samples.map((s) => s.reward as number);
      const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      expect(g.meanReward).toBeCloseTo(mean, 9);
      // GRPO: a sample above its group's mean gets a positive advantage, below it a negative one
      for (const s of g.samples)
        if (s.advantage !== null && Math.abs((s.reward as number) - mean) > 1e-6) {
          expect(Math.sign(s.advantage)).toBe(Math.sign((s.reward as number) - mean));
          signed++;
        }
    }
    expect(signed).toBeGreaterThan(0);
    const ev = (step: number, dataId: string, reward: number): TrainEvent => ({
      type: 'rollout',
      step,
      split: 'train',
      rolloutId: `${step}-${dataId}-${reward}`,
      dataId,
      state: 'succeeded',
      reward,
      startMs: 0,
      endMs: 1,
      calls: [],
    });
    const h = taskHistory([ev(1, 'x@e0', 0), ev(1, 'x@e0', 1), ev(4, 'x@e1', 1), ev(2, 'y@e0', 0.5)]);
    expect(h.get('x')?.map((e) => [e.step, e.meanReward])).toEqual([
      [1, 0.5],
      [4, 1],
    ]);
    expect(h.get('y')?.[0].rewards).toEqual([0.5]);
  });
});

// the default run starts from the shipped SFT checkpoint
it('the tab starts from the SFT checkpoint', () => {
  expect(resolveTrainConfig(trainTabDefaults()).actor_rollout_ref.model.path).toBe('sft');
});
