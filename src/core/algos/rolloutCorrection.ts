/**
 * Rollout correction (verl/trainer/ppo/rollout_corr_helper.py:compute_rollout_correction_and_add_to_batch):
 * importance weights and rejection sampling between the trainer's log-probs (`old_log_prob`) and the
 * inference engine's (`rollout_log_prob`), with log ρ_t = old − rollout.
 *
 * * Truncated IS: token level w_t = min(exp(clamp(log ρ_t, ±20)), C); sequence level w_t = min(exp(clamp(Σ_t
 *   log ρ_t, ±20)), C) for every token of the row; 0 at masked tokens; optionally divided by the batch mean
 *   (token-weighted at token level, mean of per-row means at sequence level).
 * * Rejection sampling: per-token k1 = −log ρ, k2 = ½(log ρ)², k3 = ρ − 1 − log ρ (log ρ clamped ±20),
 *   compared at token level or as the row's masked sum / mean / max; k1 keeps [log lo, log hi], the others
 *   keep ≤ upper. Options combine by multiplying keep masks; the response mask is multiplied by the result.
 * * Metrics: every `rollout_corr/*` scalar upstream reports (IS, RS per option, KL, PPL, χ²).
 */
import type { ResponseRows } from '../batch/types';
import { UpstreamError } from './numeric';
import { type ReferenceStackName, type StackSemantics, semanticsOf } from './stacks';

const SAFETY_BOUND = 20;
const RS_OPTIONS = new Set([
  'token_k1',
  'token_k2',
  'token_k3',
  'seq_sum_k1',
  'seq_sum_k2',
  'seq_sum_k3',
  'seq_mean_k1',
  'seq_mean_k2',
  'seq_mean_k3',
  'seq_max_k2',
  'seq_max_k3',
]);

export interface RolloutCorrectionConfig {
  rolloutIs?: 'token' | 'sequence' | null;
  /** TIS upper bound, or "lo_hi" for IcePop (weights outside [lo, hi] become 0); null disables IS */
  rolloutIsThreshold?: number | string | null;
  rolloutIsBatchNormalize?: boolean;
  /** one option or a comma-separated list */
  rolloutRs?: string | null;
  /** number, or a string with one spec per option ("lo_hi" for k1 options) */
  rolloutRsThreshold?: string | number | null;
  /** the reference stack whose rollout-correction semantics apply (stacks.ts); default the default stack */
  stack?: ReferenceStackName;
}

export interface RolloutCorrectionResult {
  rolloutIsWeights: Float32Array | null;
  responseMask: Uint8Array;
  metrics: Record<string, number>;
}

const clampSafe = (x: number) => (x < -SAFETY_BOUND ? -SAFETY_BOUND : Math.min(x, SAFETY_BOUND));
const f = Math.fround;

interface Stats {
  /** per-row token count */
  count: Int32Array;
  nValid: number;
}

function rowStats(rows: ResponseRows): Stats {
  const count = new Int32Array(rows.nRows);
  let nValid = 0;
  for (let i = 0; i < rows.nRows; i++) {
    let c = 0;
    for (let t = rows.offsets[i]; t < rows.offsets[i + 1]; t++) c += rows.mask[t];
    count[i] = c;
    nValid += c;
  }
  return { count, nValid };
}

/** masked_mean over all tokens: Σ m v / (Σ m + 1e-8). */
function maskedMean(v: ArrayLike<number>, mask: Uint8Array): number {
  let s = 0;
  let n = 0;
  for (let t = 0; t < mask.length; t++)
    if (mask[t]) {
      s += v[t];
      n++;
    }
  return f(s / f(n + 1e-8));
}

/** masked_mean per row (axis=-1): Σ_row m v / (T_r + 1e-8); empty rows give 0. */
function rowMaskedMean(rows: ResponseRows, v: ArrayLike<number>, st: Stats): Float64Array {
  const out = new Float64Array(rows.nRows);
  for (let i = 0; i < rows.nRows; i++) {
    let s = 0;
    for (let t = rows.offsets[i]; t < rows.offsets[i + 1]; t++) if (rows.mask[t]) s += v[t];
    out[i] = f(f(s) / f(st.count[i] + 1e-8));
  }
  return out;
}

