/**
 * The actor update itself, as verl 0.8.0's engine runs it on the batch the trainer pipeline prepared (trainer.ts
 * steps 1–9): step 10, the only implementation of the actor's loss on that batch (the page's weights at ratio 1 are
 * its value at log π = old log π; pipeline.test.ts holds them equal).
 *
 * - `ppoMiniBatches`: `ppo_epochs` passes over the trained rows (verl `train_mini_batch` → `make_iterator`), each
 *   split into the pipeline's mini-batches in the trainer's order (`actor.shuffle: false`, verl's default), or
 *   in the order a caller draws per epoch (`shuffle: true`: upstream draws it with torch's generator seeded by
 *   `data_loader_seed`, which JavaScript cannot reproduce). Each mini-batch carries the global batch info its
 *   loss is normalised by (`batch_num_tokens`: its response-mask tokens; `global_batch_size`: its rows).
 * - `microBatchGradient`: one micro-batch of a mini-batch (verl `forward_backward_batch` splits a mini-batch into
 *   micro-batches and backpropagates each): the policy loss with the MINI-batch's global info (workers/utils/
 *   losses.py `ppo_loss`), so the micro-batches' gradients add up to the mini-batch's exactly, plus the optional
 *   KL loss (`kl_penalty` aggregated with `loss_agg_mode` and the same global info, × `kl_loss_coef`).
 * - `trainerEntropy`: verl's `actor/entropy` (`agg_loss` of the old-log-prob pass's entropies with `loss_agg_mode`).
 * - `sftGradient`: verl's `sft_loss` (−Σ m·logπ / batch_num_tokens), the SFT warm start's loss.
 *
 * Gradients are ∂L/∂logπ of the loss L the actor minimises (core's sign convention, see sign.ts).
 */
import { aggLoss, getAggMode, rowTokenCounts } from '../algos/aggLoss';
import { klPenalty } from '../algos/kl';
import { type PolicyGradient, policyLossGradient } from '../algos/policyLoss';
import type { ResponseRows } from '../batch/types';
import { advantagesFor, miniBatchRanges, type TrainerAdvantages, type TrainerBatch } from './trainer';

/** One PPO mini-batch of one epoch: its rows and the global batch info verl 0.8.0 normalises its loss by. */
export interface MiniBatchPlan {
  epoch: number;
  /** position within the epoch */
  index: number;
  /** trained rows (indices into `tb.batch`), in the order the epoch visits them */
  rows: Int32Array;
  /** `batch_num_tokens`: response-mask tokens of the mini-batch (after rejection sampling) */
  batchNumTokens: number;
  /** `global_batch_size`: rows of the mini-batch */
  globalBatchSize: number;
}

function checkPermutation(order: ArrayLike<number>, n: number, epoch: number): void {
  if (order.length !== n)
    throw new Error(`epoch ${epoch}: the mini-batch order has ${order.length} rows, the batch ${n}`);
  const seen = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const r = order[i];
    if (!(Number.isInteger(r) && r >= 0 && r < n) || seen[r])
      throw new Error(`epoch ${epoch}: the mini-batch order is not a permutation of the ${n} trained rows`);
    seen[r] = 1;
  }
}

/**
 * The mini-batches of `epochs` PPO epochs (verl `actor.ppo_epochs`) over the trained rows. Without `order`, every
 * epoch visits the pipeline's mini-batches (consecutive rows of the trainer's order); with it, epoch e's rows are
 * `order(e)` (a permutation of the trained rows) cut into mini-batches of the same size.
 */
export function ppoMiniBatches(
  tb: TrainerBatch,
  adv: TrainerAdvantages,
  opts: { epochs?: number; order?: (epoch: number) => ArrayLike<number> } = {},
): MiniBatchPlan[] {
  const epochs = opts.epochs ?? 1;
  if (!(Number.isInteger(epochs) && epochs >= 1))
    throw new Error(`ppo_epochs must be an integer ≥ 1, got ${epochs}`);
  const n = tb.batch.nRows;
  const counts = rowTokenCounts(adv.rows);
  const size = tb.options.ppoMiniBatchSize ?? Math.max(1, n);
  const out: MiniBatchPlan[] = [];
  for (let epoch = 0; epoch < epochs; epoch++) {
    let chunks: Int32Array[];
    if (opts.order) {
      const order = opts.order(epoch);
      checkPermutation(order, n, epoch);
      chunks = [];
      for (let s = 0; s < n; s += size) chunks.push(Int32Array.from(Array.from(order).slice(s, s + size)));
    } else chunks = miniBatchRanges(tb).map(([a, b]) => Int32Array.from({ length: b - a }, (_, i) => a + i));
    chunks.forEach((rows, index) => {
      let tokens = 0;
      for (const r of rows) tokens += counts[r];
      out.push({ epoch, index, rows, batchNumTokens: tokens, globalBatchSize: rows.length });
    });
  }
  return out;
}

