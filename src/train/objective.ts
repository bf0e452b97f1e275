/**
 * The training loop's side of core's trainer pipeline (core/pipeline): the trainer, the page and `lab analyze`
 * answer "what does the trainer do with these rollouts" with the same code. This module holds only what the
 * loop adds around it:
 *
 * - `trainerOptions`: THE mapping from TrainConfig (upstream keys) onto core's `TrainerOptions`;
 * - `buildStepRows` / `computeAdvantages`: core's steps 1–4 (`buildRows`, `prepareTrainerBatch`: rows, is_drop
 *   removal, trimming, balance_batch) and 5–9 (`computeTrainerAdvantages`: rollout correction, advantages in the
 *   reward dtype, per_rollout_mean normalisation) with verl's and Agent Lightning's data metrics
 *   (`trainerDataMetrics`), in the shapes the loop and its kept traces use;
 * - `ActorMetrics`: the actor's metrics under verl's names, combined over micro- and mini-batches as verl does;
 * - the merge rate of validation rollouts and the trainer's log-probs written onto a kept trace.
 *
 * The update's per-micro-batch loss is core's `microBatchGradient` (step.ts calls it); the engine layout and the
 * one sign flip are layout.ts.
 */
import type { BuildResult } from '../core/aggregate/buildTrainingBatch';
import type { MergeFailureKind } from '../core/aggregate/mergeFailure';
import { listAdvEstimators, traceUnavailable } from '../core/algos/advantage';
import { forEachCallToken } from '../core/batch/callTokens';
import type { TrainingBatch } from '../core/batch/types';
import {
  advantagesFor,
  buildRows,
  computeTrainerAdvantages,
  type MicroBatchGradient,
  prepareTrainerBatch,
  resolveTrainerOptions,
  settingsOf,
  TRAINER_OPTIONS,
  type TrainerAdvantages,
  type TrainerBatch,
  type TrainerOptions,
  trainerDataMetrics,
} from '../core/pipeline';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { Rollout } from '../core/trace/types';
import { getPath, type TrainConfig } from './config';

/** Estimators a training run can use: every registered one whose inputs a run has (not ReMax's greedy baselines). */
export function objectiveEstimators(): string[] {
  return listAdvEstimators()
    .filter((e) => traceUnavailable(e) === null)
    .map((e) => e.name);
}

export type { TrainingBatch };

/**
 * TrainConfig → core's TrainerOptions: the one place the run's upstream keys meet the pipeline's. Every
 * analysis setting the run also has takes the run's value under the same key (core's config table); the two
 * the run has no key for are its own: the mini-batch is `ppo_mini_batch_size × rollout.n` rows (as Agent
 * Lightning and verl count it) and the trimming seed is the step's. Core resolves the rest as upstream does
 * (the level's sample-building lengths, the loss mode of loss_agg_mode + policy_loss.loss_mode, null clip
 * ratios).
 */
export function trainerOptions(cfg: TrainConfig, trimSeed = 0): TrainerOptions {
  const partial: Record<string, unknown> = {};
  for (const o of TRAINER_OPTIONS) if (o.field.scopes.includes('run')) partial[o.name] = getPath(cfg, o.key);
  partial.ppoMiniBatchSize =
    cfg.actor_rollout_ref.actor.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n;
  partial.trimSeed = trimSeed % 2 ** 31;
  return resolveTrainerOptions(partial as Partial<TrainerOptions>);
}

/** The rows a step trains on (core's steps 1–4), plus how they were selected. */
export interface StepRows {
  build: BuildResult;
  /** the trained rows (is_drop removed, trimmed), in the trainer's order (after balance_batch) */
  batch: TrainingBatch;
  /** per trained row: its index in build.batch */
  kept: Int32Array;
  /** per trained row: 1 when the row kept its engine log-probs */
  rowHasLogProbs: Uint8Array;
  metrics: Record<string, number>;
  mergeFailuresByKind: Record<MergeFailureKind, number>;
  /** core's trainer batch: options, row status, mini-batch of each row */
  trainer: TrainerBatch;
}

/** Rollouts → the rows one step trains on, with core's pipeline (steps 1–4) under the run's options. */
export function buildStepRows(
  rollouts: Rollout[],
  cfg: TrainConfig,
  opts: { tokenizer?: ChatTokenizer; trimSeed: number },
): StepRows {
  const o = trainerOptions(cfg, opts.trimSeed);
  const build = buildRows(rollouts, o, o.tokenSource === 'retokenize' ? opts.tokenizer : undefined);
  const tb = prepareTrainerBatch(rollouts, build, o);
  const byKind: Record<MergeFailureKind, number> = {
    template: 0,
    retokenization: 0,
    truncation_or_summarization: 0,
    other: 0,
  };
  for (const f of build.mergeFailures) byKind[f.kind]++;
  return {
    build,
    batch: tb.batch,
    kept: tb.sourceRow,
    rowHasLogProbs: Uint8Array.from(tb.sourceRow, (r) => build.rowHasLogProbs[r]),
    metrics: { ...build.metrics, ...tb.counters },
    mergeFailuresByKind: byKind,
    trainer: tb,
  };
}