function rowMaskedSum(rows: ResponseRows, v: ArrayLike<number>): Float64Array {
  const out = new Float64Array(rows.nRows);
  for (let i = 0; i < rows.nRows; i++) {
    let s = 0;
    for (let t = rows.offsets[i]; t < rows.offsets[i + 1]; t++) if (rows.mask[t]) s += v[t];
    out[i] = f(s);
  }
  return out;
}

function mean(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i];
  return f(s / a.length);
}
/** torch.std (unbiased) */
function std(a: ArrayLike<number>): number {
  const n = a.length;
  let m = 0;
  for (let i = 0; i < n; i++) m += a[i];
  m /= n;
  let v = 0;
  for (let i = 0; i < n; i++) v += (a[i] - m) ** 2;
  return f(Math.sqrt(v / (n - 1)));
}
function max(a: ArrayLike<number>): number {
  let m = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < a.length; i++) if (a[i] > m || Number.isNaN(a[i])) m = a[i];
  return m;
}
function min(a: ArrayLike<number>): number {
  let m = Number.POSITIVE_INFINITY;
  for (let i = 0; i < a.length; i++) if (a[i] < m || Number.isNaN(a[i])) m = a[i];
  return m;
}
function fraction(a: ArrayLike<number>, pred: (x: number) => boolean): number {
  let c = 0;
  for (let i = 0; i < a.length; i++) if (pred(a[i])) c++;
  return f(c / a.length);
}
function maskedMax(v: ArrayLike<number>, mask: Uint8Array): number {
  let m = Number.NEGATIVE_INFINITY;
  for (let t = 0; t < mask.length; t++) if (mask[t] && v[t] > m) m = v[t];
  return m;
}
function maskedMin(v: ArrayLike<number>, mask: Uint8Array): number {
  let m = Number.POSITIVE_INFINITY;
  for (let t = 0; t < mask.length; t++) if (mask[t] && v[t] < m) m = v[t];
  return m;
}
/** sqrt(max(0, masked_mean(clamp(v)²) − masked_mean(clamp(v))²)) when more than one token is valid. */
function clampedStd(v: ArrayLike<number>, mask: Uint8Array, lo: number, hi: number, nValid: number): number {
  if (nValid <= 1) return 0;
  const c = new Float64Array(mask.length);
  const c2 = new Float64Array(mask.length);
  for (let t = 0; t < mask.length; t++) {
    // torch.clamp(min=lo, max=hi) is min(max(x, lo), hi): hi wins when lo > hi (an inverted k1 threshold)
    const x = Math.min(Math.max(v[t], lo), hi);
    c[t] = f(x);
    c2[t] = f(x * x);
  }
  const mc = maskedMean(c, mask);
  const variance = f(maskedMean(c2, mask) - f(mc * mc));
  return f(Math.sqrt(Math.max(0, variance)));
}

function checkInputs(rows: ResponseRows, old: Float32Array, rollout: Float32Array) {
  const n = rows.offsets[rows.nRows];
  if (old.length !== n)
    throw new Error(`old_log_prob has ${old.length} values but the rows hold ${n} tokens`);
  if (rollout.length !== n)
    throw new Error(`rollout_log_prob has ${rollout.length} values but the rows hold ${n} tokens`);
}

// ---------- truncated importance sampling ----------

/**
 * `_parse_rollout_is_threshold`: a number (or number string) is the TIS upper bound; "lo_hi" is IcePop's kept
 * range [lo, hi] (weights outside it become 0).
 */
export function parseIsThreshold(spec: number | string | boolean): { upper: number; lower: number | null } {
  if (typeof spec === 'boolean')
    throw new UpstreamError(
      'TypeError',
      'rollout_is_threshold must be specified as a float or a string threshold specification, not a boolean.',
    );
  let upper: number;
  let lower: number | null = null;
  if (typeof spec === 'number') upper = spec;
  else {
    const t = spec.trim();
    if (!t) throw new UpstreamError('ValueError', 'rollout_is_threshold must not be an empty string.');
    const bad = () => new UpstreamError('ValueError', `Invalid rollout_is_threshold '${spec}'.`);
    if (t.includes('_')) {
      const u = t.indexOf('_');
      lower = pyFloat(t.slice(0, u), bad);
      upper = pyFloat(t.slice(u + 1), bad);
    } else upper = pyFloat(t, bad);
  }
  if (!(upper > 0))
    throw new UpstreamError('ValueError', `rollout_is_threshold upper bound must be positive, got ${upper}.`);
  if (lower !== null) {
    if (!(lower > 0))
      throw new UpstreamError(
        'ValueError',
        `rollout_is_threshold lower bound must be positive, got ${lower}.`,
      );
    if (lower > upper)
      throw new UpstreamError('ValueError', 'rollout_is_threshold lower bound must be <= upper bound.');
  }
  return { upper, lower };
}

