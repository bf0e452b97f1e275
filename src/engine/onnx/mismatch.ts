/**
 * The engine/trainer mismatch of one batch of sampled tokens: the rollout engine's log-probs against the
 * trainer's log-probs of the same tokens. |Δ log-prob| statistics, and verl's `training/rollout_probs_diff_*`
 * (verl 0.8.0 `compute_rollout_probs_diff`-style: |exp(rollout_log_prob) − exp(old_log_prob)| over response
 * tokens; mean, max, and std as torch.std computes it: with n − 1).
 */
export interface MismatchStats {
  tokens: number;
  meanAbsLogProbDiff: number;
  maxAbsLogProbDiff: number;
  /** fraction of tokens with |Δ log-prob| > threshold */
  fracAbove: number;
  threshold: number;
  probsDiffMean: number;
  probsDiffMax: number;
  probsDiffStd: number;
}

export function mismatchStats(
  engine: ArrayLike<number>,
  trainer: ArrayLike<number>,
  threshold = 0.1,
): MismatchStats {
  if (engine.length !== trainer.length)
    throw new Error(`mismatch: ${engine.length} engine log-probs but ${trainer.length} trainer log-probs`);
  const n = engine.length;
  let sum = 0;
  let max = 0;
  let above = 0;
  let pSum = 0;
  let pSq = 0;
  let pMax = 0;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(engine[i]) || !Number.isFinite(trainer[i]))
      throw new Error(`mismatch: token ${i} has log-probs ${engine[i]} (engine) and ${trainer[i]} (trainer)`);
    const d = Math.abs(engine[i] - trainer[i]);
    sum += d;
    if (d > max) max = d;
    if (d > threshold) above++;
    const pd = Math.abs(Math.exp(engine[i]) - Math.exp(trainer[i]));
    pSum += pd;
    pSq += pd * pd;
    if (pd > pMax) pMax = pd;
  }
  const pMean = n ? pSum / n : 0;
  return {
    tokens: n,
    meanAbsLogProbDiff: n ? sum / n : 0,
    maxAbsLogProbDiff: max,
    fracAbove: n ? above / n : 0,
    threshold,
    probsDiffMean: pMean,
    probsDiffMax: pMax,
    probsDiffStd: n > 1 ? Math.sqrt(Math.max(0, (pSq - n * pMean * pMean) / (n - 1))) : 0,
  };
}
