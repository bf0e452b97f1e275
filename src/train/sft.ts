/**
 * The SFT warm start: supervised steps on the scripted experts' trajectories, so RL starts from a policy that
 * already speaks each harness's format. The expert's rollouts are recorded by the same proxy (ids from the
 * policy's tokenizer, as the policy would have produced them), turned into rows by the same sample building
 * RL uses (trajectory merge, observation tokens masked out), and trained with verl's SFT loss (token-mean NLL
 * over mask-1 tokens). Seeded end to end, so a seed regenerates a checkpoint bit for bit on the CPU engine.
 */

import { selectRows } from '../core/aggregate/select';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { Rollout } from '../core/trace/types';
import type { PolicyEngine } from '../engine/policy/types';
import { expertEngine } from '../harness/engines';
import type { Behaviour, Split, TaskBase } from '../harness/harness';
import { LlmProxy } from '../harness/proxy';
import { getHarness, type HarnessName } from '../harness/registry';
import { defaultTrainConfig, type TrainConfig } from './config';
import { buildStepRows, type TrainingBatch } from './objective';
import { hashSeed, permutation } from './rng';
import { HarnessRolloutSource, inlineRunner } from './source';
import { sftStep } from './step';

/** What the expert's recording may change: its behaviours, the proxy's length limits and the tasks' level. */
export interface ExpertOptions {
  behaviours?: Behaviour[];
  maxResponseLength?: number;
  maxModelLen?: number;
  /** difficulty level of the tasks (null or absent: the harness's mix) */
  level?: number | null;
  /** pre-training tasks (generated content, `Harness.pretrainTasks`) added after the split's tasks */
  pretrainTasks?: number;
}

/** SFT on the expert's rows: what the recording may change (ExpertOptions) and the training schedule. */
export interface SftOptions extends ExpertOptions {
  harness: HarnessName;
  seed: number;
  /** expert trajectories (distinct tasks) to train on */
  tasks: number;
  steps: number;
  /** rows per optimizer step */
  batchRows: number;
  /** rows per engine batch */
  microRows?: number;
  lr: number;
  /** linear warmup steps, then cosine decay to 10% ('cosine', default) or constant */
  warmup?: number;
  schedule?: 'cosine' | 'constant';
}

/**
 * The scripted expert's rollouts on `n` tasks of a split (or, with `split` 'pretrain', on the harness's
 * pre-training tasks), recorded through the proxy with `tokenizer`'s ids.
 */
export async function expertRollouts(
  harness: HarnessName,
  tokenizer: ChatTokenizer,
  split: Split | 'pretrain',
  seed: number,
  n: number,
  opts: ExpertOptions = {},
): Promise<Rollout[]> {
  const h = getHarness(harness);
  let tasks: TaskBase[];
  if (split === 'pretrain') {
    if (!h.pretrainTasks) throw new Error(`harness '${harness}' has no pre-training tasks`);
    tasks = h.pretrainTasks(seed, n, opts.level ?? null);
  } else tasks = h.makeTasks(split, seed, n, opts.level ?? null);
  const taskOf = new Map<string, TaskBase>();
  const engine = expertEngine(tokenizer, h, taskOf, seed);
  const proxy = new LlmProxy({
    engine,
    tokenizer,
    maxResponseTokens: opts.maxResponseLength ?? 256,
    maxContextTokens: opts.maxModelLen ?? 1024,
  });
  const source = new HarnessRolloutSource({
    harness,
    behaviours: opts.behaviours ?? [],
    maxTurns: null,
    proxy,
    runner: inlineRunner(proxy.handle),
  });
  const groups = tasks.map((task, i) => {
    const rid = `expert-${harness}-${split}-s${seed}-${i}`;
    taskOf.set(rid, task);
    return { dataId: task.id, task, split: task.split, step: 0, sampleIdx: i, rolloutIds: [rid] };
  });
  source.submit(groups);
  const out: Rollout[] = [];
  for (let i = 0; i < groups.length; i++) out.push(await source.next());
  source.close();
  // completion order is not deterministic in general: keep the plan's order
  const order = new Map(groups.map((g, i) => [g.rolloutIds[0], i]));
  return out.sort((a, b) => (order.get(a.rolloutId) ?? 0) - (order.get(b.rolloutId) ?? 0));
}

