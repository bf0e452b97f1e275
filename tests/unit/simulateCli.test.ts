import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command as simulateCmd } from '../../src/cli/commands/simulate';
import { getScenario, simulate } from '../../src/core/sim';

let out: string[];
beforeEach(() => {
  out = [];
  vi.spyOn(console, 'log').mockImplementation((m: string) => void out.push(m));
});
afterEach(() => vi.restoreAllMocks());

describe('lab simulate', () => {
  it('--json prints what the simulator gives for each mode of the scenario, with the published figures', async () => {
    expect(
      await simulateCmd.run([
        'agentic-8gpu',
        'steps=6',
        'cluster.gpus=16',
        'cluster.rollout_gpus=6',
        '--json',
      ]),
    ).toBe(0);
    const j = JSON.parse(out.join('\n'));
    expect(j.results.map((r: { mode: string }) => r.mode)).toEqual(getScenario('agentic-8gpu').modes);
    const want = simulate({
      ...getScenario('agentic-8gpu').config('separate_async'),
      steps: 6,
      cluster: { ...getScenario('agentic-8gpu').config('separate_async').cluster, gpus: 16, rollout_gpus: 6 },
    });
    const got = j.results.find((r: { mode: string }) => r.mode === 'separate_async');
    expect(got.summary.total_s).toBeCloseTo(want.summary.total_s, 9);
    expect(got.summary.mean_staleness_worst).toBeCloseTo(want.summary.mean_staleness_worst, 9);
    out = [];
    await simulateCmd.run([
      'verl-one-step-off-7b-fsdp2',
      'steps=3',
      '--mode',
      'one_step_off',
      '--json',
      '--per-step',
    ]);
    const k = JSON.parse(out.join('\n'));
    expect(k.results).toHaveLength(1);
    expect(k.results[0].steps).toHaveLength(3);
    expect(k.results[0].steps[2].off_policy['training/off_policy/trajectory_staleness/mean']).toBe(1);
    expect(k.published.runs[1].mode).toBe('one_step_off');
  });

  it('refuses unknown scenarios, keys and bad values with the reason', async () => {
    await expect(simulateCmd.run([])).rejects.toThrow(UsageError);
    await expect(simulateCmd.run(['nope'])).rejects.toThrow(
      /unknown scenario 'nope' \(one of: verl-fully-async-7b-32/,
    );
    await expect(simulateCmd.run(['agentic-8gpu', 'cluster.nodes=2'])).rejects.toThrow(
      /unknown key 'cluster.nodes'/,
    );
    await expect(simulateCmd.run(['agentic-8gpu', 'steps=-1'])).rejects.toThrow(/steps=-1: out of range/);
    await expect(simulateCmd.run(['agentic-8gpu', 'mode=fast'])).rejects.toThrow(
      /mode=fast: expected one of/,
    );
    await expect(simulateCmd.run(['agentic-8gpu', '--mode', 'fast'])).rejects.toThrow(
      /--mode must be one of/,
    );
    await expect(simulateCmd.run(['agentic-8gpu', 'steps'])).rejects.toThrow(/expected key=value/);
  });

  it('list names every scenario with its source', async () => {
    await simulateCmd.run(['list', '--json']);
    const l = JSON.parse(out.join('\n'));
    expect(l.length).toBeGreaterThanOrEqual(8);
    for (const s of l) expect(s.source.length).toBeGreaterThan(20);
  });
});
