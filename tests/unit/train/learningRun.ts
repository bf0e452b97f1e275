/**
 * The learning tests' runs (learning*.test.ts), in one place so the robustness sweep over run seeds
 * (`npx tsx tests/tools/learning-sweep.ts --case NAME`) measures exactly what a test asserts on: RL from a
 * harness's shipped SFT checkpoint on the CPU engine, val reward at temperature 1 before and after.
 *  - `instruction-short`: 12 steps of 8 tasks × 4 rollouts (2 mini-batches of 16 rows), 32 val tasks × 4 samples.
 *  - `search-trajectory`, `search-transition`, `coding-trajectory`, `coding-transition`: the multi-turn
 *    harnesses at each trace-aggregation level (one merged row per rollout, or one row per call), 16 steps of
 *    8 tasks × 4 rollouts at lr 2e-4, 32 val tasks × 4 samples. `coding-trajectory` is what learningCoding.test.ts
 *    asserts on (the coding checkpoint starts in the partial range, ~0.45 at temperature 1). At lr 3e-4 the
 *    policy drifted (entropy and response length up, val 0.465 → 0.391 in 8 steps on seed 0); at 1e-4 it barely
 *    moved (+0.010). `coding-transition` (the second test there) rose on 8 of 10 seeds (+0.070 to +0.203;
 *    seeds 0 and 8: −0.010, −0.023). The search checkpoint earns val reward 0 at temperature 1 (every GRPO advantage is 0),
 *    so its cases are starting points, not measured ones.
 */
import { readFileSync } from 'node:fs';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import type { HarnessName } from '../../../src/harness/registry';
import { resolveTrainConfig } from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { inlineRunner } from '../../../src/train/source';

export interface LearningCase {
  harness: HarnessName;
  level: 'trajectory' | 'transition';
  steps: number;
  lr: number;
  /** tasks per step × rollouts per task; mini-batches of `miniBatch` tasks */
  tasks: number;
  n: number;
  miniBatch: number;
  valTasks: number;
  valN: number;
  maxResponseLength: number;
}

// coding's expert replies are 42–66 tokens on a first attempt and 70–94 on a fix (the policy tokenizer), so its
// cases get room for a whole program; a search reply (one tool call or the answer) fits in 64.
const multiTurn = (harness: HarnessName, level: LearningCase['level']): LearningCase => ({
  harness,
  level,
  steps: 16,
  lr: 2e-4,
  tasks: 8,
  n: 4,
  miniBatch: 4,
  valTasks: 32,
  valN: 4,
  maxResponseLength: harness === 'coding' ? 128 : 64,
});

export const LEARNING_CASES = {
  'instruction-short': {
    harness: 'instruction-short',
    level: 'trajectory',
    steps: 12,
    lr: 2e-4,
    tasks: 8,
    n: 4,
    miniBatch: 4,
    valTasks: 32,
    valN: 4,
    maxResponseLength: 48,
  },
  'search-trajectory': multiTurn('search', 'trajectory'),
  'search-transition': multiTurn('search', 'transition'),
  'coding-trajectory': multiTurn('coding', 'trajectory'),
  'coding-transition': multiTurn('coding', 'transition'),
} satisfies Record<string, LearningCase>;

export type LearningCaseName = keyof typeof LEARNING_CASES;

export function isLearningCase(name: string): name is LearningCaseName {
  return Object.hasOwn(LEARNING_CASES, name);
}

export async function learningRun(
  name: LearningCaseName,
  seed: number,
): Promise<{ before: number; after: number; steps: number }> {
  const c: LearningCase = LEARNING_CASES[name];
  const tok = loadTokenizer('policy');
  const ck = decodeCheckpoint(
    new Uint8Array(
      readFileSync(new URL(`../../../public/checkpoints/${c.harness}.safetensors`, import.meta.url)),
    ),
  );
  const config = resolveTrainConfig({
    lab: { harness: c.harness, seed, train_tasks: 256, val_tasks: c.valTasks, keep_traces: false },
    data: { train_batch_size: c.tasks, max_response_length: c.maxResponseLength },
    actor_rollout_ref: {
      actor: { ppo_mini_batch_size: c.miniBatch, optim: { lr: c.lr, weight_decay: 0, betas: [0.9, 0.99] } },
      rollout: { n: c.n, val_kwargs: { n: c.valN, temperature: 1, do_sample: true } },
    },
    agentlightning: { trace_aggregator: { level: c.level } },
    trainer: { total_training_steps: c.steps, test_freq: 0, val_before_train: false },
  });
  const policy = new CpuPolicy(ck.config, {}, ck.params);
  const local = createLocalRun({ config, policy, tokenizer: tok, makeRunner: (h) => inlineRunner(h) });
  try {
    const before = (await local.run.validate(0))['val/reward'];
    const summary = await local.run.run();
    const after = (await local.run.validate(c.steps))['val/reward'];
    return { before, after, steps: summary.steps };
  } finally {
    local.close();
  }
}
