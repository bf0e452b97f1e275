/**
 * The train–inference mismatch over the whole vocabulary. The sampled-token views (`lab/rollout_logprob_diff/*`,
 * verl's `training/rollout_probs_diff_*` and `rollout_corr/kl`) see one token per position; when both the rollout
 * engine and the trainer give their whole next-token distribution at a position, the exact divergences are
 *
 *   KL(π_rollout ‖ π_train) = Σ_v π_r(v)·(log π_r(v) − log π_t(v))   (the expectation `rollout_corr/kl` estimates
 *                                                                   from the sampled token alone)
 *   TV(π_rollout, π_train)  = ½·Σ_v |π_r(v) − π_t(v)|                (the bias bound of rollout correction)
 *
 * and the tokens where the two disagree most are those with the largest |π_r(v) − π_t(v)|. Arithmetic is float64.
 * verl 0.8.0 / 0.9.0 have no full-vocabulary metric; the step metrics follow this project's
 * `lab/rollout_logprob_diff/{mean,max}` naming.
 */
import { topIndices } from './topIndices';
import type { ModelCall, VocabMismatch } from './trace/types';

/** Tokens kept per position where the two distributions disagree most (a tooltip's worth). */
export const VOCAB_MISMATCH_TOP_K = 5;

/** How far Σ exp(log-probs) may be from 1 before a vector is refused as not a distribution. */
const MASS_TOLERANCE = 1e-3;

export interface TokenDivergence {
  kl: number;
  tv: number;
  /** the k ids with the largest |π_r − π_t|, largest first (ties: lower id first) */
  ids: number[];
  rolloutLogProbs: number[];
  trainerLogProbs: number[];
}

function checkDistribution(lp: ArrayLike<number>, what: string): void {
  let mass = 0;
  for (let v = 0; v < lp.length; v++) {
    const x = lp[v];
    if (Number.isNaN(x) || x === Number.POSITIVE_INFINITY)
      throw new Error(`vocab mismatch: the ${what} log-prob of token ${v} is ${x}`);
    mass += Math.exp(x);
  }
  if (Math.abs(mass - 1) > MASS_TOLERANCE)
    throw new Error(
      `vocab mismatch: the ${what} log-probs are not a distribution (their probabilities sum to ${mass})`,
    );
}

/**
 * KL(π_r ‖ π_t), TV and the k most disagreeing tokens of two whole next-token distributions given as log-probs
 * over the same vocabulary. A token π_r gives no mass adds nothing to the KL; one π_t gives none while π_r
 * does makes it +∞.
 */
export function tokenDivergence(
  rollout: ArrayLike<number>,
  trainer: ArrayLike<number>,
  k = VOCAB_MISMATCH_TOP_K,
): TokenDivergence {
  if (rollout.length !== trainer.length)
    throw new Error(
      `vocab mismatch: the rollout distribution has ${rollout.length} tokens, the trainer's ${trainer.length}`,
    );
  if (rollout.length === 0) throw new Error('vocab mismatch: empty distributions');
  if (!Number.isInteger(k) || k < 1 || k > rollout.length)
    throw new Error(`vocab mismatch: k must be an integer in [1, ${rollout.length}], got ${k}`);
  checkDistribution(rollout, 'rollout');
  checkDistribution(trainer, 'trainer');
  const V = rollout.length;
  let kl = 0;
  let tv = 0;
  const diff = new Float64Array(V);
  for (let v = 0; v < V; v++) {
    const pr = Math.exp(rollout[v]);
    const pt = Math.exp(trainer[v]);
    if (pr > 0) kl += pr * (rollout[v] - trainer[v]);
    diff[v] = Math.abs(pr - pt);
    tv += diff[v];
  }
  // the k largest |Δp| (lower ids win ties)
  const ids = topIndices(diff, k);
  return {
    kl,
    tv: tv / 2,
    ids,
    rolloutLogProbs: ids.map((v) => rollout[v]),
    trainerLogProbs: ids.map((v) => trainer[v]),
  };
}

