import { describe, expect, it } from 'vitest';
import { parallelWorkers, runsToStart, type SlotRun } from '../../../src/train/runSlots';

const GiB = 2 ** 30;
const machine = (cores: number | undefined, deviceMemoryGiB?: number) => ({ cores, deviceMemoryGiB });

describe('parallelWorkers: how many runs of a seed group train at once', () => {
  it('keeps one core for the page: cores − 1, at least 1', () => {
    expect(parallelWorkers(machine(8), 6, null, 4 * GiB).workers).toBe(6);
    expect(parallelWorkers(machine(4), 6, null, 4 * GiB).workers).toBe(3);
    expect(parallelWorkers(machine(3), 6, null, 4 * GiB).workers).toBe(2);
    expect(parallelWorkers(machine(2), 6, null, 4 * GiB).workers).toBe(1);
    expect(parallelWorkers(machine(1), 6, null, 4 * GiB).workers).toBe(1);
    const r = parallelWorkers(machine(4), 6, null, 4 * GiB);
    expect(r.by).toBe('cores');
    expect(r.reason).toBe(
      "3 runs train at once (4 cores − 1 for the page = 3; 6 runs in the group; memory: no step estimate for this run's model)",
    );
  });

  it('never more workers than runs in the group', () => {
    const r = parallelWorkers(machine(16), 4, null, 4 * GiB);
    expect(r.workers).toBe(4);
    expect(r.by).toBe('group');
    expect(parallelWorkers(machine(16), 1, null, 4 * GiB).workers).toBe(1);
  });

  it('a browser that does not report its cores gets one worker (the sequential case)', () => {
    for (const cores of [undefined, 0, -2, 2.5, Number.NaN]) {
      const r = parallelWorkers(machine(cores), 6, null, 4 * GiB);
      expect(r.workers, String(cores)).toBe(1);
      expect(r.bounds.cores).toBe('the browser does not report its cores: 1');
    }
    expect(parallelWorkers(machine(1), 6, null, 4 * GiB).reason).toMatch(
      /^1 run trains at once \(1 core − 1/,
    );
  });

  it('where the step memory is estimated, the runs together fit the page and half the device memory', () => {
    // page budget 4 GiB, 1.5 GiB a run: 2 fit
    const page = parallelWorkers(machine(16), 8, 1.5 * GiB, 4 * GiB);
    expect(page.workers).toBe(2);
    expect(page.by).toBe('memory');
    expect(page.bounds.memory).toBe("memory: the page's 4.0 GiB ÷ 1.5 GiB per run = 2");
    // 4 GiB of device memory: half is 2 GiB, below the page's 4 GiB, so 1 run of 1.5 GiB
    const device = parallelWorkers(machine(16, 4), 8, 1.5 * GiB, 4 * GiB);
    expect(device.workers).toBe(1);
    expect(device.bounds.memory).toBe(
      "memory: 2.0 GiB (the page's 4.0 GiB, half of 4 GiB device memory) ÷ 1.5 GiB per run = 1",
    );
    // a run larger than the budget still gets one worker (its own start refuses it with the reason)
    expect(parallelWorkers(machine(16), 8, 9 * GiB, 4 * GiB).workers).toBe(1);
    // small runs: the cores bound again
    expect(parallelWorkers(machine(4, 8), 8, 0.1 * GiB, 4 * GiB).workers).toBe(3);
  });

  it('refuses a group, step memory or budget that is not a positive number', () => {
    expect(() => parallelWorkers(machine(4), 0, null, GiB)).toThrow(
      /the group must have an integer ≥ 1 of runs, got 0/,
    );
    expect(() => parallelWorkers(machine(4), 1.5, null, GiB)).toThrow(/got 1.5/);
    expect(() => parallelWorkers(machine(4), 2, -1, GiB)).toThrow(/step memory must be a positive number/);
    expect(() => parallelWorkers(machine(4), 2, null, 0)).toThrow(/memory budget must be a positive number/);
  });
});

const run = (id: string, group: string | null = 'g'): SlotRun => ({ id, group });

describe('runsToStart: the queue of runs to train', () => {
  const two = () => 2;

  it('starts a group from the head of the queue up to its workers, then one per freed worker', () => {
    const queue = [run('a'), run('b'), run('c'), run('d')];
    expect(runsToStart(queue, [], two)).toEqual(['a', 'b']);
    // both training: nothing more
    expect(runsToStart(queue.slice(2), [run('a'), run('b')], two)).toEqual([]);
    // a finished (done, failed or stopped alike): its worker goes to the next of the group
    expect(runsToStart(queue.slice(2), [run('b')], two)).toEqual(['c']);
    expect(runsToStart([], [run('b')], two)).toEqual([]);
  });

  it('with one worker the group trains one run after another', () => {
    const one = () => 1;
    const queue = [run('a'), run('b'), run('c')];
    expect(runsToStart(queue, [], one)).toEqual(['a']);
    expect(runsToStart(queue.slice(1), [run('a')], one)).toEqual([]);
    expect(runsToStart(queue.slice(1), [], one)).toEqual(['b']);
  });

  it('is first in, first out: a run outside the group waits for the group, and trains alone', () => {
    const queue = [run('a'), run('lone', null), run('x', 'h')];
    expect(runsToStart(queue, [], () => 4)).toEqual(['a']);
    expect(runsToStart(queue.slice(1), [run('a')], () => 4)).toEqual([]);
    expect(runsToStart(queue.slice(1), [], () => 4)).toEqual(['lone']);
    // while the lone run trains, the next group waits
    expect(runsToStart(queue.slice(2), [run('lone', null)], () => 4)).toEqual([]);
    expect(runsToStart(queue.slice(2), [], () => 4)).toEqual(['x']);
  });

  it('asks each group for its own workers', () => {
    const workers: Record<string, number> = { g: 3, h: 1 };
    const queue = [run('a'), run('b'), run('x', 'h'), run('y', 'h')];
    expect(runsToStart(queue, [], (g) => workers[g])).toEqual(['a', 'b']);
    expect(runsToStart(queue.slice(2), [], (g) => workers[g])).toEqual(['x']);
  });

  it('refuses runs training from two groups and a group without a worker count', () => {
    expect(() => runsToStart([run('c')], [run('a'), run('b', 'h')], two)).toThrow(/not one group/);
    expect(() => runsToStart([run('a')], [], () => 0)).toThrow(/group g has 0 workers/);
  });
});