/** Python's float(str) for the forms a threshold takes (surrounding spaces allowed, nan/inf spelled out). */
function pyFloat(s: string, bad: () => Error): number {
  const t = s.trim().toLowerCase();
  if (/^[+-]?(nan|inf|infinity)$/.test(t))
    return t.includes('nan') ? Number.NaN : t.startsWith('-') ? -Infinity : Infinity;
  if (!/^[+-]?(\d+(_?\d+)*\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) throw bad();
  return Number(t.replace(/_/g, ''));
}

/**
 * compute_rollout_correction_weights + compute_is_metrics (verl 0.8.0): raw weights exp(clamp(log ρ, ±20)) per
 * token or per row (from the row's masked log-ratio sum), × mask; truncated at the upper bound (TIS) or zeroed
 * outside [lower, upper] (IcePop). The statistics describe the truncated weights; the high/low fractions
 * are measured on the raw ones (on the row log-ratio sums at sequence level). The per-row fractions
 * (rollout_is_seq_fraction_high/low) use the truncated row means on verl 0.8.0 and the raw ones on 0.9.0.
 */
function isWeightsAndMetrics(
  rows: ResponseRows,
  logRatio: Float32Array,
  st: Stats,
  level: 'token' | 'sequence',
  threshold: { upper: number; lower: number | null },
  batchNormalize: boolean,
  metrics: Record<string, number>,
  semantics: StackSemantics,
): Float32Array {
  const { mask, offsets: off } = rows;
  const n = logRatio.length;
  const raw = new Float32Array(n);
  let seqLog: Float64Array | null = null;
  if (level === 'token') {
    for (let t = 0; t < n; t++) raw[t] = mask[t] ? Math.exp(clampSafe(logRatio[t])) : 0;
  } else {
    seqLog = rowMaskedSum(rows, logRatio);
    for (let i = 0; i < rows.nRows; i++) {
      const v = f(Math.exp(clampSafe(seqLog[i])));
      for (let t = off[i]; t < off[i + 1]; t++) raw[t] = mask[t] ? v : 0;
    }
  }
  const fUp = f(threshold.upper);
  const icepop = threshold.lower !== null;
  const fLoKeep = icepop ? f(threshold.lower as number) : 0;
  const w = new Float32Array(n);
  for (let t = 0; t < n; t++) {
    const r = raw[t];
    w[t] = icepop ? (r >= fLoKeep && r <= fUp ? r : 0) : Math.min(r, fUp);
  }
  // compute_is_metrics
  if (st.nValid === 0)
    throw new UpstreamError('ValueError', 'response_mask must contain at least one valid token (1).');
  const lowerThr = threshold.lower ?? 1 / threshold.upper;
  const fLow = f(lowerThr);
  if (seqLog) {
    const logUpper = f(Math.log(fUp));
    const logLower = f(Math.log(fLow));
    metrics.rollout_is_max = f(Math.exp(Math.min(max(seqLog), SAFETY_BOUND)));
    metrics.rollout_is_min = f(Math.exp(min(seqLog)));
    metrics.rollout_is_mean = maskedMean(w, mask);
    metrics.rollout_is_ratio_fraction_high = fraction(seqLog, (x) => x > logUpper);
    metrics.rollout_is_ratio_fraction_low = fraction(seqLog, (x) => x < logLower);
  } else {
    metrics.rollout_is_mean = maskedMean(w, mask);
    let hiC = 0;
    let loC = 0;
    for (let t = 0; t < n; t++)
      if (mask[t]) {
        if (raw[t] > fUp) hiC++;
        if (raw[t] < fLow) loC++;
      }
    const den = f(st.nValid + 1e-8);
    metrics.rollout_is_ratio_fraction_high = f(hiC / den);
    metrics.rollout_is_ratio_fraction_low = f(loC / den);
    metrics.rollout_is_max = maskedMax(w, mask);
    metrics.rollout_is_min = maskedMin(w, mask);
  }
  metrics.rollout_is_std = clampedStd(w, mask, 0, fUp, st.nValid);
  {
    const c = new Float64Array(n);
    for (let t = 0; t < n; t++) c[t] = w[t] < 0 ? 0 : Math.min(w[t], fUp);
    const mc = maskedMean(c, mask);
    const sq = new Float64Array(n);
    const d = f(mc + 1e-8);
    for (let t = 0; t < n; t++) {
      const x = f(c[t] / d);
      sq[t] = f(x * x);
    }
    metrics.rollout_is_eff_sample_size = 1 / maskedMean(sq, mask);
  }
  const seqMean = rowMaskedMean(rows, w, st);
  metrics.rollout_is_seq_mean = mean(seqMean);
  metrics.rollout_is_seq_std = seqMean.length > 1 ? std(seqMean) : 0;
  metrics.rollout_is_seq_max = max(seqMean);
  metrics.rollout_is_seq_min = min(seqMean);
  metrics.rollout_is_seq_max_deviation = max(seqMean.map((x) => f(Math.abs(x - 1))));
  const fractionOf = semantics.isSeqFractionWeights === 'raw' ? rowMaskedMean(rows, raw, st) : seqMean;
  metrics.rollout_is_seq_fraction_high = fraction(fractionOf, (x) => x > fUp);
  metrics.rollout_is_seq_fraction_low = fraction(fractionOf, (x) => x < fLow);
  if (icepop) {
    let oob = 0;
    for (let t = 0; t < n; t++) if (mask[t] && (raw[t] < fLoKeep || raw[t] > fUp)) oob++;
    metrics.rollout_is_oob_ratio = f(oob / f(st.nValid + 1e-8));
  }

  if (batchNormalize) {
    let wm: number;
    if (level === 'token') wm = maskedMean(w, mask);
    else {
      const sw = rowMaskedMean(rows, w, st);
      let s = 0;
      let c = 0;
      for (let i = 0; i < rows.nRows; i++)
        if (st.count[i] > 0) {
          s += sw[i];
          c++;
        }
      wm = f(s / Math.max(c, 1e-8));
    }
    if (wm > 1e-8) {
      for (let t = 0; t < n; t++) w[t] = w[t] / wm;
      metrics.rollout_is_batch_norm_factor = wm;
    } else metrics.rollout_is_batch_norm_factor = 1.0;
  }
  return w;
}

// ---------- rejection sampling ----------

interface Thr {
  lower: number | null;
  upper: number;
}

/** `_parse_rollout_rs_thresholds`: one spec shared by every option or one per option; k1 takes "lo_hi" or x → [1/x, x]. */
export function parseRsThresholds(
  options: string[],
  spec: string | number | null | undefined,
  semantics: StackSemantics = semanticsOf(),
): Map<string, Thr> {
  if (spec === null || spec === undefined)
    throw new UpstreamError('ValueError', 'rollout_rs_threshold must be provided for rejection sampling.');
  let raw: string[] =
    typeof spec === 'number'
      ? [String(spec)]
      : spec
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s);
  if (raw.length === 0)
    throw new UpstreamError('ValueError', 'rollout_rs_threshold must contain at least one threshold value.');
  if (raw.length !== 1 && raw.length !== options.length)
    throw new UpstreamError(
      'ValueError',
      `rollout_rs_threshold expects either one threshold shared by all options or exactly ${options.length} thresholds to match the provided rollout_rs options.`,
    );
  if (raw.length === 1 && options.length > 1) raw = options.map(() => raw[0]);
  const out = new Map<string, Thr>();
  options.forEach((opt, k) => {
    const s = raw[k];
    if (opt.endsWith('k1')) {
      let lo: number;
      let hi: number;
      if (s.includes('_')) {
        const u = s.indexOf('_');
        lo = parseNum(s.slice(0, u), s, opt);
        hi = parseNum(s.slice(u + 1), s, opt);
      } else {
        hi = parseNum(s, s, opt);
        lo = 1 / hi;
      }
      if (lo <= 0 || hi <= 0)
        throw new UpstreamError('ValueError', `Thresholds for option '${opt}' must be positive, got ${s}.`);
      if (semantics.rejectsInvertedK1Thresholds && lo > hi)
        throw new UpstreamError(
          'ValueError',
          `Thresholds for option '${opt}' must be lower <= upper, got ${s}.`,
        );
      out.set(opt, { lower: lo, upper: hi });
    } else {
      if (s.includes('_'))
        throw new UpstreamError(
          'ValueError',
          `rollout_rs_threshold for option '${opt}' must provide a single upper bound without '_'. Received '${s}'.`,
        );
      const hi = parseNum(s, s, opt);
      if (hi <= 0)
        throw new UpstreamError('ValueError', `Threshold for option '${opt}' must be positive, got ${s}.`);
      out.set(opt, { lower: null, upper: hi });
    }
  });
  return out;
}

