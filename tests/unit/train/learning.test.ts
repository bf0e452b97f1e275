import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { resolveTrainConfig } from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { inlineRunner } from '../../../src/train/source';

// Learning, not only running: RL from the shipped SFT checkpoint of `instruction-short` on the CPU engine.
// The expert that made the checkpoint signs off with "Hope this helps!" on ~40% of tasks and SFT imitates it;
// the exact-word-count requirement does not pay for it (SFT has converged to it: 600 steps, topic and word
// right ~98% of the time, the sign-off on ~31% of samples). RL removes the habit: on seed 0 below the val
// reward (32 val tasks × 4 samples at temperature 1) goes 0.870 → 0.977 in 12 steps. Across run seeds 0-5 with
// this configuration the rise was +0.107, +0.078, +0.112, +0.047, +0.107, +0.076 (every seed up; the val
// estimate itself varies by about ±0.04 between seeds); the margin asserted, +0.03, is below the smallest.
// A CPU run is deterministic, so seed 0 gives the same numbers every time.
describe('RL on the CPU backend', () => {
  it('raises the val reward above the SFT start on a fixed seed', { timeout: 600_000 }, async () => {
    const tok = loadTokenizer('policy');
    const ck = decodeCheckpoint(
      new Uint8Array(
        readFileSync(new URL('../../../public/checkpoints/instruction-short.safetensors', import.meta.url)),
      ),
    );
    const config = resolveTrainConfig({
      lab: { harness: 'instruction-short', seed: 0, train_tasks: 256, val_tasks: 32, keep_traces: false },
      data: { train_batch_size: 8, max_response_length: 48 },
      actor_rollout_ref: {
        actor: { ppo_mini_batch_size: 4, optim: { lr: 2e-4, weight_decay: 0, betas: [0.9, 0.99] } },
        rollout: { n: 4, val_kwargs: { n: 4, temperature: 1, do_sample: true } },
      },
      trainer: { total_training_steps: 12, test_freq: 0, val_before_train: false },
    });
    const policy = new CpuPolicy(ck.config, {}, ck.params);
    const local = createLocalRun({ config, policy, tokenizer: tok, makeRunner: (h) => inlineRunner(h) });
    const before = (await local.run.validate(0))['val/reward'];
    const summary = await local.run.run();
    const after = (await local.run.validate(12))['val/reward'];
    local.close();
    expect(summary.steps).toBe(12);
    expect(before).toBeGreaterThan(0.5); // the SFT start already speaks the format
    expect(after - before).toBeGreaterThan(0.03);
  });
});
