/**
 * How a step trains on rollouts, whatever source they came from, in Agent Lightning's `_train_step` order on core's
 * trainer pipeline (core/pipeline, the code the page and `lab analyze` run): rows, is_drop removal, trimming and
 * balance_batch (objective.ts `buildStepRows`) → the trainer recomputes `old_log_prob` on its own engine (verl
 * `_compute_old_log_prob`; or takes the rollout's with `rollout_correction.bypass_mode`) → reference log-probs
 * when a KL loss is on → rollout correction and advantages (`computeAdvantages`) → `ppo_epochs` × the pipeline's
 * mini-batches (`ppoMiniBatches`), each one optimizer step over micro-batches whose gradients accumulate; each
 * micro-batch's ∂L/∂logπ is core's `microBatchGradient` (the mini-batch's global batch info) at that micro-batch's
 * own forward pass (the ratio needs logπ at the current parameters) → AdamW with the step's learning rate and
 * global-norm clip. Each phase is timed by the caller's `phase` hook.
 */
import { microBatchGradient, ppoMiniBatches, sftGradient, trainerEntropy } from '../core/pipeline';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { Rollout } from '../core/trace/types';
import { mismatchStats } from '../engine/onnx/mismatch';
import type { PolicyEngine } from '../engine/policy/types';
import type { TrainConfig } from './config';
import { gatherTokens, layoutRows, microBatches, type RowTokens, scatterWeights } from './layout';
import { ActorMetrics, type Advantages, buildStepRows, computeAdvantages, type StepRows } from './objective';
import { hashSeed, permutation } from './rng';
import { tick } from './tick';

/** The phases a step is timed in (`timing_s/<name>`, the timeline). */
export const PHASE_NAMES = [
  'gen',
  'pause',
  'vocab_mismatch',
  'old_log_prob',
  'ref',
  'adv',
  'update_actor',
  'update_weights',
  'resume',
  'validate',
  'save_checkpoint',
] as const;
export type PhaseName = (typeof PHASE_NAMES)[number];

/** Times `f` as phase `name` (the run loop records it for the timeline and timing_s/<name>). */
export type PhaseHook = <R>(name: PhaseName, f: () => Promise<R>) => Promise<R>;

export const untimed: PhaseHook = (_name, f) => f();

/** verl's learning-rate schedule: linear warmup, then constant or cosine to min_lr_ratio (per training step). */
export function learningRate(cfg: TrainConfig, step: number): number {
  const o = cfg.actor_rollout_ref.actor.optim;
  const total = Math.max(1, cfg.trainer.total_training_steps);
  const warmup = o.lr_warmup_steps >= 0 ? o.lr_warmup_steps : Math.floor(o.lr_warmup_steps_ratio * total);
  // `step` counts from 1; verl's scheduler is zero-indexed at the first update
  const s = step - 1;
  if (s < warmup) return (o.lr * s) / Math.max(1, warmup);
  if (o.lr_scheduler_type === 'constant') return o.lr;
  const progress = (s - warmup) / Math.max(1, total - warmup);
  const cos = 0.5 * (1 + Math.cos(Math.PI * 2 * 0.5 * progress));
  return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * cos);
}

export interface TrainerEngines {
  policy: PolicyEngine;
  /** the frozen initial policy, for actor.use_kl_loss */
  reference: PolicyEngine | null;
  tokenizer: ChatTokenizer;
}

/** What one update produced: the rows, per-token arrays (kept traces show them) and the metrics. */
export interface StepOutcome {
  rows: StepRows;
  /** per response token of rows.batch */
  oldLogProbs: Float32Array;
  entropy: Float32Array;
  rolloutLogProbs: Float32Array | null;
  adv: Advantages | null;
  metrics: Record<string, number>;
  /** why no update happened (an empty batch after trimming), else null */
  skipped: string | null;
  /** real tokens (prompt + response) pushed through the update, all epochs */
  trainTokens: number;
}

/** Per response token log-probs and entropies of `rows`, in micro-batches on `engine`. */
export async function rowLogProbs(
  engine: PolicyEngine,
  src: RowTokens,
  rows: ArrayLike<number>,
  microRows: number,
  temperature: number,
): Promise<{ logProbs: Float32Array; entropy: Float32Array }> {
  const n = src.offsets[src.nRows];
  const logProbs = new Float32Array(n);
  const entropy = new Float32Array(n);
  for (const mb of microBatches(src, rows, microRows)) {
    const lay = layoutRows(src, mb, { contextLength: engine.config.contextLength, temperature });
    const r = await engine.logProbs(lay.batch);
    const lp = gatherTokens(r.logProbs, lay);
    const en = gatherTokens(r.entropy, lay);
    let at = 0;
    for (const row of mb) {
      const a = src.offsets[row];
      const e = src.offsets[row + 1];
      logProbs.set(lp.subarray(at, at + e - a), a);
      entropy.set(en.subarray(at, at + e - a), a);
      at += e - a;
    }
  }
  return { logProbs, entropy };
}