function parseNum(s: string, spec: string, opt: string): number {
  const v = s.trim() === '' ? Number.NaN : Number(s);
  if (Number.isNaN(v) && !/^\s*[+-]?nan\s*$/i.test(s))
    throw new UpstreamError('ValueError', `Invalid numeric threshold '${spec}' for option '${opt}'.`);
  return v;
}

function rejection(
  rows: ResponseRows,
  logRatio: Float32Array,
  st: Stats,
  rs: string,
  spec: string | number | null | undefined,
  metrics: Record<string, number>,
  semantics: StackSemantics,
): Uint8Array {
  const { mask, offsets: off } = rows;
  const n = logRatio.length;
  const opts: string[] = [];
  for (const o of rs
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s)) {
    if (!RS_OPTIONS.has(o))
      throw new UpstreamError(
        'ValueError',
        `Invalid rollout_rs option: ${o}. Must be one of ${JSON.stringify([...RS_OPTIONS].sort())}.`,
      );
    if (!opts.includes(o)) opts.push(o);
  }
  if (opts.length === 0)
    throw new UpstreamError('ValueError', 'rollout_rs must contain at least one valid option.');
  const thr = parseRsThresholds(opts, spec, semantics);
  if (rows.nRows === 0) return mask.slice();
  const k1 = new Float32Array(n);
  const k2 = new Float32Array(n);
  const k3 = new Float32Array(n);
  for (let t = 0; t < n; t++) {
    const x = clampSafe(logRatio[t]);
    k1[t] = -x;
    k2[t] = f(0.5 * f(x * x));
    k3[t] = f(f(f(Math.exp(x)) - 1) - x);
  }
  const keepAll = new Uint8Array(n).fill(1);
  const valid = new Uint8Array(rows.nRows);
  let nValidRows = 0;
  for (let i = 0; i < rows.nRows; i++)
    if (st.count[i] > 0) {
      valid[i] = 1;
      nValidRows++;
    }
  for (const opt of opts) {
    const th = thr.get(opt) as Thr;
    const isK1 = opt.endsWith('k1');
    const upper = isK1 ? f(Math.log(th.upper)) : th.upper;
    const lower = isK1 ? f(Math.log(th.lower as number)) : 0;
    const fUp = f(upper);
    const fLo = f(lower);
    const stat = opt.endsWith('k1') ? k1 : opt.endsWith('k2') ? k2 : k3;
    const keepTok = (x: number) => (isK1 ? x >= fLo && x <= fUp : x <= fUp);
    const tokenLevel = opt.startsWith('token_');
    const keep = new Uint8Array(n);
    let perToken: ArrayLike<number> = stat;
    let seqValues: Float64Array;
    if (tokenLevel) {
      for (let t = 0; t < n; t++) keep[t] = keepTok(stat[t]) ? 1 : 0;
      seqValues = rowMaskedMean(rows, stat, st);
    } else {
      if (opt.startsWith('seq_sum')) seqValues = rowMaskedSum(rows, stat);
      else if (opt.startsWith('seq_mean')) seqValues = rowMaskedMean(rows, stat, st);
      else {
        seqValues = new Float64Array(rows.nRows);
        for (let i = 0; i < rows.nRows; i++) {
          let m = Number.NEGATIVE_INFINITY;
          for (let t = off[i]; t < off[i + 1]; t++) if (mask[t] && stat[t] > m) m = stat[t];
          seqValues[i] = m === Number.NEGATIVE_INFINITY ? 0 : m;
        }
      }
      const bc = new Float32Array(n);
      for (let i = 0; i < rows.nRows; i++) {
        const k = keepTok(seqValues[i]) ? 1 : 0;
        for (let t = off[i]; t < off[i + 1]; t++) {
          keep[t] = k;
          bc[t] = seqValues[i];
        }
      }
      perToken = bc;
    }
    // compute_rs_metrics
    if (st.nValid === 0)
      throw new UpstreamError('ValueError', 'response_mask must contain at least one valid token (1).');
    const p = `rollout_rs_${opt}`;
    const sv: number[] = [];
    for (let i = 0; i < rows.nRows; i++) if (valid[i]) sv.push(seqValues[i]);
    const seqLevel = !tokenLevel && sv.length > 0;
    metrics[`${p}_mean`] = maskedMean(perToken, mask);
    metrics[`${p}_max`] = seqLevel ? max(sv) : maskedMax(perToken, mask);
    metrics[`${p}_min`] = seqLevel ? min(sv) : maskedMin(perToken, mask);
    if (seqLevel) {
      metrics[`${p}_fraction_high`] = fraction(sv, (x) => x > fUp);
      metrics[`${p}_fraction_low`] = isK1 ? fraction(sv, (x) => x < fLo) : 0;
    } else {
      let hiC = 0;
      let loC = 0;
      for (let t = 0; t < n; t++)
        if (mask[t]) {
          if (perToken[t] > fUp) hiC++;
          if (perToken[t] < fLo) loC++;
        }
      const den = f(st.nValid + 1e-8);
      metrics[`${p}_fraction_high`] = f(hiC / den);
      metrics[`${p}_fraction_low`] = isK1 ? f(loC / den) : 0;
    }
    metrics[`${p}_std`] = clampedStd(perToken, mask, isK1 ? fLo : 0, fUp, st.nValid);
    if (sv.length > 0) {
      metrics[`${p}_seq_mean`] = mean(sv);
      metrics[`${p}_seq_std`] = sv.length > 1 ? std(sv) : 0;
      metrics[`${p}_seq_max`] = max(sv);
      metrics[`${p}_seq_min`] = min(sv);
      metrics[`${p}_seq_max_deviation`] = max(sv.map((x) => Math.abs(x)));
      metrics[`${p}_seq_fraction_high`] = fraction(sv, (x) => x > fUp);
      if (isK1) metrics[`${p}_seq_fraction_low`] = fraction(sv, (x) => x < fLo);
    } else {
      for (const k of [
        'seq_mean',
        'seq_std',
        'seq_max',
        'seq_min',
        'seq_max_deviation',
        'seq_fraction_high',
        'seq_fraction_low',
      ])
        metrics[`${p}_${k}`] = 0;
    }
    let rejTok = 0;
    let rejRows = 0;
    for (let i = 0; i < rows.nRows; i++) {
      let rowRej = false;
      for (let t = off[i]; t < off[i + 1]; t++)
        if (mask[t] && !keep[t]) {
          rejTok++;
          rowRej = true;
        }
      if (rowRej) rejRows++;
    }
    metrics[`${p}_masked_fraction`] = f(rejTok / f(st.nValid + 1e-8));
    metrics[`${p}_seq_masked_fraction`] = nValidRows > 0 ? f(rejRows / nValidRows) : 0;
    for (let t = 0; t < n; t++) keepAll[t] &= keep[t];
  }
  let rejTok = 0;
  let rejRows = 0;
  const out = new Uint8Array(n);
  for (let i = 0; i < rows.nRows; i++) {
    let rowRej = false;
    for (let t = off[i]; t < off[i + 1]; t++) {
      out[t] = mask[t] & keepAll[t];
      if (mask[t] && !keepAll[t]) {
        rejTok++;
        rowRej = true;
      }
    }
    if (rowRej) rejRows++;
  }
  metrics.rollout_rs_masked_fraction = f(rejTok / f(st.nValid + 1e-8));
  metrics.rollout_rs_seq_masked_fraction = f(rejRows / rows.nRows);
  return out;
}