/** Core's steps 5–9 on a step's rows, in the shapes the loop keeps. */
export interface Advantages {
  /** per token: the estimator's advantages (before per_rollout_mean normalisation) */
  advantages: Float32Array;
  returns: Float32Array;
  /** per token: what the PPO loss sees (normalised by rollout for per_rollout_mean) */
  lossAdvantages: Float32Array;
  /** truncated IS weights (rollout correction), or null */
  rolloutIsWeights: Float32Array | null;
  /** the response mask after rejection sampling */
  responseMask: Uint8Array;
  /** rollout correction, rollout-level advantage and data metrics */
  metrics: Record<string, number>;
  /** core's result (the update reads it) */
  trainer: TrainerAdvantages;
}

/** Advantages of a step's rows given the trainer's old log-probs (per trained token, `rows.batch` order). */
export function computeAdvantages(rows: StepRows, oldLogProbs: Float32Array): Advantages {
  const adv = computeTrainerAdvantages(rows.trainer, { oldLogProbs });
  return {
    advantages: adv.advantages,
    returns: adv.returns,
    lossAdvantages: advantagesFor(adv, rows.trainer.options.lossMode),
    rolloutIsWeights: adv.rolloutIsWeights,
    responseMask: adv.responseMask,
    metrics: { ...adv.metrics, ...trainerDataMetrics(rows.trainer, adv) },
    trainer: adv,
  };
}

/**
 * The actor's metrics over one update, combined as verl 0.8.0 does (engine_workers `train_mini_batch` and
 * losses.py `ppo_loss`, then `reduce_metrics`): within a mini-batch, `pg_loss` and `kl_loss` are the sums of
 * the micro-batches' shares (the global batch info is set) and `pg_clipfrac`, `ppo_kl`, `pg_clipfrac_lower` the
 * mean of the micro-batches' masked means; over mini-batches (and epochs) every metric, `grad_norm` included, is
 * the mean.
 */
export class ActorMetrics {
  private mini = { pgLoss: 0, klLoss: 0, clip: 0, kl: 0, lower: 0, micro: 0 };
  private readonly done: { pgLoss: number; klLoss: number; clip: number; kl: number; lower: number }[] = [];
  private readonly gradNorms: number[] = [];
  private skipped = 0;

  micro(g: MicroBatchGradient): void {
    const m = this.mini;
    m.pgLoss += g.pgLoss;
    m.klLoss += g.klLoss;
    m.clip += g.pgClipfrac;
    m.kl += g.ppoKl;
    m.lower += g.pgClipfracLower;
    m.micro++;
  }

  /** Closes a mini-batch with its optimizer step's gradient norm (skipped: non-finite, no update). */
  miniBatch(gradNorm: number, skipped: boolean): void {
    const m = this.mini;
    const k = Math.max(1, m.micro);
    this.done.push({
      pgLoss: m.pgLoss,
      klLoss: m.klLoss,
      clip: m.clip / k,
      kl: m.kl / k,
      lower: m.lower / k,
    });
    this.gradNorms.push(gradNorm);
    if (skipped) this.skipped++;
    this.mini = { pgLoss: 0, klLoss: 0, clip: 0, kl: 0, lower: 0, micro: 0 };
  }

  metrics(kl: { coef: number } | null): Record<string, number> {
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
    const of = (k: 'pgLoss' | 'klLoss' | 'clip' | 'kl' | 'lower') => mean(this.done.map((d) => d[k]));
    const m: Record<string, number> = {
      'actor/pg_loss': of('pgLoss'),
      'actor/pg_clipfrac': of('clip'),
      'actor/ppo_kl': of('kl'),
      'actor/pg_clipfrac_lower': of('lower'),
      'actor/grad_norm': mean(this.gradNorms),
      'actor/n_updates': this.done.length,
      'actor/n_skipped_updates': this.skipped,
    };
    if (kl) {
      m['actor/kl_loss'] = of('klLoss');
      m['actor/kl_coef'] = kl.coef;
    }
    return m;
  }
}

/** Share of rollouts (with a trace) whose calls merged into one row at trajectory level (1 − unmerged / traced). */
export function mergeRateOf(rollouts: Rollout[], cfg: TrainConfig): number {
  const o = resolveTrainerOptions({
    ...settingsOf(trainerOptions(cfg)),
    traceAggregatorLevel: 'trajectory',
    tokenSource: 'engine',
  });
  try {
    const b = buildRows(rollouts, o);
    const traced = b.metrics['training/n_rollouts_w_trace'];
    return traced ? 1 - (b.metrics['training/n_unmerged_rollouts'] ?? 0) / traced : Number.NaN;
  } catch {
    // no rows at all (every rollout failed before its first call)
    return Number.NaN;
  }
}

/**
 * The step's rollouts with the trainer's log-probs and entropies written onto each call's response ids (engine
 * token source: a row's mask-1 tokens are its calls' response ids in order; a token the row does not hold —
 * cut by the response limit, or in a dropped row — gets NaN).
 */
export function annotateTrainerLogProbs(
  rollouts: Rollout[],
  rows: StepRows,
  oldLogProbs: Float32Array,
  entropy: Float32Array,
): Rollout[] {
  const b = rows.batch;
  const out = rollouts.map((r) => ({ ...r, calls: r.calls.map((c) => ({ ...c })) }));
  forEachCallToken(b, out, (call, ids, j, t) => {
    if (!call.trainerLogProbs) {
      call.trainerLogProbs = new Float32Array(ids.length).fill(Number.NaN);
      call.trainerEntropy = new Float32Array(ids.length).fill(Number.NaN);
    }
    if (j >= ids.length || ids[j] !== b.responseIds[t]) return;
    call.trainerLogProbs[j] = oldLogProbs[t];
    (call.trainerEntropy as Float32Array)[j] = entropy[t];
  });
  return out;
}
