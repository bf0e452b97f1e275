/**
 * Loss aggregation, keyed by verl's `loss_agg_mode` (verl/trainer/ppo/core_algos.py:agg_loss). Every mode is a
 * weighted sum Σ_t c_t·ℓ_t with a per-row coefficient c_r, which is also what the effective weights use:
 *
 * | mode | c_r for a valid token of row r |
 * |---|---|
 * | token-mean | dp / (batch_num_tokens ?? Σ m) |
 * | seq-mean-token-sum | dp / (global_batch_size ?? #non-empty rows) |
 * | seq-mean-token-mean | dp / ((global_batch_size ?? #non-empty rows) · (T_r + 1e-8)) |
 * | seq-mean-token-sum-norm | 1 / (loss_scale_factor ?? T), dp and the batch sizes ignored |
 *
 * An all-masked batch gives 0/0 = NaN for the mean modes and 0 for seq-mean-token-sum-norm, as upstream.
 */
import type { ResponseRows } from '../batch/types';
import { countRange, maskWords } from './maskOps';

export const LOSS_AGG_MODES = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
] as const;
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];

export interface AggOptions {
  dpSize?: number;
  batchNumTokens?: number | null;
  globalBatchSize?: number | null;
  /** seq-mean-token-sum-norm divisor; default: the padded width T (longest row when ragged) */
  lossScaleFactor?: number | null;
  /** padded width T when the rows came from a [B,T] tensor (default: longest row) */
  paddedWidth?: number;
  /** per-row valid-token counts when the caller already has them (saves a pass over the mask) */
  rowCounts?: Int32Array;
}

export interface AggMode {
  name: LossAggMode;
  label: string;
  formula: string;
  /** per-row coefficients c_r (0 for rows without valid tokens) */
  rowCoefficients: (rows: ResponseRows, opts: AggOptions) => Float64Array;
}

/** Valid tokens per row (masks hold 0/1 bytes; counted a 32-bit word at a time). */
export function rowTokenCounts(rows: ResponseRows): Int32Array {
  const out = new Int32Array(rows.nRows);
  const mw = maskWords(rows.mask);
  for (let i = 0; i < rows.nRows; i++) out[i] = countRange(mw, rows.offsets[i], rows.offsets[i + 1]);
  return out;
}

export function paddedWidthOf(rows: ResponseRows, opts: AggOptions): number {
  if (opts.paddedWidth !== undefined) return opts.paddedWidth;
  let w = 0;
  for (let i = 0; i < rows.nRows; i++) w = Math.max(w, rows.offsets[i + 1] - rows.offsets[i]);
  return w;
}

function seqCoefficients(rows: ResponseRows, opts: AggOptions, perToken: boolean): Float64Array {
  const counts = opts.rowCounts ?? rowTokenCounts(rows);
  let nonEmpty = 0;
  for (let i = 0; i < rows.nRows; i++) if (counts[i] > 0) nonEmpty++;
  const gbs = opts.globalBatchSize ?? nonEmpty;
  const dp = opts.dpSize ?? 1;
  const out = new Float64Array(rows.nRows);
  for (let i = 0; i < rows.nRows; i++) {
    if (counts[i] === 0) continue;
    out[i] = perToken ? dp / (gbs * Math.fround(counts[i] + 1e-8)) : dp / gbs;
  }
  return out;
}

const modes = new Map<LossAggMode, AggMode>();
function registerAggMode(m: AggMode) {
  modes.set(m.name, m);
}

registerAggMode({
  name: 'token-mean',
  label: 'token-mean',
  formula: 'L = dp · Σ_t m_t ℓ_t / (batch_num_tokens ?? Σ_t m_t)',
  rowCoefficients(rows, opts) {
    let n = 0;
    if (opts.rowCounts) for (let i = 0; i < rows.nRows; i++) n += opts.rowCounts[i];
    else for (let t = 0; t < rows.mask.length; t++) n += rows.mask[t];
    const c = (opts.dpSize ?? 1) / (opts.batchNumTokens ?? n);
    return new Float64Array(rows.nRows).fill(c);
  },
});
registerAggMode({
  name: 'seq-mean-token-sum',
  label: 'seq-mean-token-sum',
  formula: 'L = dp · Σ_r Σ_t m ℓ / (global_batch_size ?? #non-empty rows)',
  rowCoefficients: (rows, opts) => seqCoefficients(rows, opts, false),
});
registerAggMode({
  name: 'seq-mean-token-mean',
  label: 'seq-mean-token-mean',
  formula: 'L = dp · Σ_r (Σ_t m ℓ / (T_r + 1e-8)) / (global_batch_size ?? #non-empty rows)',
  rowCoefficients: (rows, opts) => seqCoefficients(rows, opts, true),
});
registerAggMode({
  name: 'seq-mean-token-sum-norm',
  label: 'seq-mean-token-sum-norm (Dr. GRPO)',
  formula: 'L = Σ_r Σ_t m ℓ / (loss_scale_factor ?? T)',
  rowCoefficients(rows, opts) {
    const c = 1 / (opts.lossScaleFactor ?? paddedWidthOf(rows, opts));
    return new Float64Array(rows.nRows).fill(c);
  },
});

export function getAggMode(name: string): AggMode {
  const m = modes.get(name as LossAggMode);
  if (!m) throw new Error(`Invalid loss_agg_mode: ${name} (known: ${LOSS_AGG_MODES.join(', ')})`);
  return m;
}

/** verl `agg_loss(loss_mat, loss_mask, loss_agg_mode, …)`: the scalar loss. */
export function aggLoss(
  rows: ResponseRows,
  lossMat: Float32Array,
  mode: string,
  opts: AggOptions = {},
): number {
  const m = getAggMode(mode);
  const { offsets: off, mask } = rows;
  if (lossMat.length !== off[rows.nRows])
    throw new Error(`loss has ${lossMat.length} values but the rows hold ${off[rows.nRows]} tokens`);
  if (m.name === 'seq-mean-token-sum-norm') {
    let s = 0;
    for (let t = 0; t < lossMat.length; t++) if (mask[t]) s += lossMat[t];
    return Math.fround(s / (opts.lossScaleFactor ?? paddedWidthOf(rows, opts)));
  }
  const dp = opts.dpSize ?? 1;
  if (m.name === 'token-mean') {
    let s = 0;
    let n = 0;
    for (let t = 0; t < lossMat.length; t++)
      if (mask[t]) {
        s += lossMat[t];
        n++;
      }
    return Math.fround((s / (opts.batchNumTokens ?? n)) * dp);
  }
  let total = 0;
  let nonEmpty = 0;
  for (let i = 0; i < rows.nRows; i++) {
    let s = 0;
    let c = 0;
    for (let t = off[i]; t < off[i + 1]; t++)
      if (mask[t]) {
        s += lossMat[t];
        c++;
      }
    if (c === 0) continue;
    nonEmpty++;
    total += m.name === 'seq-mean-token-mean' ? Math.fround(s) / Math.fround(c + 1e-8) : s;
  }
  return Math.fround((total / (opts.globalBatchSize ?? nonEmpty)) * dp);
}
