/**
 * Agent Lightning's rollout-level advantages (agentlightning/verl/rollout_level_advantage.py:
 * compute_rollout_level_advantage) and per-rollout normalisation (per_rollout_loss.py:
 * normalize_advantages_by_rollout).
 *
 * A rollout may produce several training rows (transition level, or unmerged trajectory segments). The
 * estimator runs once per rollout, on its FIRST row (the representative), grouped by uid; the representative's
 * first valid advantage is then broadcast to every row of the rollout, times that row's mask. Every row of a
 * rollout must share its uid and its reward sum (allclose), and the representative must have a valid token.
 * A rollout that produced no rows is not part of the batch (upstream's adapter logs and skips it): a grouping
 * that names it (e.g. by source rollout index) leaves it out. Errors name the rollout by its key (its id).
 */
import type { ResponseRows } from '../batch/types';
import { type AdvantageOptions, computeAdvantage, getAdvEstimator } from './advantage';
import { type Grouping, indexGroups } from './groups';
import { type FloatDType, rounder, UpstreamError } from './numeric';

export interface RolloutLevelInput {
  rows: ResponseRows;
  /** per-token rewards; or give `rowRewards` instead */
  tokenLevelRewards?: Float32Array;
  /**
   * per-row outcome rewards, standing for token_level_rewards with the reward on each row's last response
   * token (Agent Lightning's RolloutAdapter layout) without materialising a per-token array
   */
  rowRewards?: Float32Array;
  /** per row: uid (GRPO group) */
  uids: Grouping;
  /** per row: rollout grouping (dense ids; keys are the rollout ids used in messages) */
  rollouts: Grouping;
}

export interface RolloutLevelMetrics {
  'training/rollout_level_advantage/n_rows': number;
  'training/rollout_level_advantage/n_rollouts': number;
  'training/rollout_level_advantage/n_multi_row_rollouts': number;
  'training/rollout_level_advantage/max_rows_per_rollout': number;
}

export interface RolloutLevelResult {
  advantages: Float32Array;
  returns: Float32Array;
  /** per rollout: the advantage and return scalars that were broadcast (NaN for a rollout without rows) */
  rolloutAdvantage: Float64Array;
  rolloutReturn: Float64Array;
  metrics: RolloutLevelMetrics;
}

/** torch.allclose(a, b) with rtol 1e-5, atol 1e-8 */
export function allclose(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-8 + 1e-5 * Math.abs(b);
}

const pyRepr = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export interface RolloutLevelOptions extends AdvantageOptions {
  /** false: only the per-rollout scalars (advantages/returns arrays left empty); default true */
  broadcast?: boolean;
}

