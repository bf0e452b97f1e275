/**
 * One policy update on rollouts read from an Agent Lightning gateway, with core's pipeline and the engine's
 * `trainStep`: rows built as Agent Lightning's RolloutAdapter builds them (`buildTrainingBatch`: level,
 * prompt/response limits, reward fill 0.0 for failed rollouts), rows marked `is_drop` removed before
 * advantages, core's effective weights (∂L/∂logπ per token at ratio 1: estimator, rollout-level flag, loss
 * mode, bf16 reward path), then ONE optimizer step with those weights (ppo_epochs 1, one mini-batch: the ratio
 * is exactly 1 at the update, so the weights at ratio 1 are the PPO gradient). Metrics carry verl's names.
 *
 * This is the minimal update the agl-cpu template needs; the full training loop (PPO epochs, mini-batches,
 * rollout correction) replaces it behind the same `RolloutSource` (aglSource.ts).
 */
import { buildTrainingBatch, type TraceAggregatorLevel } from '../core/aggregate/buildTrainingBatch';
import { effectiveWeights, type LossMode } from '../core/algos/effectiveWeights';
import type { TrainingBatch } from '../core/batch/types';
import type { Rollout } from '../core/trace/types';
import type { Batch, PolicyEngine } from '../engine/policy/types';

export interface AglUpdateOptions {
  level: TraceAggregatorLevel;
  maxPromptLength: number;
  maxResponseLength: number;
  advEstimator: string;
  normAdvByStd: boolean;
  rolloutLevel: boolean;
  /** the loss-agg mode, or 'per_rollout_mean' when that policy loss is chosen (it replaces the aggregation) */
  lossMode: LossMode;
  clipRatioLow: number;
  clipRatioHigh: number;
  padTokenId?: number;
}

/**
 * The rows of `batch` whose `isDrop` is 0, as a new CSR batch (upstream removes dropped rows first), with
 * `rowRollout` renumbered densely over the rollouts that still have rows: rollout-level advantages group by it,
 * and upstream skips rollouts that produced no rows (a failed agent, a dropped prompt) rather than failing.
 */
export function withoutDroppedRows(batch: TrainingBatch): TrainingBatch {
  const keep: number[] = [];
  for (let r = 0; r < batch.nRows; r++) if (!batch.isDrop[r]) keep.push(r);
  const dense = new Map<number, number>();
  for (const r of keep) if (!dense.has(batch.rowRollout[r])) dense.set(batch.rowRollout[r], dense.size);
  const gapless = [...dense].every(([from, to]) => from === to);
  if (keep.length === batch.nRows && gapless) return batch;
  let nTok = 0;
  let nPrompt = 0;
  for (const r of keep) {
    nTok += batch.offsets[r + 1] - batch.offsets[r];
    nPrompt += batch.promptOffsets[r + 1] - batch.promptOffsets[r];
  }
  const n = keep.length;
  const out: TrainingBatch = {
    nRows: n,
    offsets: new Int32Array(n + 1),
    mask: new Uint8Array(nTok),
    rowRollout: new Int32Array(n),
    rolloutIds: [],
    dataIds: [],
    turnIndex: new Int32Array(n),
    firstCall: new Int32Array(n),
    nCalls: new Int32Array(n),
    isDrop: new Uint8Array(n),
    promptOffsets: new Int32Array(n + 1),
    promptIds: new Int32Array(nPrompt),
    responseIds: new Int32Array(nTok),
    tokenCall: new Int32Array(nTok),
    responseLogProbs: batch.responseLogProbs ? new Float32Array(nTok) : null,
    reward: new Float32Array(n),
  };
  let t = 0;
  let p = 0;
  keep.forEach((r, i) => {
    const a = batch.offsets[r];
    const b = batch.offsets[r + 1];
    out.mask.set(batch.mask.subarray(a, b), t);
    out.responseIds.set(batch.responseIds.subarray(a, b), t);
    out.tokenCall.set(batch.tokenCall.subarray(a, b), t);
    if (out.responseLogProbs && batch.responseLogProbs)
      out.responseLogProbs.set(batch.responseLogProbs.subarray(a, b), t);
    t += b - a;
    out.offsets[i + 1] = t;
    const pa = batch.promptOffsets[r];
    const pb = batch.promptOffsets[r + 1];
    out.promptIds.set(batch.promptIds.subarray(pa, pb), p);
    p += pb - pa;
    out.promptOffsets[i + 1] = p;
    out.rowRollout[i] = dense.get(batch.rowRollout[r]) as number;
    out.rolloutIds.push(batch.rolloutIds[r]);
    out.dataIds.push(batch.dataIds[r]);
    out.turnIndex[i] = batch.turnIndex[r];
    out.firstCall[i] = batch.firstCall[r];
    out.nCalls[i] = batch.nCalls[r];
    out.reward[i] = batch.reward[r];
  });
  return out;
}