/** Real tokens (prompt + response) of some rows. */
function rowTokens(src: RowTokens, rows: ArrayLike<number>): number {
  let n = 0;
  for (let k = 0; k < rows.length; k++) {
    const r = rows[k];
    n += src.promptOffsets[r + 1] - src.promptOffsets[r] + src.offsets[r + 1] - src.offsets[r];
  }
  return n;
}

/** One RL update on finished rollouts (step counts from 1). */
export async function trainOnRollouts(
  eng: TrainerEngines,
  cfg: TrainConfig,
  rollouts: Rollout[],
  step: number,
  phase: PhaseHook = untimed,
): Promise<StepOutcome> {
  const seed = cfg.lab.seed;
  const rows = buildStepRows(rollouts, cfg, {
    tokenizer: eng.tokenizer,
    trimSeed: hashSeed(seed, 'trim', step),
  });
  const tb = rows.trainer;
  const batch = rows.batch;
  const metrics: Record<string, number> = { ...rows.metrics };
  const n = batch.offsets[batch.nRows];
  const empty = {
    rows,
    oldLogProbs: new Float32Array(n),
    entropy: new Float32Array(n),
    rolloutLogProbs: null,
    adv: null,
    metrics,
    trainTokens: 0,
  };
  if (tb.skipped) return { ...empty, skipped: 'no trainable rows after dropping and trimming' };
  const actor = cfg.actor_rollout_ref.actor;
  const temperature = cfg.actor_rollout_ref.rollout.temperature;
  const micro = actor.ppo_micro_batch_size_per_gpu;
  const all = Array.from({ length: batch.nRows }, (_, i) => i);
  // Rollout log-probs exist only when every row kept them (upstream drops rollout_log_probs otherwise).
  const rolloutLogProbs = batch.responseLogProbs;
  let oldLogProbs: Float32Array;
  let entropy: Float32Array;
  if (cfg.algorithm.rollout_correction.bypass_mode) {
    if (!rolloutLogProbs) throw new Error('bypass_mode requires rollout_log_probs in batch');
    for (let t = 0; t < n; t++)
      if (batch.mask[t] && !Number.isFinite(rolloutLogProbs[t]))
        throw new Error('bypass_mode requires finite rollout_log_probs everywhere');
    oldLogProbs = rolloutLogProbs;
    entropy = (await phase('old_log_prob', () => rowLogProbs(eng.policy, batch, all, micro, temperature)))
      .entropy;
  } else {
    const r = await phase('old_log_prob', () => rowLogProbs(eng.policy, batch, all, micro, temperature));
    oldLogProbs = r.logProbs;
    entropy = r.entropy;
  }
  metrics['actor/entropy'] = trainerEntropy(tb, entropy, actor.loss_agg_mode);
  if (rolloutLogProbs) {
    Object.assign(metrics, probsDiffMetrics(batch.mask, oldLogProbs, rolloutLogProbs));
    Object.assign(metrics, logProbDiffMetrics(batch.mask, oldLogProbs, rolloutLogProbs));
  }
  let refLogProbs: Float32Array | null = null;
  const reference = eng.reference;
  if (actor.use_kl_loss) {
    if (!reference) throw new Error('actor.use_kl_loss needs a reference policy');
    refLogProbs = (await phase('ref', () => rowLogProbs(reference, batch, all, micro, temperature))).logProbs;
  }
  const adv = await phase('adv', async () => computeAdvantages(rows, oldLogProbs));
  Object.assign(metrics, adv.metrics);
  let trainable = 0;
  for (let t = 0; t < n; t++) trainable += adv.responseMask[t];
  metrics['lab/trainable_tokens'] = trainable;
  const lr = learningRate(cfg, step);
  eng.policy.optimizer = {
    ...eng.policy.optimizer,
    lr,
    beta1: actor.optim.betas[0],
    beta2: actor.optim.betas[1],
    weightDecay: actor.optim.weight_decay,
    maxGradNorm: actor.optim.clip_grad,
  };
  metrics['actor/lr'] = lr;
  const kl = refLogProbs
    ? {
        refLogProbs,
        coef: actor.kl_loss_coef,
        type: actor.kl_loss_type,
        aggMode: actor.loss_agg_mode,
      }
    : null;
  const plans = ppoMiniBatches(tb, adv.trainer, {
    epochs: actor.ppo_epochs,
    order: actor.shuffle
      ? (epoch) => permutation(batch.nRows, hashSeed(seed, 'minibatch', step, epoch))
      : undefined,
  });
  const actorMetrics = new ActorMetrics();
  let trainTokens = 0;
  await phase('update_actor', async () => {
    for (const plan of plans) {
      for (const mb of microBatches(batch, plan.rows, micro)) {
        const lay = layoutRows(batch, mb, { contextLength: eng.policy.config.contextLength, temperature });
        await eng.policy.accumulateGrads(lay.batch, (current) => {
          // the PPO ratio needs logπ at the current parameters: this very forward pass's log-probs
          const g = microBatchGradient(tb, adv.trainer, plan, mb, gatherTokens(current.logProbs, lay), {
            kl,
          });
          actorMetrics.micro(g);
          return scatterWeights(g.grad, lay);
        });
        trainTokens += rowTokens(batch, mb);
        await tick();
      }
      const s = await eng.policy.optimizerStep();
      actorMetrics.miniBatch(s.gradNorm, s.skipped);
    }
  });
  Object.assign(metrics, actorMetrics.metrics(kl));
  return { rows, oldLogProbs, entropy, rolloutLogProbs, adv, metrics, skipped: null, trainTokens };
}

