/**
 * Loss aggregation, keyed by verl's `loss_agg_mode` (verl 0.8.0 verl/trainer/ppo/core_algos.py:agg_loss). Every
 * mode is a weighted sum Σ_t c_r·m_t·ℓ_t with a per-row coefficient c_r, which is also what the effective weights
 * use (G = global_batch_size ?? #non-empty rows, N = batch_num_tokens ?? Σ m, T = the padded response width):
 *
 * | mode | c_r for a valid token of row r |
 * |---|---|
 * | token-mean | dp / N |
 * | seq-mean-token-sum | dp / G |
 * | seq-mean-token-mean | dp / (G · (T_r + 1e-8)) |
 * | seq-mean-token-sum-norm | dp / (G · (loss_scale_factor ?? T)) |
 * | token-sum (verl 0.9.0) | dp |
 *
 * With dp_size > 1, token-mean needs batch_num_tokens and the seq-mean modes need global_batch_size (ValueError
 * otherwise, as upstream). An all-masked batch gives 0/0 = NaN in every mode but token-sum (0). `token-sum` exists
 * only on the verl 0.9.0 reference stack (stacks.ts); on the default stack it is upstream's ValueError. (A development version of verl
 * before 0.8.0 divided the plain masked sum by T in seq-mean-token-sum-norm; 0.8.0 divides the seq-mean.)
 */
import type { ResponseRows } from '../batch/types';
import { createRegistry } from '../registry';
import { countRange, maskWords } from './maskOps';
import { UpstreamError } from './numeric';
import { type ReferenceStackName, semanticsOf } from './stacks';

export const LOSS_AGG_MODES = [
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-mean',
  'seq-mean-token-sum-norm',
] as const;
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];
/** every registered mode, on any reference stack */
export type AggModeName = LossAggMode | 'token-sum';

export interface AggOptions {
  dpSize?: number;
  batchNumTokens?: number | null;
  globalBatchSize?: number | null;
  /** seq-mean-token-sum-norm divisor; default: the padded width T */
  lossScaleFactor?: number | null;
  /**
   * padded response width T (`loss_mask.shape[-1]`): on Agent Lightning's path the adapter pads every row to
   * max_response_length; default here, for rows without a tensor behind them, is the longest row
   */
  paddedWidth?: number;
  /** per-row valid-token counts when the caller already has them (saves a pass over the mask) */
  rowCounts?: Int32Array;
  /** the reference stack whose modes exist (stacks.ts); default the default stack */
  stack?: ReferenceStackName;
}

