/**
 * Closed-form mean staleness of fully-async RL, by Little's law. A prompt group enters the system when its first
 * call starts (at the rollout's policy version then) and leaves when the trainer takes it. With L the
 * time-averaged number of groups in the system and λ the rate the trainer takes them (B per policy version,
 * one version per step time T), a group spends W = L/λ = L·T/B in the system on average, and the versions
 * published meanwhile are W/T when its start is not phase-locked to the weight syncs, so
 *
 *     E[trajectory_staleness_worst] ≈ L / B.
 *
 * Where the pipeline is held full by the active-prompt cap (verl v1's separate_async keeps
 * (1 + num_warmup_batches) · train_batch_size prompts active, and a started group only leaves when trained: the
 * trainer-bound and straggler-bound regimes, where groups wait for the trainer or for their own long tail), L is
 * that cap and the mean staleness is 1 + num_warmup_batches, whatever the lengths. The approach (staleness from
 * utilisation, batch size, queue capacity and rollout concurrency) is the one of
 * https://www.appliedcompute.com/research/staleness-in-fully-async-rl; this is our derivation.
 */

/** Little's law: mean worst staleness (versions) from the time-averaged groups in the system and the batch. */
export function littleStaleness(meanGroupsInSystem: number, trainBatchSize: number): number {
  if (!(trainBatchSize > 0)) throw new Error(`train_batch_size must be > 0, got ${trainBatchSize}`);
  if (!(meanGroupsInSystem >= 0))
    throw new Error(`groups in the system must be ≥ 0, got ${meanGroupsInSystem}`);
  return meanGroupsInSystem / trainBatchSize;
}

/** The cap-bound case from inputs alone: separate_async with its active-prompt cap full. */
export function capBoundStaleness(numWarmupBatches: number): number {
  if (!(numWarmupBatches >= 0)) throw new Error(`num_warmup_batches must be ≥ 0, got ${numWarmupBatches}`);
  return 1 + numWarmupBatches;
}