// ---------- off-policy diagnostics ----------

function offPolicyMetrics(
  rows: ResponseRows,
  old: Float32Array,
  rollout: Float32Array,
  logRatio: Float32Array,
  st: Stats,
  metrics: Record<string, number>,
) {
  const { mask } = rows;
  const n = old.length;
  const B = rows.nRows;
  const mTrain = rowMaskedMean(rows, old, st);
  const mRoll = rowMaskedMean(rows, rollout, st);
  const tmp = new Float64Array(B);
  for (let i = 0; i < B; i++) tmp[i] = f(Math.exp(-mTrain[i]));
  metrics.training_ppl = mean(tmp);
  for (let i = 0; i < B; i++) tmp[i] = -mTrain[i];
  metrics.training_log_ppl = mean(tmp);
  const d = new Float64Array(n);
  for (let t = 0; t < n; t++) d[t] = f(rollout[t] - old[t]);
  metrics.kl = maskedMean(d, mask);
  for (let t = 0; t < n; t++) {
    const x = logRatio[t];
    d[t] = f(f(f(Math.exp(x)) - x) - 1);
  }
  metrics.k3_kl = maskedMean(d, mask);
  for (let i = 0; i < B; i++) tmp[i] = f(Math.exp(-mRoll[i]));
  metrics.rollout_ppl = mean(tmp);
  for (let i = 0; i < B; i++) tmp[i] = -mRoll[i];
  metrics.rollout_log_ppl = mean(tmp);
  const diff = new Float64Array(B);
  for (let i = 0; i < B; i++) diff[i] = f(mRoll[i] - mTrain[i]);
  metrics.log_ppl_diff = mean(diff);
  metrics.log_ppl_abs_diff = mean(diff.map(Math.abs));
  metrics.log_ppl_diff_max = max(diff);
  metrics.log_ppl_diff_min = min(diff);
  metrics.ppl_ratio = mean(diff.map((x) => f(Math.exp(x))));
  for (let t = 0; t < n; t++) {
    const r = f(Math.exp(clampSafe(logRatio[t])));
    d[t] = f(r * r);
  }
  metrics.chi2_token = f(maskedMean(d, mask) - 1);
  const sums = rowMaskedSum(rows, logRatio);
  metrics.chi2_seq = f(mean(sums.map((s) => f(Math.exp(2 * clampSafe(s))))) - 1);
}

