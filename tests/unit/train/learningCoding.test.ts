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

  // The transition level: one row per call, each carrying its rollout's reward (the tool's reports are in the
  // prompt of the next call, not in a response). Same configuration. How robust (`npx tsx
  // tests/tools/learning-sweep.ts --case coding-transition --seeds 0,1,2,3,4,5,6,7,8,9`), the rise on seeds 0–9:
  // −0.010, +0.088, +0.121, +0.088, +0.082, +0.070, +0.166, +0.203, −0.023, +0.164: 8 of 10 seeds up, median
  // +0.088, mean +0.095 (95% interval +0.043 to +0.147); seeds 0 and 8 did not learn. So this test is weaker
  // than the trajectory one: it runs seed 1, a median seed, and asserts +0.04, below every rising seed's rise;
  // two seeds in ten of this sweep would fail it.
  it('raises the coding val reward at the transition level on a fixed seed', {
    timeout: 900_000,
  }, async () => {
    const { before, after, steps } = await learningRun('coding-transition', 1);
    expect(steps).toBe(LEARNING_CASES['coding-transition'].steps);
    expect(before).toBeGreaterThan(0.15);
    expect(before).toBeLessThan(0.6);
    expect(after - before).toBeGreaterThan(0.04);
  });
});
