/**
 * How many training runs of a seed group train at once, each in its own trainer worker, and which queued runs
 * start next. Pure: the caller gives what the browser reports (`navigator.hardwareConcurrency`,
 * `navigator.deviceMemory`) and what one run's step needs, where that is known.
 *
 * The rule: workers = max(1, min(cores − 1, runs in the group, memory budget ÷ one run's step memory)).
 * - cores − 1: every trainer worker keeps one core busy (the policy engine and its harness agents); one core
 *   stays for the page's own thread (rendering, the store, OPFS writes). A browser that does not report its cores
 *   gets one worker.
 * - the group: never more workers than runs.
 * - memory (only where the run's step memory is estimated): dedicated workers share their tab's renderer process,
 *   so the runs together must fit the page's budget, and half the device memory where the browser reports it.
 * One worker is the sequential case: the runs of the group then train one after another.
 */

export interface MachineFacts {
  /** `navigator.hardwareConcurrency`: logical cores (undefined when the browser does not report them) */
  cores: number | undefined;
  /** `navigator.deviceMemory` in GiB (Chromium; rounded down, capped): undefined when not reported */
  deviceMemoryGiB: number | undefined;
}

export type SlotBound = 'cores' | 'group' | 'memory';

export interface ParallelRule {
  /** trainer workers running the group's runs at once (≥ 1) */
  workers: number;
  /** the bound that set `workers` (the first of cores, group, memory when several give the same number) */
  by: SlotBound;
  /** one phrase per bound: what it allows and why */
  bounds: Record<SlotBound, string>;
  /** the sentence the page shows */
  reason: string;
}

const gib = (b: number) => `${(b / 2 ** 30).toFixed(b < 2 ** 30 ? 2 : 1)} GiB`;

/**
 * The number of trainer workers for a group of `groupRuns` runs. `runBytes`: one run's step memory (null when
 * not estimated for the run's model); `pageBudgetBytes`: what the tab's renderer may hold for training.
 */
export function parallelWorkers(
  machine: MachineFacts,
  groupRuns: number,
  runBytes: number | null,
  pageBudgetBytes: number,
): ParallelRule {
  if (!Number.isInteger(groupRuns) || groupRuns < 1)
    throw new Error(`parallel runs: the group must have an integer ≥ 1 of runs, got ${groupRuns}`);
  if (runBytes !== null && !(Number.isFinite(runBytes) && runBytes > 0))
    throw new Error(
      `parallel runs: a run's step memory must be a positive number of bytes or null, got ${runBytes}`,
    );
  if (!(Number.isFinite(pageBudgetBytes) && pageBudgetBytes > 0))
    throw new Error(
      `parallel runs: the page's memory budget must be a positive number of bytes, got ${pageBudgetBytes}`,
    );
  const cores =
    typeof machine.cores === 'number' && Number.isInteger(machine.cores) && machine.cores >= 1
      ? machine.cores
      : null;
  const byCores = cores === null ? 1 : Math.max(1, cores - 1);
  const memGiB =
    typeof machine.deviceMemoryGiB === 'number' &&
    Number.isFinite(machine.deviceMemoryGiB) &&
    machine.deviceMemoryGiB > 0
      ? machine.deviceMemoryGiB
      : null;
  const budget = Math.min(pageBudgetBytes, memGiB === null ? Infinity : (memGiB * 2 ** 30) / 2);
  const byMemory = runBytes === null ? Infinity : Math.max(1, Math.floor(budget / runBytes));
  const limits: Record<SlotBound, number> = { cores: byCores, group: groupRuns, memory: byMemory };
  const workers = Math.min(byCores, groupRuns, byMemory);
  const by = (['cores', 'group', 'memory'] as const).find((k) => limits[k] === workers) ?? 'cores';
  const budgetText =
    memGiB === null
      ? `the page's ${gib(pageBudgetBytes)}`
      : `${gib(budget)} (the page's ${gib(pageBudgetBytes)}, half of ${memGiB} GiB device memory)`;
  const bounds: Record<SlotBound, string> = {
    cores:
      cores === null
        ? 'the browser does not report its cores: 1'
        : `${cores} core${cores === 1 ? '' : 's'} − 1 for the page = ${byCores}`,
    group: `${groupRuns} run${groupRuns === 1 ? '' : 's'} in the group`,
    memory:
      runBytes === null
        ? "memory: no step estimate for this run's model"
        : `memory: ${budgetText} ÷ ${gib(runBytes)} per run = ${byMemory}`,
  };
  const reason = `${workers === 1 ? '1 run trains' : `${workers} runs train`} at once (${bounds[by]}; ${(
    ['cores', 'group', 'memory'] as const
  )
    .filter((k) => k !== by)
    .map((k) => bounds[k])
    .join('; ')})`;
  return { workers, by, bounds, reason };
}

/** A run as the queue sees it: its id and its seed group (null: a run of its own). */
export interface SlotRun {
  id: string;
  group: string | null;
}

/**
 * The queued runs (oldest first) to start now, given the runs training: first in, first out. A run outside a group
 * trains alone; a group's runs start from the head of the queue while the group has free workers
 * (`workersOf(group)`), and nothing behind them overtakes.
 */
export function runsToStart(
  queued: readonly SlotRun[],
  live: readonly SlotRun[],
  workersOf: (group: string) => number,
): string[] {
  const head = queued[0];
  if (!head) return [];
  const group = live.length ? live[0].group : head.group;
  if (live.some((r) => r.group !== group))
    throw new Error('parallel runs: the runs training are not one group');
  if (group === null) return live.length ? [] : [head.id];
  const workers = workersOf(group);
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`parallel runs: group ${group} has ${workers} workers (an integer ≥ 1 is needed)`);
  const out: string[] = [];
  for (const r of queued) {
    if (r.group !== group || live.length + out.length >= workers) break;
    out.push(r.id);
  }
  return out;
}