export function computeRolloutLevelAdvantage(
  estimator: string,
  input: RolloutLevelInput,
  opts: RolloutLevelOptions = {},
): RolloutLevelResult {
  const { rows, tokenLevelRewards, rowRewards, uids, rollouts } = input;
  if (!tokenLevelRewards === !rowRewards)
    throw new Error('give exactly one of tokenLevelRewards and rowRewards');
  if (rowRewards && rowRewards.length !== rows.nRows)
    throw new Error(`rowRewards has ${rowRewards.length} values but the batch has ${rows.nRows} rows`);
  if (tokenLevelRewards && tokenLevelRewards.length !== rows.offsets[rows.nRows])
    throw new Error(
      `tokenLevelRewards has ${tokenLevelRewards.length} values but the rows hold ${rows.offsets[rows.nRows]} tokens`,
    );
  const { offsets: off, mask } = rows;
  if (rollouts.group.length !== rows.nRows)
    throw new UpstreamError(
      'RuntimeError',
      `rollout_id_list length (${rollouts.group.length}) must match batch length (${rows.nRows})`,
    );
  const R = rounder(opts.dtype ?? 'float32');
  const nR = rollouts.nGroups;
  const rep = new Int32Array(nR).fill(-1);
  const rowsPer = new Int32Array(nR);
  const repSum = new Float64Array(nR);
  // Each loop over rows or tokens is a function of its own (see maskSum below).
  representatives(input, R, rep, rowsPer, repSum);
  // Rollouts without rows are not in upstream's batch at all (the adapter skipped them): leave them out here too.
  // The representative rows, in first-appearance order of their rollouts (upstream `batch[representative_indices]`).
  const present: number[] = [];
  for (let g = 0; g < nR; g++) if (rep[g] >= 0) present.push(g);
  const nP = present.length;
  const subUid: string[] = new Array(nP);
  for (let k = 0; k < nP; k++) subUid[k] = uids.keys[uids.group[rep[present[k]]]];
  const repGroups = indexGroups(subUid);
  const repCount = new Int32Array(nP);
  for (let k = 0; k < nP; k++) {
    const i = rep[present[k]];
    repCount[k] = maskSum(mask, off[i], off[i + 1]);
  }
  const repScores = new Float64Array(nP);
  for (let k = 0; k < nP; k++) repScores[k] = repSum[present[k]];
  const est = getAdvEstimator(estimator);
  let subAdvantage: Float64Array;
  let subReturn: Float64Array;
  if (est.rowScalars) {
    // Outcome estimator: its advantage is one scalar per row, so "first valid token of the representative"
    // is that scalar whenever the representative has a valid token.
    subAdvantage = est.rowScalars({ scores: repScores, groups: repGroups, lengths: () => repCount }, opts);
    for (let k = 0; k < nP; k++)
      if (repCount[k] === 0)
        throw new UpstreamError(
          'RuntimeError',
          `rollout-level advantage cannot extract advantages for empty rollout_id=${pyRepr(rollouts.keys[present[k]])}`,
        );
    subReturn = subAdvantage;
  } else {
    const subOff = new Int32Array(nP + 1);
    for (let k = 0; k < nP; k++)
      subOff[k + 1] = subOff[k] + (off[rep[present[k]] + 1] - off[rep[present[k]]]);
    const subMask = new Uint8Array(subOff[nP]);
    const subRew = new Float32Array(subOff[nP]);
    for (let k = 0; k < nP; k++) {
      const i = rep[present[k]];
      subMask.set(mask.subarray(off[i], off[i + 1]), subOff[k]);
      if (tokenLevelRewards) subRew.set(tokenLevelRewards.subarray(off[i], off[i + 1]), subOff[k]);
      else if (subOff[k + 1] > subOff[k]) subRew[subOff[k + 1] - 1] = (rowRewards as Float32Array)[i];
    }
    const sub = { nRows: nP, offsets: subOff, mask: subMask };
    const out = computeAdvantage(
      estimator,
      { rows: sub, tokenLevelRewards: subRew, groups: repGroups },
      opts,
    );
    const extract = (values: Float32Array, key: string): Float64Array => {
      const sc = new Float64Array(nP);
      for (let k = 0; k < nP; k++) {
        let first = Number.NaN;
        let found = false;
        for (let t = subOff[k]; t < subOff[k + 1]; t++) {
          if (!subMask[t]) continue;
          if (!found) {
            first = values[t];
            found = true;
          } else if (!allclose(values[t], first))
            throw new UpstreamError(
              'RuntimeError',
              `rollout-level advantage requires scalar outcome-style ${key}; got non-constant token values for rollout_id=${pyRepr(rollouts.keys[present[k]])}`,
            );
        }
        if (!found)
          throw new UpstreamError(
            'RuntimeError',
            `rollout-level advantage cannot extract ${key} for empty rollout_id=${pyRepr(rollouts.keys[present[k]])}`,
          );
        sc[k] = first;
      }
      return sc;
    };
    subAdvantage = extract(out.advantages, 'advantages');
    subReturn = out.returns === out.advantages ? subAdvantage : extract(out.returns, 'returns');
  }
  // per rollout (rollouts without rows: NaN, they have no row to broadcast to)
  const rolloutAdvantage = new Float64Array(nR).fill(Number.NaN);
  const rolloutReturn = subReturn === subAdvantage ? rolloutAdvantage : new Float64Array(nR).fill(Number.NaN);
  for (let k = 0; k < nP; k++) {
    rolloutAdvantage[present[k]] = subAdvantage[k];
    rolloutReturn[present[k]] = subReturn[k];
  }
  const broadcast = opts.broadcast ?? true;
  const advantages = new Float32Array(broadcast ? off[rows.nRows] : 0);
  // Outcome estimators return their advantages as returns: then one array serves as both (as computeAdvantage
  // does for them), which halves the per-token work.
  const sameReturns = rolloutReturn === rolloutAdvantage;
  const returns = sameReturns ? advantages : new Float32Array(broadcast ? off[rows.nRows] : 0);
  if (broadcast) {
    broadcastRows(advantages, rows, rollouts.group, rolloutAdvantage);
    if (!sameReturns) broadcastRows(returns, rows, rollouts.group, rolloutReturn);
  }
  let multi = 0;
  let maxRows = 0;
  for (const g of present) {
    if (rowsPer[g] > 1) multi++;
    if (rowsPer[g] > maxRows) maxRows = rowsPer[g];
  }
  return {
    advantages,
    returns,
    rolloutAdvantage,
    rolloutReturn,
    metrics: {
      'training/rollout_level_advantage/n_rows': rows.nRows,
      'training/rollout_level_advantage/n_rollouts': nP,
      'training/rollout_level_advantage/n_multi_row_rollouts': multi,
      'training/rollout_level_advantage/max_rows_per_rollout': maxRows,
    },
  };
}

/**
 * Per rollout: its first row (rep, -1 for none), its row count and the representative's reward sum; checks
 * that every row of a rollout has the representative's uid and reward sum.
 */
