/**
 * Per-token view of verl's token-level rollout correction: which tokens a threshold keeps, truncates or masks.
 * Derived only from `computeRolloutCorrection` (the weights and the response mask it returns), never
 * recomputed, so what a view shows is what the trainer would apply.
 *
 * * Token-TIS (`rollout_is=token`, `rollout_is_threshold=C`): w_t = min(ρ_t, C); a token is "truncated" when
 *   its weight is below its untruncated weight (the same call with C = ∞).
 * * Token-MIS (`rollout_rs=token_k1`, `rollout_rs_threshold="lo_hi"`): rejection of tokens whose k1 = −log ρ_t lies
 *   outside [log lo, log hi], i.e. whose inverse ratio π_rollout/π_trainer lies outside [lo, hi] (verl compares
 *   k1, not ρ); a token is "masked" when core's response mask drops it.
 * * IcePop (`rollout_is=token`, `rollout_is_threshold="lo_hi"`): weights outside [lo, hi] become 0; a token
 *   is "masked" when core gives it weight 0 (raw weights are at least e^−20 > 0 on loss tokens).
 *
 * ρ_t = exp(old_log_prob − rollout_log_prob): trainer over rollout engine.
 */
import type { ResponseRows } from '../batch/types';
import { computeRolloutCorrection, type RolloutCorrectionConfig } from './rolloutCorrection';
import type { ReferenceStackName } from './stacks';

export const CORRECTION_MASK_MODES = ['token_tis', 'token_mis', 'token_icepop'] as const;
export type CorrectionMaskMode = (typeof CORRECTION_MASK_MODES)[number];

export interface CorrectionMaskModeInfo {
  label: string;
  /** whether the mode takes a lower bound (a "lo_hi" threshold) */
  lower: boolean;
  /** verl's defaults for the mode's preset */
  defaultUpper: number;
  defaultLower: number | null;
  /** the ratio the thresholds bound */
  bounds: string;
  help: string;
}

export const CORRECTION_MASK_MODE_INFO: Record<CorrectionMaskMode, CorrectionMaskModeInfo> = {
  token_tis: {
    label: 'Token-TIS',
    lower: false,
    defaultUpper: 2,
    defaultLower: null,
    bounds: 'ρ = π_trainer / π_rollout',
    help: 'truncated importance sampling per token: weight min(ρ, upper) (RolloutCorrectionConfig.decoupled_token_is)',
  },
  token_mis: {
    label: 'Token-MIS (token_k1 rejection)',
    lower: true,
    defaultUpper: 2,
    defaultLower: 0.5,
    bounds: 'e^k1 = π_rollout / π_trainer',
    help: 'masked importance sampling per token: rollout_rs=token_k1 drops tokens whose k1 = −log ρ lies outside [log lower, log upper] from the response mask',
  },
  token_icepop: {
    label: 'IcePop (lo_hi)',
    lower: true,
    defaultUpper: 5,
    defaultLower: 0.5,
    bounds: 'ρ = π_trainer / π_rollout',
    help: 'token-level IcePop: weights outside [lower, upper] become 0, the response mask is unchanged (RolloutCorrectionConfig.decoupled_token_icepop)',
  },
};

/** Per token: 0 not measured (outside the loss mask, or a log-prob missing), 1 kept, 2 truncated, 3 masked. */
export const MASK_CLASS = { unmeasured: 0, kept: 1, truncated: 2, masked: 3 } as const;
export type MaskClassName = keyof typeof MASK_CLASS;
export const MASK_CLASS_NAMES: readonly MaskClassName[] = ['unmeasured', 'kept', 'truncated', 'masked'];

export interface CorrectionThresholds {
  upper: number;
  /** required by token_mis and token_icepop, ignored by token_tis */
  lower?: number | null;
}

export interface CorrectionMask {
  /** per token of the rows, a MASK_CLASS value */
  classes: Uint8Array;
  /** core's weights (TIS / IcePop) or null (MIS), 0 where not measured */
  weights: Float32Array | null;
  /** core's response mask after the correction */
  responseMask: Uint8Array;
  counts: { measured: number; kept: number; truncated: number; masked: number };
  /** masked / measured */
  maskedFraction: number;
  /** truncated / measured */
  truncatedFraction: number;
  /** the config keys this view applies, as `key=value` */
  configText: string;
  /** core's rollout_corr/* metrics for the measured tokens */
  metrics: Record<string, number>;
}