/**
 * Lays training rows out as the engine's right-padded `(B, T)` batch: row r is its prompt ids then its response
 * ids; `tokenWeights` (one per response token, CSR like `batch.mask`) land at the positions of the response
 * tokens, since `logProbs[b, t]` is log π(tokens[b, t] | tokens[b, <t]). Rows longer than `maxLen` keep their
 * first `maxLen` tokens. Returns the engine batch, the per-position weights and, per position, the CSR index of
 * the response token there (−1 elsewhere).
 */
export function layoutRows(
  batch: TrainingBatch,
  tokenWeights: Float32Array,
  maxLen: number,
): { engineBatch: Batch; weights: Float32Array; responseIndex: Int32Array; truncatedRows: number } {
  let T = 1;
  for (let r = 0; r < batch.nRows; r++) {
    const len =
      batch.promptOffsets[r + 1] - batch.promptOffsets[r] + (batch.offsets[r + 1] - batch.offsets[r]);
    T = Math.max(T, Math.min(len, maxLen));
  }
  const B = Math.max(1, batch.nRows);
  const tokens = new Uint32Array(B * T);
  const mask = new Float32Array(B * T);
  const weights = new Float32Array(B * T);
  const responseIndex = new Int32Array(B * T).fill(-1);
  let truncatedRows = 0;
  for (let r = 0; r < batch.nRows; r++) {
    const base = r * T;
    let pos = 0;
    for (let k = batch.promptOffsets[r]; k < batch.promptOffsets[r + 1] && pos < T; k++, pos++) {
      tokens[base + pos] = batch.promptIds[k];
      mask[base + pos] = 1;
    }
    for (let k = batch.offsets[r]; k < batch.offsets[r + 1]; k++, pos++) {
      if (pos >= T) {
        truncatedRows++;
        break;
      }
      tokens[base + pos] = batch.responseIds[k];
      mask[base + pos] = 1;
      weights[base + pos] = tokenWeights[k];
      responseIndex[base + pos] = k;
    }
  }
  return { engineBatch: { tokens, batchSize: B, seqLen: T, mask }, weights, responseIndex, truncatedRows };
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** Trains the engine one step on the rollouts; returns the step's metrics (verl and Agent Lightning names). */
export async function updateOnRollouts(
  engine: PolicyEngine,
  rollouts: Rollout[],
  opts: AglUpdateOptions,
): Promise<{ metrics: Record<string, number>; trained: boolean }> {
  const built = buildTrainingBatch(rollouts, {
    level: opts.level,
    maxPromptLength: opts.maxPromptLength,
    maxResponseLength: opts.maxResponseLength,
    padTokenId: opts.padTokenId ?? 0,
    rewardFillnaValue: 0,
  });
  const metrics: Record<string, number> = {};
  for (const [k, v] of Object.entries(built.metrics))
    if (typeof v === 'number' && Number.isFinite(v)) metrics[k] = v;
  metrics['harness_lab/merge_failures'] = built.mergeFailures.length;
  const batch = withoutDroppedRows(built.batch);
  metrics['harness_lab/rows_dropped'] = built.batch.nRows - batch.nRows;
  metrics['harness_lab/rows'] = batch.nRows;
  let trainable = 0;
  for (let t = 0; t < batch.mask.length; t++) trainable += batch.mask[t];
  metrics['harness_lab/trainable_tokens'] = trainable;
  const rewards = Array.from(batch.reward);
  if (batch.nRows > 0) {
    metrics['critic/score/mean'] = mean(rewards);
    metrics['critic/score/max'] = Math.max(...rewards);
    metrics['critic/score/min'] = Math.min(...rewards);
    metrics['critic/rewards/mean'] = metrics['critic/score/mean'];
    const lens: number[] = [];
    const plens: number[] = [];
    for (let r = 0; r < batch.nRows; r++) {
      lens.push(batch.offsets[r + 1] - batch.offsets[r]);
      plens.push(batch.promptOffsets[r + 1] - batch.promptOffsets[r]);
    }
    metrics['response_length/mean'] = mean(lens);
    metrics['response_length/max'] = Math.max(...lens);
    metrics['response_length/min'] = Math.min(...lens);
    metrics['prompt_length/mean'] = mean(plens);
  }
  if (batch.nRows === 0 || trainable === 0) return { metrics, trained: false };

  const eff = effectiveWeights(batch, {
    advEstimator: opts.advEstimator,
    normAdvByStd: opts.normAdvByStd,
    rolloutLevel: opts.rolloutLevel,
    lossAggMode: opts.lossMode,
    rewardDType: 'bfloat16',
    clipRatioLow: opts.clipRatioLow,
    clipRatioHigh: opts.clipRatioHigh,
  });
  const adv = eff.advantages;
  let aMin = Infinity;
  let aMax = -Infinity;
  let aSum = 0;
  let pgLoss = 0;
  for (let t = 0; t < batch.mask.length; t++) {
    pgLoss += eff.weights[t];
    if (!batch.mask[t]) continue;
    aSum += adv[t];
    aMin = Math.min(aMin, adv[t]);
    aMax = Math.max(aMax, adv[t]);
  }
  metrics['critic/advantages/mean'] = aSum / trainable;
  metrics['critic/advantages/max'] = aMax;
  metrics['critic/advantages/min'] = aMin;
  // L at ratio 1 equals Σ_t ∂L/∂logπ_t (the loss is linear in ρ there)
  metrics['actor/pg_loss'] = pgLoss;

  // trainStep minimises −Σ w·logπ, so it takes w = −∂L/∂logπ
  const neg = new Float32Array(eff.weights.length);
  for (let t = 0; t < neg.length; t++) neg[t] = -eff.weights[t];
  const { engineBatch, weights, responseIndex, truncatedRows } = layoutRows(
    batch,
    neg,
    engine.config.contextLength,
  );
  metrics['harness_lab/rows_truncated_to_context'] = truncatedRows;

  const t0 = performance.now();
  const old = await engine.logProbs(engineBatch);
  metrics['timing_s/old_log_prob'] = (performance.now() - t0) / 1000;
  if (batch.responseLogProbs) {
    const rlp = batch.responseLogProbs;
    let n = 0;
    let sum = 0;
    let max = 0;
    for (let i = 0; i < responseIndex.length; i++) {
      const k = responseIndex[i];
      if (k < 0 || !batch.mask[k] || !Number.isFinite(rlp[k])) continue;
      const d = Math.abs(Math.exp(rlp[k]) - Math.exp(old.logProbs[i]));
      sum += d;
      max = Math.max(max, d);
      n++;
    }
    if (n) {
      metrics['training/rollout_probs_diff_mean'] = sum / n;
      metrics['training/rollout_probs_diff_max'] = max;
    }
  }
  const t1 = performance.now();
  const step = await engine.trainStep(engineBatch, weights);
  metrics['timing_s/update_actor'] = (performance.now() - t1) / 1000;
  metrics['actor/grad_norm'] = step.gradNorm;
  metrics['actor/lr'] = engine.optimizer.lr;
  let eSum = 0;
  let eN = 0;
  for (let i = 0; i < responseIndex.length; i++) {
    const k = responseIndex[i];
    if (k < 0 || !batch.mask[k]) continue;
    eSum += step.entropy[i];
    eN++;
  }
  if (eN) metrics['actor/entropy'] = eSum / eN;
  return { metrics, trained: true };
}