export interface AggMode {
  name: AggModeName;
  label: string;
  formula: string;
  /** the same formula in TeX (the page typesets it) */
  tex: string;
  /** where upstream implements it */
  source: string;
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

/** dp_size > 1 needs the global count upstream (it cannot be derived from one rank's micro-batch). */
function requireGlobal(opts: AggOptions, key: 'batchNumTokens' | 'globalBatchSize'): void {
  if ((opts.dpSize ?? 1) > 1 && opts[key] == null)
    throw new UpstreamError(
      'ValueError',
      key === 'batchNumTokens'
        ? '(global) batch_num_tokens is required when dp_size > 1'
        : 'global_batch_size is required when dp_size > 1',
    );
}

/** seq-mean coefficients: dp / G per non-empty row, × 1/(T_r + 1e-8) (token-mean) or × 1/C (sum-norm). */
function seqCoefficients(
  rows: ResponseRows,
  opts: AggOptions,
  perRow: (count: number) => number,
): Float64Array {
  requireGlobal(opts, 'globalBatchSize');
  const counts = opts.rowCounts ?? rowTokenCounts(rows);
  let nonEmpty = 0;
  for (let i = 0; i < rows.nRows; i++) if (counts[i] > 0) nonEmpty++;
  const gbs = opts.globalBatchSize ?? nonEmpty;
  const dp = opts.dpSize ?? 1;
  const out = new Float64Array(rows.nRows);
  for (let i = 0; i < rows.nRows; i++) if (counts[i] > 0) out[i] = (dp / gbs) * perRow(counts[i]);
  return out;
}

// verl raises its own message for an unknown mode
const modes = createRegistry<AggMode>('loss aggregation mode', {
  unknown: (name, valid) => `Invalid loss_agg_mode: ${name} (known: ${valid.join(', ')})`,
});
function registerAggMode(m: AggMode) {
  modes.register(m.name, m);
}

const AGG_SOURCE = 'verl 0.8.0 core_algos.agg_loss';

registerAggMode({
  name: 'token-mean',
  label: 'token-mean',
  formula: 'L = dp · Σ_t m_t ℓ_t / N, N = batch_num_tokens (else Σ_t m_t)',
  tex: 'L = \\mathrm{dp}\\,\\dfrac{\\sum_{r,t} m_{rt}\\,\\ell_{rt}}{N},\\quad N = \\text{batch\\_num\\_tokens, else } \\textstyle\\sum_{r,t} m_{rt}',
  source: AGG_SOURCE,
  rowCoefficients(rows, opts) {
    requireGlobal(opts, 'batchNumTokens');
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
  formula: 'L = dp · Σ_r Σ_t m ℓ / G, G = global_batch_size (else the non-empty rows)',
  tex: 'L = \\dfrac{\\mathrm{dp}}{G}\\sum_r \\sum_t m_{rt}\\,\\ell_{rt},\\quad G = \\text{global\\_batch\\_size, else the non-empty rows}',
  source: AGG_SOURCE,
  rowCoefficients: (rows, opts) => seqCoefficients(rows, opts, () => 1),
});
registerAggMode({
  name: 'seq-mean-token-mean',
  label: 'seq-mean-token-mean',
  formula: 'L = dp · Σ_r (Σ_t m ℓ / (T_r + 1e-8)) / G, G = global_batch_size (else the non-empty rows)',
  tex: 'L = \\dfrac{\\mathrm{dp}}{G}\\sum_r \\dfrac{\\sum_t m_{rt}\\,\\ell_{rt}}{T_r + 10^{-8}},\\quad T_r = \\textstyle\\sum_t m_{rt}',
  source: AGG_SOURCE,
  rowCoefficients: (rows, opts) => seqCoefficients(rows, opts, (c) => 1 / Math.fround(c + 1e-8)),
});
registerAggMode({
  name: 'seq-mean-token-sum-norm',
  label: 'seq-mean-token-sum-norm (Dr. GRPO)',
  formula:
    'L = dp · Σ_r Σ_t m ℓ / (G · C), G = global_batch_size (else the non-empty rows), C = loss_scale_factor (else the padded response width T)',
  tex: 'L = \\dfrac{\\mathrm{dp}}{G\\,C}\\sum_r \\sum_t m_{rt}\\,\\ell_{rt},\\quad C = \\text{loss\\_scale\\_factor, else the padded width } T',
  source: AGG_SOURCE,
  rowCoefficients(rows, opts) {
    const C = opts.lossScaleFactor ?? paddedWidthOf(rows, opts);
    return seqCoefficients(rows, opts, () => 1 / C);
  },
});

registerAggMode({
  name: 'token-sum',
  label: 'token-sum (verl 0.9.0)',
  formula:
    'L = dp · Σ_t m_t ℓ_t (no normaliser: DDP/FSDP averaging over dp ranks makes it the global token sum)',
  tex: 'L = \\mathrm{dp}\\sum_{r,t} m_{rt}\\,\\ell_{rt}',
  source: 'verl 0.9.0 core_algos.agg_loss',
  rowCoefficients: (rows, opts) => new Float64Array(rows.nRows).fill(opts.dpSize ?? 1),
});

function availableOn(name: AggModeName, stack?: ReferenceStackName): boolean {
  return (
    (LOSS_AGG_MODES as readonly string[]).includes(name) || semanticsOf(stack).extraAggModes.includes(name)
  );
}

/** Every registered mode, whichever stack has it. */
export function allAggModes(): AggMode[] {
  return modes.list();
}

/** Whether a reference stack has a mode. */
export function hasAggMode(name: string, stack?: ReferenceStackName): boolean {
  return modes.has(name) && availableOn(name as AggModeName, stack);
}

/** The modes of a reference stack (default: the default stack's four). */
export function listAggModes(stack?: ReferenceStackName): AggMode[] {
  return modes.list().filter((m) => availableOn(m.name, stack));
}

/** A mode of a reference stack; one the stack does not have is upstream's ValueError. */
export function getAggMode(name: string, stack?: ReferenceStackName): AggMode {
  const m = modes.find(name);
  if (!m || !availableOn(m.name as AggModeName, stack))
    throw new UpstreamError(
      'ValueError',
      `Invalid loss_agg_mode: ${name} (known${stack ? ` on ${stack}` : ''}: ${listAggModes(stack)
        .map((x) => x.name)
        .join(', ')})`,
    );
  return m;
}

/** verl `agg_loss(loss_mat, loss_mask, loss_agg_mode, …)`: the scalar loss. */
export function aggLoss(
  rows: ResponseRows,
  lossMat: Float32Array,
  mode: string,
  opts: AggOptions = {},
): number {
  const m = getAggMode(mode, opts.stack);
  const { offsets: off, mask } = rows;
  if (lossMat.length !== off[rows.nRows])
    throw new Error(`loss has ${lossMat.length} values but the rows hold ${off[rows.nRows]} tokens`);
  const dp = opts.dpSize ?? 1;
  if (m.name === 'token-sum') {
    let s = 0;
    for (let t = 0; t < lossMat.length; t++) if (mask[t]) s += lossMat[t];
    return Math.fround(s * dp);
  }
  if (m.name === 'token-mean') {
    requireGlobal(opts, 'batchNumTokens');
    let s = 0;
    let n = 0;
    for (let t = 0; t < lossMat.length; t++)
      if (mask[t]) {
        s += lossMat[t];
        n++;
      }
    return Math.fround((s / (opts.batchNumTokens ?? n)) * dp);
  }
  requireGlobal(opts, 'globalBatchSize');
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
  const seqMean = Math.fround((total / (opts.globalBatchSize ?? nonEmpty)) * dp);
  if (m.name !== 'seq-mean-token-sum-norm') return seqMean;
  return Math.fround(seqMean / (opts.lossScaleFactor ?? paddedWidthOf(rows, opts)));
}