/** verl's debug metrics (verl/utils/debug/metrics.py): |p_actor − p_rollout| and their Pearson correlation. */
export function probsDiffMetrics(
  mask: Uint8Array,
  actor: Float32Array,
  rollout: Float32Array,
): Record<string, number> {
  const diffs: number[] = [];
  const pa: number[] = [];
  const pr: number[] = [];
  for (let t = 0; t < mask.length; t++) {
    if (!mask[t]) continue;
    const a = Math.exp(actor[t]);
    const r = Math.exp(rollout[t]);
    pa.push(a);
    pr.push(r);
    diffs.push(Math.abs(a - r));
  }
  if (diffs.length === 0)
    return {
      'training/rollout_probs_diff_valid': 0,
      'training/rollout_probs_diff_max': Number.NaN,
      'training/rollout_probs_diff_mean': Number.NaN,
      'training/rollout_probs_diff_std': Number.NaN,
      'training/rollout_actor_probs_pearson_corr': Number.NaN,
    };
  const mean = (x: number[]) => x.reduce((s, v) => s + v, 0) / x.length;
  const md = mean(diffs);
  const std =
    diffs.length > 1
      ? Math.sqrt(diffs.reduce((s, v) => s + (v - md) ** 2, 0) / (diffs.length - 1))
      : Number.NaN;
  const ma = mean(pa);
  const mr = mean(pr);
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < pa.length; i++) {
    sab += (pa[i] - ma) * (pr[i] - mr);
    saa += (pa[i] - ma) ** 2;
    sbb += (pr[i] - mr) ** 2;
  }
  return {
    'training/rollout_probs_diff_valid': 1,
    'training/rollout_probs_diff_max': Math.max(...diffs),
    'training/rollout_probs_diff_mean': md,
    'training/rollout_probs_diff_std': std,
    'training/rollout_actor_probs_pearson_corr': sab / Math.sqrt(saa * sbb),
  };
}

/**
 * Our |Δ log-prob| view of the same mismatch (engine/onnx/mismatch.ts, the figures `bench:engine` prints):
 * `lab/rollout_logprob_diff/{mean,max,frac_gt_0.1}` over the response tokens the loss sees.
 */
export function logProbDiffMetrics(
  mask: Uint8Array,
  trainer: Float32Array,
  rollout: Float32Array,
): Record<string, number> {
  const e: number[] = [];
  const t: number[] = [];
  for (let i = 0; i < mask.length; i++)
    if (mask[i] && Number.isFinite(rollout[i]) && Number.isFinite(trainer[i])) {
      e.push(rollout[i]);
      t.push(trainer[i]);
    }
  if (e.length === 0) return {};
  const m = mismatchStats(e, t, 0.1);
  return {
    'lab/rollout_logprob_diff/mean': m.meanAbsLogProbDiff,
    'lab/rollout_logprob_diff/max': m.maxAbsLogProbDiff,
    'lab/rollout_logprob_diff/frac_gt_0.1': m.fracAbove,
  };
}

/**
 * One supervised step (verl's SFT loss: token-mean NLL over mask-1 tokens) on rows built exactly as RL builds
 * them, in micro-batches; returns the mean NLL and the gradient norm.
 */
export async function sftStep(
  policy: PolicyEngine,
  rows: RowTokens,
  microRows: number,
): Promise<{ loss: number; gradNorm: number; tokens: number }> {
  let tokens = 0;
  for (let t = 0; t < rows.mask.length; t++) tokens += rows.mask[t];
  if (tokens === 0) throw new Error('SFT batch has no trainable tokens');
  let loss = 0;
  const all = Array.from({ length: rows.nRows }, (_, i) => i);
  for (const mb of microBatches(rows, all, microRows)) {
    const lay = layoutRows(rows, mb, { contextLength: policy.config.contextLength });
    const view = {
      nRows: mb.length,
      offsets: new Int32Array(mb.length + 1),
      mask: new Uint8Array(lay.index.length),
    };
    let at = 0;
    mb.forEach((r, k) => {
      const a = rows.offsets[r];
      const e = rows.offsets[r + 1];
      view.mask.set(rows.mask.subarray(a, e), at);
      at += e - a;
      view.offsets[k + 1] = at;
    });
    const grads = sftGradient(view, tokens);
    const res = await policy.accumulateGrads(lay.batch, scatterWeights(grads, lay));
    loss += res.loss;
  }
  const s = await policy.optimizerStep();
  return { loss, gradNorm: s.gradNorm, tokens };
}
