/**
 * The per-step completions table: a kept step trace grouped by task (the `rollout.n` samples of one prompt side
 * by side), each sample with its reward and the advantage the trainer gave it — computed by core's trainer
 * view with the run's own options, the function the Advantages view and `lab analyze` call — and, across
 * steps, each task's rewards every time it came up (from the run's rollout events, so steps whose traces were
 * pruned still count).
 */
import type { TrainerOptions } from '../../core/pipeline/options';
import { computeTrainerView } from '../../core/pipeline/trainer';
import type { ChatTokenizer } from '../../core/tokenize/tokenizer';
import type { Rollout } from '../../core/trace/types';
import type { TrainEvent } from '../../train/events';

export interface Completion {
  rolloutId: string;
  state: Rollout['state'];
  reward: number | null;
  /** mean advantage over the rollout's trained tokens (one value under rollout-level advantage); null: none trained */
  advantage: number | null;
  /** the last call's answer */
  response: string;
  calls: number;
  toolCalls: number;
  responseTokens: number;
  error?: string;
}

export interface TaskGroup {
  dataId: string;
  /** the task id without the epoch suffix (`@e<k>`), shared by the task's groups across epochs */
  taskId: string;
  prompt: string;
  samples: Completion[];
  meanReward: number | null;
}

export const taskIdOf = (dataId: string) => dataId.replace(/@e\d+$/, '');

function promptOf(r: Rollout): string {
  const msgs = r.calls[0]?.request.messages ?? [];
  const user = msgs.find((m) => m.role === 'user');
  return user?.content ?? '';
}

function mean(xs: number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

export function completionGroups(
  rollouts: Rollout[],
  options: TrainerOptions,
  tokenizer?: ChatTokenizer,
): TaskGroup[] {
  const view = computeTrainerView({ rollouts, options, tokenizer });
  const b = view.batch;
  const sum = new Float64Array(rollouts.length);
  const count = new Float64Array(rollouts.length);
  for (let row = 0; row < b.nRows; row++) {
    if (view.rowStatus[row] !== 0) continue;
    const ri = b.rowRollout[row];
    for (let t = b.offsets[row]; t < b.offsets[row + 1]; t++)
      if (view.responseMask[t]) {
        sum[ri] += view.advantages[t];
        count[ri]++;
      }
  }
  const groups = new Map<string, TaskGroup>();
  rollouts.forEach((r, i) => {
    let g = groups.get(r.dataId);
    if (!g) {
      g = {
        dataId: r.dataId,
        taskId: taskIdOf(r.dataId),
        prompt: promptOf(r),
        samples: [],
        meanReward: null,
      };
      groups.set(r.dataId, g);
    }
    const last = r.calls[r.calls.length - 1];
    g.samples.push({
      rolloutId: r.rolloutId,
      state: r.state,
      reward: r.finalReward,
      advantage: count[i] ? sum[i] / count[i] : null,
      response: last?.response?.message.content ?? '',
      calls: r.calls.length,
      toolCalls: r.calls.reduce((n, c) => n + (c.response?.message.tool_calls?.length ?? 0), 0),
      responseTokens: r.calls.reduce((n, c) => n + (c.responseTokenIds?.length ?? 0), 0),
      ...(r.error ? { error: r.error } : {}),
    });
  });
  for (const g of groups.values())
    g.meanReward = mean(g.samples.map((s) => s.reward).filter((x): x is number => x !== null));
  return [...groups.values()];
}

export interface TaskHistoryEntry {
  step: number;
  rewards: (number | null)[];
  meanReward: number | null;
}

/** Every training step at which each task came up, with its samples' rewards (from rollout events). */
export function taskHistory(events: Iterable<TrainEvent>): Map<string, TaskHistoryEntry[]> {
  const by = new Map<string, Map<number, (number | null)[]>>();
  for (const e of events) {
    if (e.type !== 'rollout' || e.split !== 'train') continue;
    const id = taskIdOf(e.dataId);
    let steps = by.get(id);
    if (!steps) {
      steps = new Map();
      by.set(id, steps);
    }
    const list = steps.get(e.step) ?? [];
    list.push(e.reward);
    steps.set(e.step, list);
  }
  const out = new Map<string, TaskHistoryEntry[]>();
  for (const [id, steps] of by)
    out.set(
      id,
      [...steps.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([step, rewards]) => ({
          step,
          rewards,
          meanReward: mean(rewards.filter((x): x is number => x !== null)),
        })),
    );
  return out;
}
