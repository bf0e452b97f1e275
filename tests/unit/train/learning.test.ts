import { describe, expect, it } from 'vitest';
import { LEARNING_CASES, learningRun } from './learningRun';

// Learning, not only running: RL from the shipped SFT checkpoint of `instruction-short` on the CPU engine
// (learningRun.ts). The expert that made the checkpoint signs off with "Hope this helps!" on ~40% of tasks and SFT
// imitates it; the exact-word-count requirement does not pay for it (SFT has converged to it: 600 steps, topic and
// word right ~98% of the time, the sign-off on ~31% of samples). RL removes the habit: on seed 0 below the val reward
// (32 val tasks × 4 samples at temperature 1) goes 0.870 → 0.961 in 12 steps (+0.091).
// How robust: across run seeds 0-11 with this configuration (`npx tsx tests/tools/learning-sweep.ts --seeds
// 0,1,2,3,4,5,6,7,8,9,10,11`) the rise was +0.091, +0.083, +0.117, +0.044, +0.115, +0.078, +0.076, +0.034, +0.112,
// +0.060, +0.089, +0.109: every seed up, median +0.086, smallest +0.034 (seed 7; the val estimate itself varies by
// about ±0.04 between seeds). The margin asserted, +0.03, is below the smallest rise: the test fails when the rise
// on seed 0 drops to a third of today's, and no seed seen here would fail it.
// A CPU run is deterministic, so seed 0 gives the same numbers every time.
describe('RL on the CPU backend', () => {
  it('raises the val reward above the SFT start on a fixed seed', { timeout: 600_000 }, async () => {
    const { before, after, steps } = await learningRun('instruction-short', 0);
    expect(steps).toBe(LEARNING_CASES['instruction-short'].steps);
    expect(before).toBeGreaterThan(0.5); // the SFT start already speaks the format
    expect(after - before).toBeGreaterThan(0.03);
  });
});
