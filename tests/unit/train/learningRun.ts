/**
 * The learning test's run (learning.test.ts), in one place so the robustness sweep over run seeds
 * (`npx tsx tests/tools/learning-sweep.ts`) measures exactly what the test asserts on: RL from the shipped SFT
 * checkpoint of `instruction-short` on the CPU engine, 12 steps of 8 tasks × 4 rollouts (2 mini-batches of 16
 * rows), val reward on 32 val tasks × 4 samples at temperature 1 before and after.
 */
import { readFileSync } from 'node:fs';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { resolveTrainConfig } from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { inlineRunner } from '../../../src/train/source';

export const LEARNING_STEPS = 12;

export async function learningRun(seed: number): Promise<{ before: number; after: number; steps: number }> {
  const tok = loadTokenizer('policy');
  const ck = decodeCheckpoint(
    new Uint8Array(
      readFileSync(new URL('../../../public/checkpoints/instruction-short.safetensors', import.meta.url)),
    ),
  );
  const config = resolveTrainConfig({
    lab: { harness: 'instruction-short', seed, train_tasks: 256, val_tasks: 32, keep_traces: false },
    data: { train_batch_size: 8, max_response_length: 48 },
    actor_rollout_ref: {
      actor: { ppo_mini_batch_size: 4, optim: { lr: 2e-4, weight_decay: 0, betas: [0.9, 0.99] } },
      rollout: { n: 4, val_kwargs: { n: 4, temperature: 1, do_sample: true } },
    },
    trainer: { total_training_steps: LEARNING_STEPS, test_freq: 0, val_before_train: false },
  });
  const policy = new CpuPolicy(ck.config, {}, ck.params);
  const local = createLocalRun({ config, policy, tokenizer: tok, makeRunner: (h) => inlineRunner(h) });
  try {
    const before = (await local.run.validate(0))['val/reward'];
    const summary = await local.run.run();
    const after = (await local.run.validate(LEARNING_STEPS))['val/reward'];
    return { before, after, steps: summary.steps };
  } finally {
    local.close();
  }
}