export interface SftStepReport {
  step: number;
  loss: number;
  gradNorm: number;
  lr: number;
}

/** The expert's trajectories as training rows (the same sample building RL uses; every row kept). */
export async function expertRows(
  harness: HarnessName,
  tokenizer: ChatTokenizer,
  seed: number,
  tasks: number,
  opts: ExpertOptions = {},
): Promise<{ rows: TrainingBatch; failed: number }> {
  const rollouts = await expertRollouts(harness, tokenizer, 'train', seed, tasks, opts);
  if (opts.pretrainTasks)
    rollouts.push(...(await expertRollouts(harness, tokenizer, 'pretrain', seed, opts.pretrainTasks, opts)));
  const cfg: TrainConfig = defaultTrainConfig();
  cfg.lab.harness = harness;
  // a mini-batch of one row: nothing is trimmed; rows stay in the adapter's order
  cfg.actor_rollout_ref.actor.ppo_mini_batch_size = 1;
  cfg.actor_rollout_ref.rollout.n = 1;
  cfg.trainer.balance_batch = false;
  const rows = buildStepRows(rollouts, cfg, { trimSeed: 0 }).batch;
  return { rows, failed: rollouts.filter((r) => r.state === 'failed').length };
}

export interface SftTrainOptions {
  steps: number;
  batchRows: number;
  lr: number;
  seed: number;
  /** linear warmup steps, then cosine decay to 10% ('cosine', default) or constant */
  warmup?: number;
  schedule?: 'cosine' | 'constant';
  microRows?: number;
}

/** `steps` supervised steps on `rows` (seeded epochs of shuffled rows), in place. */
export async function sftTrain(
  policy: PolicyEngine,
  rows: TrainingBatch,
  o: SftTrainOptions,
  onStep?: (r: SftStepReport) => void,
): Promise<number[]> {
  const losses: number[] = [];
  const warmup = o.warmup ?? Math.min(20, Math.floor(o.steps / 10));
  let order: number[] = [];
  let at = 0;
  let epoch = 0;
  for (let step = 1; step <= o.steps; step++) {
    const s = step - 1;
    const decay =
      o.schedule === 'constant'
        ? 1
        : 0.1 + 0.9 * 0.5 * (1 + Math.cos((Math.PI * (s - warmup)) / Math.max(1, o.steps - warmup)));
    const lr = s < warmup ? (o.lr * (s + 1)) / (warmup + 1) : o.lr * decay;
    policy.optimizer = { ...policy.optimizer, lr };
    const pick: number[] = [];
    while (pick.length < o.batchRows) {
      if (at >= order.length) {
        order = permutation(rows.nRows, hashSeed(o.seed, 'sft', epoch++));
        at = 0;
      }
      pick.push(order[at++]);
    }
    const r = await sftStep(policy, selectRows(rows, pick), o.microRows ?? 8);
    losses.push(r.loss);
    onStep?.({ step, loss: r.loss, gradNorm: r.gradNorm, lr });
  }
  return losses;
}

/** Runs SFT on `policy` (in place) on the expert's trajectories; returns the loss curve. */
export async function runSft(
  policy: PolicyEngine,
  tokenizer: ChatTokenizer,
  o: SftOptions,
  onStep?: (r: SftStepReport) => void,
  /** called once the expert rows are built, before the first step */
  onRows?: (rows: number, tokens: number) => void,
): Promise<{ losses: number[]; rows: number; tokens: number; failedExperts: number }> {
  const { rows, failed } = await expertRows(o.harness, tokenizer, o.seed, o.tasks, o);
  let tokens = 0;
  for (let t = 0; t < rows.mask.length; t++) tokens += rows.mask[t];
  onRows?.(rows.nRows, tokens);
  const losses = await sftTrain(
    policy,
    rows,
    {
      steps: o.steps,
      batchRows: o.batchRows,
      lr: o.lr,
      seed: o.seed,
      warmup: o.warmup,
      schedule: o.schedule,
      microRows: o.microRows,
    },
    onStep,
  );
  return { losses, rows: rows.nRows, tokens, failedExperts: failed };
}