function representatives(
  input: RolloutLevelInput,
  R: (x: number) => number,
  rep: Int32Array,
  rowsPer: Int32Array,
  repSum: Float64Array,
): void {
  const { rows, tokenLevelRewards, rowRewards, uids, rollouts } = input;
  const off = rows.offsets;
  for (let i = 0; i < rows.nRows; i++) {
    const g = rollouts.group[i];
    let s: number;
    if (rowRewards) s = R(off[i + 1] > off[i] ? rowRewards[i] : 0);
    else {
      s = 0;
      for (let t = off[i]; t < off[i + 1]; t++) s += (tokenLevelRewards as Float32Array)[t];
      s = R(s);
    }
    rowsPer[g]++;
    if (rep[g] < 0) {
      rep[g] = i;
      repSum[g] = s;
      continue;
    }
    if (uids.group[i] !== uids.group[rep[g]])
      throw new UpstreamError(
        'RuntimeError',
        `rollout-level advantage found multiple uid values for rollout_id=${pyRepr(rollouts.keys[g])}`,
      );
    if (!allclose(s, repSum[g]))
      throw new UpstreamError(
        'RuntimeError',
        'rollout-level advantage requires all triplets for the same rollout_id to share the same scalar ' +
          `token_level_rewards sum; got rollout_id=${pyRepr(rollouts.keys[g])}`,
      );
  }
}

/** Per-row divisor max(1, T_rollout · numTrainedRows), stored in the advantages' dtype as upstream's tensor is. */
export function rolloutDivisors(
  rows: ResponseRows,
  rollouts: Grouping,
  numTrainedRows: number,
  dtype: FloatDType = 'float32',
  rowCounts?: Int32Array,
): Float64Array {
  if (!(numTrainedRows > 0)) throw new UpstreamError('ValueError', 'num_trained_rows must be positive');
  if (rollouts.group.length !== rows.nRows)
    throw new UpstreamError(
      'ValueError',
      `rollout_ids length (${rollouts.group.length}) must match advantages rows (${rows.nRows})`,
    );
  const R = rounder(dtype);
  const tokens = new Float64Array(rollouts.nGroups);
  const { offsets: off, mask } = rows;
  for (let i = 0; i < rows.nRows; i++) {
    const c = rowCounts ? rowCounts[i] : maskSum(mask, off[i], off[i + 1]);
    tokens[rollouts.group[i]] += R(c);
  }
  const out = new Float64Array(rows.nRows);
  for (let i = 0; i < rows.nRows; i++) out[i] = Math.max(1, R(tokens[rollouts.group[i]] * numTrainedRows));
  return out;
}

/** normalize_advantages_by_rollout: A_t / max(1, T_rollout · N), in the advantages' dtype. */
export function normalizeAdvantagesByRollout(
  rows: ResponseRows,
  advantages: Float32Array,
  rollouts: Grouping,
  numTrainedRows: number,
  dtype: FloatDType = 'float32',
): Float32Array {
  const R = rounder(dtype);
  const div = rolloutDivisors(rows, rollouts, numTrainedRows, dtype);
  const out = new Float32Array(advantages.length);
  const off = rows.offsets;
  for (let i = 0; i < rows.nRows; i++) {
    const d = div[i];
    // Storing into a Float32Array rounds exactly as Math.fround does, so float32 needs no explicit rounding.
    if (dtype === 'float32') divideRange(out, advantages, off[i], off[i + 1], d);
    else for (let t = off[i]; t < off[i + 1]; t++) out[t] = R(advantages[t] / d);
  }
  return out;
}

/** out[t] = value[group[row]] · mask[t] for every token t of every row. */
function broadcastRows(out: Float32Array, rows: ResponseRows, group: Int32Array, value: Float64Array): void {
  const { offsets: off, mask } = rows;
  for (let i = 0; i < rows.nRows; i++) fillMasked(out, mask, off[i], off[i + 1], value[group[i]]);
}

// The per-token loops are small functions called once per row rather than loops inside the functions above:
// called a thousand times in one batch they are optimised within it, where a loop inside a function that
// runs once per batch waits for on-stack replacement (and the replaced code is dropped on the next batch).

/** Σ mask[from, to): a row's valid tokens. */
function maskSum(mask: Uint8Array, from: number, to: number): number {
  let c = 0;
  for (let t = from; t < to; t++) c += mask[t];
  return c;
}

/** out[t] = a · mask[t] on [from, to) (a · 0 keeps its sign, as torch's product does). */
function fillMasked(out: Float32Array, mask: Uint8Array, from: number, to: number, a: number): void {
  for (let t = from; t < to; t++) out[t] = a * mask[t];
}

/** out[t] = src[t] / d on [from, to), rounded to float32 by the store. */
function divideRange(out: Float32Array, src: Float32Array, from: number, to: number, d: number): void {
  for (let t = from; t < to; t++) out[t] = src[t] / d;
}