export interface KlLossOptions {
  /** the reference policy's log-probs per trained token (aligned with `tb.batch`) */
  refLogProbs: Float32Array;
  /** actor.kl_loss_coef */
  coef: number;
  /** actor.kl_loss_type (a core KL penalty name, `+` variants included) */
  type: string;
  /** actor.loss_agg_mode: the KL term is aggregated with it even under per_rollout_mean (as ppo_loss does) */
  aggMode: string;
}

export interface MicroBatchGradient {
  /** this micro-batch's share of the mini-batch's policy loss (verl sums the shares: `actor/pg_loss`) */
  pgLoss: number;
  /** its share of the KL loss (0 without one; `actor/kl_loss`) */
  klLoss: number;
  /** ∂L/∂logπ per token of the micro-batch's rows, concatenated in the order given: policy + coef·KL term */
  grad: Float32Array;
  /** masked means over the micro-batch's tokens (verl averages them over micro-batches) */
  pgClipfrac: number;
  ppoKl: number;
  pgClipfracLower: number;
  /** response-mask tokens in the micro-batch */
  tokens: number;
}

/**
 * One micro-batch (`rows`, a subset of `plan.rows`, in any order) of a mini-batch: the loss with the mini-batch's
 * global batch info, and ∂L/∂logπ per token given the current policy's log-probs `logProbs` of those rows'
 * response tokens (concatenated in `rows` order). Summed over a partition of the mini-batch, the gradients are
 * `miniBatchGradient`'s and the losses its loss.
 */
export function microBatchGradient(
  tb: TrainerBatch,
  adv: TrainerAdvantages,
  plan: MiniBatchPlan,
  rows: ArrayLike<number>,
  logProbs: Float32Array,
  opts: { lossMode?: string; kl?: KlLossOptions | null } = {},
): MicroBatchGradient {
  const o = tb.options;
  const lossMode = opts.lossMode ?? o.lossMode;
  const inPlan = new Set(plan.rows);
  const off = adv.rows.offsets;
  const offsets = new Int32Array(rows.length + 1);
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    if (!inPlan.has(r)) throw new Error(`row ${r} is not in mini-batch ${plan.index} of epoch ${plan.epoch}`);
    offsets[k + 1] = offsets[k] + off[r + 1] - off[r];
  }
  const n = offsets[rows.length];
  if (logProbs.length !== n)
    throw new Error(`logProbs has ${logProbs.length} values but the micro-batch holds ${n} tokens`);
  const gather = <A extends Float32Array | Uint8Array>(src: A, make: (m: number) => A): A => {
    const out = make(n);
    for (let k = 0; k < rows.length; k++) out.set(src.subarray(off[rows[k]], off[rows[k] + 1]), offsets[k]);
    return out;
  };
  const f32 = (m: number) => new Float32Array(m);
  const micro: ResponseRows = {
    nRows: rows.length,
    offsets,
    mask: gather(adv.rows.mask, (m) => new Uint8Array(m)),
  };
  const rowCounts = rowTokenCounts(micro);
  const global = {
    dpSize: 1,
    batchNumTokens: plan.batchNumTokens,
    globalBatchSize: plan.globalBatchSize,
    lossScaleFactor: o.lossScaleFactor,
    paddedWidth: o.maxResponseLength,
  };
  const g = policyLossGradient(
    {
      rows: micro,
      oldLogProb: gather(adv.oldLogProbs, f32),
      logProb: logProbs,
      advantages: gather(advantagesFor(adv, lossMode), f32),
      advantagesDType: adv.dtype,
      rolloutIsWeights: adv.rolloutIsWeights ? gather(adv.rolloutIsWeights, f32) : null,
    },
    {
      lossMode,
      // dro aggregates like vanilla; its β acts once logπ moves away from logπ_old
      policyLoss: o.policyLossMode === 'dro' ? 'dro' : 'vanilla',
      droBeta: o.droBeta,
      stack: o.referenceStack,
      clipRatio: o.clipRatio,
      clipRatioLow: o.clipRatioLow,
      clipRatioHigh: o.clipRatioHigh,
      clipRatioC: o.clipRatioC,
      ...global,
    },
  );
  let klLoss = 0;
  const kl = opts.kl;
  if (kl) {
    const ref = gather(kl.refLogProbs, f32);
    const pen = klPenalty(logProbs, ref, kl.type);
    const coef = getAggMode(kl.aggMode).rowCoefficients(micro, { ...global, rowCounts });
    klLoss = aggLoss(micro, pen.kl, kl.aggMode, { ...global, rowCounts });
    for (let k = 0; k < rows.length; k++)
      for (let t = offsets[k]; t < offsets[k + 1]; t++)
        if (micro.mask[t]) g.grad[t] += kl.coef * coef[k] * pen.gradLogprob[t];
  }
  let tokens = 0;
  for (let k = 0; k < rowCounts.length; k++) tokens += rowCounts[k];
  return {
    pgLoss: g.loss,
    klLoss,
    grad: g.grad,
    pgClipfrac: g.pgClipfrac,
    ppoKl: g.ppoKl,
    pgClipfracLower: g.pgClipfracLower,
    tokens,
  };
}