/** verl `compute_rollout_correction_and_add_to_batch`: weights (or null), the new response mask, the metrics. */
export function computeRolloutCorrection(
  rows: ResponseRows,
  oldLogProb: Float32Array,
  rolloutLogProb: Float32Array,
  cfg: RolloutCorrectionConfig,
): RolloutCorrectionResult {
  checkInputs(rows, oldLogProb, rolloutLogProb);
  const st = rowStats(rows);
  if (st.nValid === 0)
    throw new UpstreamError('ValueError', 'response_mask must contain at least one valid token (1).');
  const n = oldLogProb.length;
  const logRatio = new Float32Array(n);
  for (let t = 0; t < n; t++) logRatio[t] = oldLogProb[t] - rolloutLogProb[t];
  const m: Record<string, number> = {};
  let weights: Float32Array | null = null;
  const thr = cfg.rolloutIsThreshold === undefined ? 2.0 : cfg.rolloutIsThreshold;
  if (cfg.rolloutIs != null && thr != null) {
    if (cfg.rolloutIs !== 'token' && cfg.rolloutIs !== 'sequence')
      throw new UpstreamError(
        'ValueError',
        `Invalid rollout_is: ${cfg.rolloutIs}. Must be one of {'token', 'sequence'}.`,
      );
    weights = isWeightsAndMetrics(
      rows,
      logRatio,
      st,
      cfg.rolloutIs,
      parseIsThreshold(thr),
      cfg.rolloutIsBatchNormalize ?? false,
      m,
      semanticsOf(cfg.stack),
    );
  }
  let mask = rows.mask.slice();
  if (cfg.rolloutRs != null) {
    if (cfg.rolloutRsThreshold == null)
      throw new UpstreamError(
        'ValueError',
        'rollout_rs_threshold must be explicitly provided when rollout_rs is enabled. Set rollout_rs_threshold to the desired threshold value.',
      );
    mask = rejection(
      rows,
      logRatio,
      st,
      cfg.rolloutRs,
      cfg.rolloutRsThreshold,
      m,
      semanticsOf(cfg.stack),
    ) as Uint8Array<ArrayBuffer>;
  }
  offPolicyMetrics(rows, oldLogProb, rolloutLogProb, logRatio, st, m);
  const metrics: Record<string, number> = {};
  for (const [k, v] of Object.entries(m)) metrics[`rollout_corr/${k}`] = v;
  return { rolloutIsWeights: weights, responseMask: mask, metrics };
}
