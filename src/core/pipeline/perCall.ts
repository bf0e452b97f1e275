/**
 * Per call of one rollout: its trainable and observation tokens, mean advantage and total effective weight under
 * one loss mode (the page's per-call table and `lab analyze`). A call's tokens are its response tokens plus the
 * observation tokens its prompt added to a merged row.
 */
import type { TrainingBatch } from '../batch/types';
import type { TrainerView } from './trainer';

/** What the per-call sums read: a trainer view's rows with one mode's per-token weights. */
export interface CallWeightsInput {
  batch: TrainingBatch;
  /** per row: position in the trainer's order, −1 when not trained */
  trainPosition: Int32Array;
  /** per token: the mask as trained */
  responseMask: Uint8Array;
  /** per token: ∂L/∂logπ under the mode */
  weights: Float32Array;
  /** per token: the estimator's advantages */
  advantages: Float32Array;
}

/** A view's input for one mode (default: the selected one). */
export function callWeightsInput(view: TrainerView, mode = view.selected.name): CallWeightsInput {
  const m = view.modes.find((x) => x.name === mode);
  if (!m) throw new Error(`unknown loss mode '${mode}'`);
  return {
    batch: view.batch,
    trainPosition: view.trainPosition,
    responseMask: view.responseMask,
    weights: m.weights,
    advantages: view.advantages,
  };
}

export interface CallWeights {
  /** Σ ∂L/∂logπ over the call's trained tokens */
  weight: Float64Array;
  /** mean estimator advantage over those tokens; NaN without any */
  advantage: Float64Array;
  /** trained tokens (mask 1 in a trained row) */
  tokens: Int32Array;
  /** observation tokens (mask 0) */
  observations: Int32Array;
  /** tokens in rows the trainer does not train on (is_drop or trimmed) */
  untrained: Int32Array;
}

/** The rows of each source rollout, in row order. */
export function rowsOfRollouts(view: { batch: TrainingBatch }, nRollouts: number): number[][] {
  const out: number[][] = Array.from({ length: nRollouts }, () => []);
  const b = view.batch;
  for (let r = 0; r < b.nRows; r++) {
    const ro = b.rowRollout[r];
    if (ro >= 0 && ro < nRollouts) out[ro].push(r);
  }
  return out;
}

export function callWeights(
  view: CallWeightsInput,
  rollout: number,
  nCalls: number,
  rows: readonly number[] = rowsOfRollouts(view, rollout + 1)[rollout] ?? [],
): CallWeights {
  const m = view;
  const weight = new Float64Array(nCalls);
  const advantage = new Float64Array(nCalls);
  const tokens = new Int32Array(nCalls);
  const observations = new Int32Array(nCalls);
  const untrained = new Int32Array(nCalls);
  const b = view.batch;
  for (const r of rows) {
    const trained = view.trainPosition[r] >= 0;
    for (let p = b.offsets[r]; p < b.offsets[r + 1]; p++) {
      const c = b.tokenCall[p];
      if (c < 0 || c >= nCalls) continue;
      if (!b.mask[p]) {
        observations[c]++;
        continue;
      }
      if (!trained || !view.responseMask[p]) {
        untrained[c]++;
        continue;
      }
      weight[c] += m.weights[p];
      advantage[c] += m.advantages[p];
      tokens[c]++;
    }
  }
  for (let c = 0; c < nCalls; c++) advantage[c] = tokens[c] ? advantage[c] / tokens[c] : Number.NaN;
  return { weight, advantage, tokens, observations, untrained };
}