/** One call's VocabMismatch from its positions' divergences (every response position, in order). */
export function vocabMismatchOf(positions: readonly TokenDivergence[], k: number): VocabMismatch {
  const n = positions.length;
  const out: VocabMismatch = {
    kl: new Float32Array(n),
    tv: new Float32Array(n),
    k,
    ids: new Int32Array(n * k),
    rolloutLogProbs: new Float32Array(n * k),
    trainerLogProbs: new Float32Array(n * k),
  };
  positions.forEach((d, i) => {
    if (d.ids.length !== k)
      throw new Error(`vocab mismatch: position ${i} has ${d.ids.length} tokens, not k = ${k}`);
    out.kl[i] = d.kl;
    out.tv[i] = d.tv;
    out.ids.set(d.ids, i * k);
    out.rolloutLogProbs.set(d.rolloutLogProbs, i * k);
    out.trainerLogProbs.set(d.trainerLogProbs, i * k);
  });
  return out;
}

/**
 * The step metrics over every measured response token of the calls: `lab/rollout_vocab_kl/{mean,max}`,
 * `lab/rollout_vocab_tv/{mean,max}` and `lab/rollout_vocab_tokens`; none when no call was measured.
 */
export function vocabMismatchMetrics(calls: Iterable<ModelCall>): Record<string, number> {
  let n = 0;
  let klSum = 0;
  let klMax = 0;
  let tvSum = 0;
  let tvMax = 0;
  for (const c of calls) {
    const m = c.vocabMismatch;
    if (!m) continue;
    for (let i = 0; i < m.kl.length; i++) {
      n++;
      klSum += m.kl[i];
      tvSum += m.tv[i];
      klMax = Math.max(klMax, m.kl[i]);
      tvMax = Math.max(tvMax, m.tv[i]);
    }
  }
  if (n === 0) return {};
  return {
    'lab/rollout_vocab_kl/mean': klSum / n,
    'lab/rollout_vocab_kl/max': klMax,
    'lab/rollout_vocab_tv/mean': tvSum / n,
    'lab/rollout_vocab_tv/max': tvMax,
    'lab/rollout_vocab_tokens': n,
  };
}

export interface VocabMismatchSummary {
  calls: number;
  /** the step metrics' values over the trace */
  metrics: Record<string, number>;
  /** the response tokens with the largest KL, largest first */
  worst: {
    rolloutId: string;
    call: number;
    /** index among the call's response tokens */
    position: number;
    kl: number;
    tv: number;
    /** the token the two disagree on most there, with both probabilities */
    top: { id: number; rollout: number; trainer: number };
  }[];
}

/** What a trace's recorded full-vocabulary comparisons say (`lab analyze`); null when no call has one. */
export function vocabMismatchSummary(
  rollouts: readonly { rolloutId: string; calls: readonly ModelCall[] }[],
  n = 5,
): VocabMismatchSummary | null {
  const calls = rollouts.flatMap((r) => r.calls.filter((c) => c.vocabMismatch));
  if (calls.length === 0) return null;
  const all: VocabMismatchSummary['worst'] = [];
  for (const r of rollouts)
    r.calls.forEach((c, ci) => {
      const m = c.vocabMismatch;
      if (!m) return;
      for (let i = 0; i < m.kl.length; i++)
        all.push({
          rolloutId: r.rolloutId,
          call: ci,
          position: i,
          kl: m.kl[i],
          tv: m.tv[i],
          top: {
            id: m.ids[i * m.k],
            rollout: Math.exp(m.rolloutLogProbs[i * m.k]),
            trainer: Math.exp(m.trainerLogProbs[i * m.k]),
          },
        });
    });
  all.sort((a, b) => b.kl - a.kl);
  return { calls: calls.length, metrics: vocabMismatchMetrics(calls), worst: all.slice(0, n) };
}