/**
 * A whole mini-batch (`miniBatch`, an index into the pipeline's mini-batches of one epoch) as one micro-batch: its
 * loss and ∂L/∂logπ per token given the current log-probs of its tokens (`logProbs`, in trainer order), for the
 * options' loss mode or `lossMode`.
 */
export function miniBatchGradient(
  tb: TrainerBatch,
  adv: TrainerAdvantages,
  miniBatch: number,
  logProbs: Float32Array,
  lossMode: string = tb.options.lossMode,
): PolicyGradient & { rows: [number, number] } {
  const plan = ppoMiniBatches(tb, adv)[miniBatch];
  if (!plan) throw new Error(`mini-batch ${miniBatch} does not exist (there are ${tb.nMiniBatches})`);
  const g = microBatchGradient(tb, adv, plan, plan.rows, logProbs, { lossMode });
  const a = plan.rows[0];
  return {
    loss: g.pgLoss,
    grad: g.grad,
    pgClipfrac: g.pgClipfrac,
    ppoKl: g.ppoKl,
    pgClipfracLower: g.pgClipfracLower,
    rows: [a, a + plan.rows.length],
  };
}

/**
 * verl's `actor/entropy` (ray_trainer `_compute_old_log_prob`): `agg_loss(entropys, response_mask, loss_agg_mode,
 * loss_scale_factor)` over the trained batch, the entropies of the old-log-prob pass per trained token. (Agent
 * Lightning's `_train_step` drops the entropies without logging them; verl's own trainer logs this.)
 */
export function trainerEntropy(tb: TrainerBatch, entropy: Float32Array, aggMode: string): number {
  const b = tb.batch;
  if (entropy.length !== b.offsets[b.nRows])
    throw new Error(
      `entropy has ${entropy.length} values but the trained rows hold ${b.offsets[b.nRows]} tokens`,
    );
  if (b.nRows === 0) return Number.NaN;
  return aggLoss(b, entropy, aggMode, {
    lossScaleFactor: tb.options.lossScaleFactor,
    paddedWidth: tb.options.maxResponseLength,
  });
}

/**
 * verl 0.8.0 `sft_loss` (workers/utils/losses.py): L = −Σ m·logπ / batch_num_tokens · dp, so ∂L/∂logπ = −dp/N on
 * every trainable token of `rows` (N = the trainable tokens of the whole batch the rows belong to).
 */
export function sftGradient(rows: ResponseRows, batchNumTokens: number, dpSize = 1): Float32Array {
  if (!(batchNumTokens > 0)) throw new Error(`batch_num_tokens must be positive, got ${batchNumTokens}`);
  const n = rows.offsets[rows.nRows];
  const g = new Float32Array(n);
  for (let t = 0; t < n; t++) if (rows.mask[t]) g[t] = -dpSize / batchNumTokens;
  return g;
}