/** The rollout-correction config a mode and its thresholds stand for (checked by core's threshold parser). */
export function correctionConfigOf(
  mode: CorrectionMaskMode,
  thr: CorrectionThresholds,
  stack?: ReferenceStackName,
): RolloutCorrectionConfig {
  const info = CORRECTION_MASK_MODE_INFO[mode];
  if (!info)
    throw new Error(
      `unknown rollout-correction mask mode '${mode}' (one of ${CORRECTION_MASK_MODES.join(', ')})`,
    );
  if (!Number.isFinite(thr.upper))
    throw new Error(`the upper threshold must be a finite number, got ${thr.upper}`);
  let lohi = '';
  if (info.lower) {
    const lo = thr.lower;
    if (lo == null || !Number.isFinite(lo))
      throw new Error(`${info.label} needs a finite lower threshold, got ${lo}`);
    lohi = `${lo}_${thr.upper}`;
  }
  if (mode === 'token_tis')
    return { rolloutIs: 'token', rolloutIsThreshold: thr.upper, rolloutRs: null, stack };
  if (mode === 'token_icepop')
    return { rolloutIs: 'token', rolloutIsThreshold: lohi, rolloutRs: null, stack };
  return { rolloutIs: null, rolloutRs: 'token_k1', rolloutRsThreshold: lohi, stack };
}

function configText(cfg: RolloutCorrectionConfig): string {
  const p = 'algorithm.rollout_correction.';
  const parts = [`${p}rollout_is=${cfg.rolloutIs ?? 'null'}`];
  if (cfg.rolloutIs) parts.push(`${p}rollout_is_threshold=${cfg.rolloutIsThreshold}`);
  parts.push(`${p}rollout_rs=${cfg.rolloutRs ?? 'null'}`);
  if (cfg.rolloutRs) parts.push(`${p}rollout_rs_threshold=${cfg.rolloutRsThreshold}`);
  return parts.join(' ');
}

/**
 * Classifies every token of `rows` under one token-level correction mode. Tokens outside the loss mask, or where
 * either log-prob is missing (NaN), are "unmeasured" and left out of the correction (and of its counts).
 * Throws when the arrays do not match the rows, or when no token is measured.
 */
export function correctionMask(
  rows: ResponseRows,
  trainerLogProbs: ArrayLike<number>,
  rolloutLogProbs: ArrayLike<number>,
  mode: CorrectionMaskMode,
  thr: CorrectionThresholds,
  stack?: ReferenceStackName,
): CorrectionMask {
  const n = rows.offsets[rows.nRows];
  if (trainerLogProbs.length !== n)
    throw new Error(
      `the trainer's log-probs have ${trainerLogProbs.length} values but the rows hold ${n} tokens`,
    );
  if (rolloutLogProbs.length !== n)
    throw new Error(
      `the rollout log-probs have ${rolloutLogProbs.length} values but the rows hold ${n} tokens`,
    );
  const cfg = correctionConfigOf(mode, thr, stack);
  const mask = new Uint8Array(n);
  const old = new Float32Array(n);
  const roll = new Float32Array(n);
  let measured = 0;
  for (let t = 0; t < n; t++) {
    const a = trainerLogProbs[t];
    const b = rolloutLogProbs[t];
    if (rows.mask[t] && Number.isFinite(a) && Number.isFinite(b)) {
      mask[t] = 1;
      old[t] = a;
      roll[t] = b;
      measured++;
    }
  }
  if (measured === 0)
    throw new Error('no loss token has both a trainer and a rollout log-prob: nothing to correct');
  const measuredRows: ResponseRows = { nRows: rows.nRows, offsets: rows.offsets, mask };
  const res = computeRolloutCorrection(measuredRows, old, roll, cfg);
  const raw =
    mode === 'token_tis'
      ? computeRolloutCorrection(measuredRows, old, roll, {
          ...cfg,
          rolloutIsThreshold: Number.POSITIVE_INFINITY,
        }).rolloutIsWeights
      : null;
  const classes = new Uint8Array(n);
  let kept = 0;
  let truncated = 0;
  let masked = 0;
  for (let t = 0; t < n; t++) {
    if (!mask[t]) continue;
    let c: number = MASK_CLASS.kept;
    if (mode === 'token_mis') {
      if (!res.responseMask[t]) c = MASK_CLASS.masked;
    } else if (mode === 'token_icepop') {
      if ((res.rolloutIsWeights as Float32Array)[t] === 0) c = MASK_CLASS.masked;
    } else if ((res.rolloutIsWeights as Float32Array)[t] < (raw as Float32Array)[t]) c = MASK_CLASS.truncated;
    classes[t] = c;
    if (c === MASK_CLASS.kept) kept++;
    else if (c === MASK_CLASS.truncated) truncated++;
    else masked++;
  }
  return {
    classes,
    weights: res.rolloutIsWeights,
    responseMask: res.responseMask,
    counts: { measured, kept, truncated, masked },
    maskedFraction: masked / measured,
    truncatedFraction: truncated / measured,
    configText: configText(cfg),
    metrics: res.metrics,
  };
}
