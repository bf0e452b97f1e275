/**
 * Plans a batch of rollouts (tasks × group size, AGL/verl style: the K rollouts of one task share its dataId),
 * runs them through a worker pool against the proxy, and assembles core `Rollout`s from what the proxy
 * recorded and how each job ended. Environment-neutral: the caller supplies the pool (browser or Node workers).
 */
import type { Rollout } from '../core/trace/types';
import type { Behaviour, Split, TaskBase } from './harness';
import type { JobEnd, WorkerPool } from './pool';
import type { LlmProxy, RolloutRecord } from './proxy';
import { getHarness, type HarnessName } from './registry';
import { runJob } from './workerMain';
import type { HarnessJob } from './workerProtocol';

export interface RunSpec {
  harness: HarnessName;
  split: Split;
  /** number of tasks */
  n: number;
  /** rollouts per task */
  groupSize: number;
  seed: number;
  /** difficulty level of the tasks (Harness.levels; absent or null: the harness's mix) */
  level?: number | null;
  behaviours: Behaviour[];
  maxTurns?: number;
  apiKey?: string;
}

export interface PlannedRollout {
  job: HarnessJob;
  task: TaskBase;
  index: number;
}

export function rolloutPaths(rolloutId: string, split: Split): { baseUrl: string; eventUrl: string } {
  const rid = encodeURIComponent(rolloutId);
  return {
    baseUrl: `/rollout/${rid}/attempt/0/mode/${split}/openai/v1`,
    eventUrl: `/api/rollouts/${rid}/attempt/0/events`,
  };
}

export function planRollouts(spec: RunSpec): PlannedRollout[] {
  const tasks = getHarness(spec.harness).makeTasks(spec.split, spec.seed, spec.n, spec.level ?? null);
  const out: PlannedRollout[] = [];
  for (const task of tasks)
    for (let g = 0; g < spec.groupSize; g++) {
      const rolloutId = `${spec.harness}-${spec.split}-s${spec.seed}-${out.length}`;
      out.push({
        index: out.length,
        task,
        job: {
          rolloutId,
          harness: spec.harness,
          task: task as HarnessJob['task'],
          ...rolloutPaths(rolloutId, spec.split),
          apiKey: spec.apiKey ?? '',
          behaviours: spec.behaviours,
          maxTurns: spec.maxTurns,
        },
      });
    }
  return out;
}

/**
 * A finished rollout from what the proxy recorded for it (`rec`: calls and rewards) and how its job ended:
 * succeeded when the harness returned, failed (with the error) otherwise; its metadata names the harness,
 * behaviours, engine and task, the run's timing when given, and the harness's turns / end / info when done.
 */
export function recordedRollout(
  end: JobEnd,
  rec: RolloutRecord | undefined,
  a: {
    rolloutId: string;
    dataId: string;
    split: Split;
    step?: number;
    sampleIdxInStep: number;
    harness: HarnessName;
    behaviours: Behaviour[];
    engine: { kind: string; model: string };
    task: TaskBase;
    timing?: { start_ms: number; end_ms: number };
  },
): Rollout {
  const rewards = rec?.rewards ?? [];
  const rollout: Rollout = {
    rolloutId: a.rolloutId,
    dataId: a.dataId,
    isTrain: a.split === 'train',
    state: end.type === 'done' ? 'succeeded' : 'failed',
    calls: rec?.calls ?? [],
    rewards,
    finalReward: rewards.length ? rewards[rewards.length - 1].value : null,
    ...(a.step !== undefined ? { step: a.step } : {}),
    sampleIdxInStep: a.sampleIdxInStep,
    metadata: {
      harness: a.harness,
      behaviours: a.behaviours,
      engine: a.engine.kind,
      model: a.engine.model,
      task: a.task,
      ...a.timing,
      ...(end.type === 'done'
        ? { turns: end.turns, ended: end.ended, ...(end.info ? { info: end.info } : {}) }
        : {}),
    },
  };
  if (end.type === 'failed') rollout.error = end.error;
  return rollout;
}

export async function runRollouts(
  spec: RunSpec,
  plan: PlannedRollout[],
  proxy: LlmProxy,
  pool: WorkerPool,
  opts: { signal?: AbortSignal; onRollout?: (r: Rollout) => void } = {},
): Promise<Rollout[]> {
  const results = await Promise.all(
    plan.map(async (p) => {
      const end = await pool.run(p.job, opts.signal);
      const rec = proxy.take(p.job.rolloutId);
      const rollout = recordedRollout(end, rec, {
        rolloutId: p.job.rolloutId,
        dataId: p.task.id,
        split: spec.split,
        sampleIdxInStep: p.index,
        harness: spec.harness,
        behaviours: spec.behaviours,
        engine: proxy.engine,
        task: p.task,
      });
      opts.onRollout?.(rollout);
      return rollout;
    }),
  );
  return results;
}

/**
 * The same batch without workers: each job runs on this thread against `proxy.handle` (for tests and small
 * demos; a harness that blocks the thread blocks everything, which is what the worker pool exists to avoid).
 */
export async function runInline(spec: RunSpec, plan: PlannedRollout[], proxy: LlmProxy): Promise<Rollout[]> {
  const inlinePool = {
    run: (job: HarnessJob) => runJob(job, proxy.handle),
  } as unknown as WorkerPool;
  return runRollouts(spec, plan, proxy, inlinePool);
}
