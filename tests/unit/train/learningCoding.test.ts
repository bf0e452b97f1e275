import { describe, expect, it } from 'vitest';
import { LEARNING_CASES, learningRun } from './learningRun';

// Learning on a multi-turn harness: RL from the shipped `coding` SFT checkpoint on the CPU engine at the trajectory
// level (each rollout's calls merged into one row; the tool's test reports are observation tokens with no weight).
// The reward is partial credit (the fraction of tests the last program passes), so GRPO groups rarely tie.
// How robust: across run seeds 0-4 with this configuration (`npx tsx tests/tools/learning-sweep.ts --case
// coding-trajectory --seeds 0,1,2,3,4`) the val reward (32 val tasks × 4 samples at temperature 1) rose
// 0.465 → 0.500 (+0.035), 0.443 → 0.537 (+0.094), 0.432 → 0.602 (+0.170), 0.420 → 0.453 (+0.033),
// 0.418 → 0.551 (+0.133): every seed up, median +0.094, smallest +0.033 (seed 3). The margin asserted, +0.02, is
// below the smallest rise; seed 0 is among the weakest seeds, so the test fails if learning there loses half of
// today's rise. A CPU run is deterministic, so seed 0 gives the same numbers every time.
describe('RL on a multi-turn harness', () => {
  it('raises the coding val reward above the SFT start on a fixed seed', { timeout: 900_000 }, async () => {
    const { before, after, steps } = await learningRun('coding-trajectory', 0);
    expect(steps).toBe(LEARNING_CASES['coding-trajectory'].steps);
    expect(before).toBeGreaterThan(0.15); // the SFT start is in the partial range: room to learn
    expect(before).toBeLessThan(0.6);
    expect(after - before).toBeGreaterThan(0.02);
  });
});
