/** The simulator's behaviour per mode on a small cluster, its determinism, and its errors. */
import { describe, expect, it } from 'vitest';
import {
  applySimOverrides,
  checkSimConfig,
  getScenario,
  SCENARIOS,
  SIM_MODES,
  type SimConfig,
  type SimMode,
  SimOverrideError,
  simulate,
} from '../../../src/core/sim';

const small = (mode: SimMode, patch: string[] = []): SimConfig =>
  applySimOverrides({ ...getScenario('agentic-8gpu').config(mode), steps: 12 }, patch);

describe('simulate', () => {
  it('is deterministic for a seed and changes with it', () => {
    const a = simulate(small('separate_async'));
    const b = simulate(small('separate_async'));
    const c = simulate(small('separate_async', ['seed=7']));
    expect(b.steps).toEqual(a.steps);
    expect(c.summary.total_s).not.toBe(a.summary.total_s);
  });

  it('the batched walks (drain, the two-pass wait for groups) give the same results as one event at a time', () => {
    // every scenario and mode as published; on the smaller scenarios also the branches the walks must respect:
    // drop and wait past a small threshold, no partial rollout, few sequence slots (calls queue), and a traced
    // step (recorded steps take the queue; traced calls still finish in the batched steps after it)
    const variants: [string, string[]][] = [
      ['drop past 1', ['schedule.max_off_policy_threshold=1', 'schedule.max_off_policy_strategy=drop']],
      ['wait past 1', ['schedule.max_off_policy_threshold=1', 'schedule.max_off_policy_strategy=wait']],
      ['no partial rollout', ['schedule.partial_rollout=false']],
      ['16 slots', ['cluster.max_num_seqs=16']],
      ['traced', ['steps=12', 'trace_step=8']],
    ];
    const smaller = new Set(['agentic-8gpu', 'separate-async-128-cap-w1', 'verl-fully-async-7b-32']);
    let compared = 0;
    for (const sc of SCENARIOS)
      for (const mode of SIM_MODES)
        for (const [name, patch] of [['as published', []] as [string, string[]], ...variants]) {
          if (patch.length && !smaller.has(sc.name)) continue;
          let cfg: SimConfig;
          try {
            cfg = applySimOverrides({ ...sc.config(mode), steps: 6 }, patch);
            checkSimConfig(cfg);
          } catch {
            continue; // a variant this mode's keys do not allow
          }
          const batched = simulate(cfg);
          const events = simulate(cfg, { walk: 'events' });
          expect(JSON.stringify(batched), `${sc.name} ${mode} ${name}`).toBe(JSON.stringify(events));
          compared++;
        }
    expect(compared).toBeGreaterThan(SCENARIOS.length * SIM_MODES.length + 3 * 4 * 3);
  });

  it('every mode runs its steps; utilisations lie in [0, 1]; the step is its phases where the trainer is serial', () => {
    for (const mode of SIM_MODES) {
      const r = simulate(small(mode));
      expect(r.steps).toHaveLength(12);
      for (const s of r.steps) {
        for (const u of [s.utilisation.rollout, s.utilisation.trainer, s.utilisation.pool]) {
          expect(u).toBeGreaterThanOrEqual(0);
          expect(u).toBeLessThanOrEqual(1 + 1e-9);
        }
        expect(s.trained_trajectories).toBe(64 * 8);
        const phases = Object.values(s.phases).reduce((a, b) => a + b, 0);
        expect(phases).toBeCloseTo(s.wall_s, 6);
      }
    }
  });

  it('sync trains on-policy only; one_step_off exactly one version behind after the first step', () => {
    const sync = simulate(small('sync'));
    for (const s of sync.steps)
      expect(s.off_policy['training/off_policy/trajectory_staleness_worst/max']).toBe(0);
    const off = simulate(small('one_step_off'));
    for (const s of off.steps.slice(1)) expect(s.staleness_hist).toEqual([0, 64 * 8]);
  });

  it('partial rollouts (colocate_async) span versions; Agent Lightning drains instead (a pause phase, calls run to their end)', () => {
    const co = simulate(small('colocate_async', ['schedule.max_off_policy_threshold=100']));
    expect(co.summary.mean_staleness_worst).toBeGreaterThan(0);
    expect(
      Math.max(...co.steps.map((s) => s.off_policy['training/off_policy/trajectory_spans/max'])),
    ).toBeGreaterThan(1);
    expect(co.steps.every((s) => s.phases.pause === 0)).toBe(true);
    const agl = simulate(small('agl_async'));
    expect(agl.steps.slice(1).some((s) => s.phases.pause > 0)).toBe(true);
  });

  it('max_off_policy_strategy drop evicts groups past the threshold; wait drops none and waits for them', () => {
    const drop = simulate(
      small('separate_async', ['schedule.max_off_policy_threshold=1', 'schedule.num_warmup_batches=2']),
    );
    expect(drop.summary.dropped_samples).toBeGreaterThan(0);
    expect(drop.steps.some((s) => s.off_policy['training/off_policy/evicted_samples'] > 0)).toBe(true);
    for (const s of drop.steps)
      expect(s.off_policy['training/off_policy/trajectory_staleness_worst/max']).toBeLessThanOrEqual(1);
    const wait = simulate(
      small('separate_async', [
        'schedule.max_off_policy_threshold=1',
        'schedule.num_warmup_batches=2',
        'schedule.max_off_policy_strategy=wait',
      ]),
    );
    expect(wait.summary.dropped_samples).toBe(0);
    const waited = (r: typeof wait) => r.steps.reduce((a, s) => a + s.phases.gen, 0);
    // the trainer blocks for in-flight groups that reached the threshold (they are trained, not dropped)
    const free = simulate(
      small('separate_async', ['schedule.max_off_policy_threshold=100', 'schedule.num_warmup_batches=2']),
    );
    expect(waited(wait)).toBeGreaterThan(2 * waited(free));
  });

  it('more rollout GPUs shorten a rollout-bound separate step; a slower weight link lengthens it', () => {
    const base = simulate(small('fully_async', ['cluster.gpus=8', 'cluster.rollout_gpus=2']));
    const more = simulate(small('fully_async', ['cluster.gpus=8', 'cluster.rollout_gpus=5']));
    expect(more.summary.total_s).toBeLessThan(base.summary.total_s);
    const slow = simulate(small('fully_async', ['cluster.sync_bandwidth_gb_s=0.1']));
    expect(slow.summary.total_s).toBeGreaterThan(simulate(small('fully_async')).summary.total_s + 12 * 100);
  });

  it('keeps a traced step: phases on the trainer lane, calls with versions, the trained ones marked', () => {
    const r = simulate(small('separate_async', ['trace_step=5']));
    const t = r.trace;
    expect(t?.step).toBe(5);
    expect(t?.t1).toBeCloseTo(r.steps[4].end_s, 9);
    expect(t?.t0).toBeCloseTo(r.steps[3].end_s, 9);
    expect(t?.phases.some((p) => p.phase === 'update_actor')).toBe(true);
    const trained = t?.trajectories.filter((x) => x.trained_version === 4) ?? [];
    expect(trained.length).toBe(64 * 8);
    expect(trained.some((x) => x.calls.some((c) => c.version < 4))).toBe(true);
  });

  it('names the key in every error', () => {
    const cfg = small('sync');
    expect(() => applySimOverrides(cfg, ['cluster.gpu=3'])).toThrow(/unknown key 'cluster.gpu'/);
    expect(() => applySimOverrides(cfg, ['gpus=3'])).toThrow(/did you mean cluster.gpus/);
    expect(() => applySimOverrides(cfg, ['cluster.gpus=two'])).toThrow(/cluster.gpus=two: expected a number/);
    expect(() => applySimOverrides(cfg, ['cluster.gpus=2.5'])).toThrow(/expected an integer/);
    expect(() => applySimOverrides(cfg, ['workload.rollout_n=0'])).toThrow(/out of range/);
    expect(() => applySimOverrides(cfg, ['mode=async'])).toThrow(/expected one of sync, one_step_off/);
    expect(() => applySimOverrides(cfg, ['schedule.partial_rollout=yes'])).toThrow(/expected true or false/);
    expect(() => applySimOverrides(cfg, ['mode=one_step_off', 'cluster.rollout_gpus=8'])).toThrow(
      /cluster.rollout_gpus: \(8\) must leave trainer GPUs/,
    );
    expect(() => applySimOverrides(cfg, ['mode=separate_async', 'schedule.parameter_sync_step=3'])).toThrow(
      SimOverrideError,
    );
    expect(() => applySimOverrides(cfg, ['steps'])).toThrow(/expected key=value/);
  });
});
