/**
 * Policy losses, keyed by verl's `policy_loss.loss_mode` names.
 *
 * `vanilla` is verl's dual-clip PPO (core_algos.compute_policy_loss_vanilla):
 *   ρ = exp(clamp(logπ − logπ_old, −20, 20)),
 *   ℓ = max(−Aρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), and for A < 0 additionally min(·, −A·c),
 *   ℓ ← ℓ·w_IS, L = agg_loss(ℓ, mask, loss_agg_mode, dp_size, batch_num_tokens, global_batch_size, loss_scale_factor).
 * `per_rollout_mean` is Agent Lightning's (agentlightning/verl/per_rollout_loss.py): the same per-token ℓ on
 * advantages already divided by (rollout tokens × trained rows), then L = dp · Σ_t m_t ℓ_t.
 *
 * `dro` (verl 0.9.0 only, core_algos.compute_policy_loss_dro) is Direct Reward Optimization:
 *   ℓ = −(logπ·A − ½β·(logπ − logπ_old)²)·w_IS, L = agg_loss(ℓ, mask, loss_agg_mode, …), β = policy_loss.dro_beta > 0;
 *   its only metric is ppo_kl = masked_mean(−(logπ − logπ_old)) (no clamp, no clipping).
 *
 * Metrics follow upstream exactly: pg_clipfrac = masked_mean(1[ℓ2 > ℓ1]), ppo_kl = masked_mean(−clamped
 * log-ratio), pg_clipfrac_lower = masked_mean(1[max(ℓ1,ℓ2) > −A·c]·1[A<0]); all unweighted by w_IS.
 */
import type { ResponseRows } from '../batch/types';
import { createRegistry, UnknownNameError } from '../registry';
import { type AggOptions, aggLoss, getAggMode, rowTokenCounts } from './aggLoss';
import { getLossMode } from './lossModes';
import { bf16, type FloatDType, UpstreamError } from './numeric';
import { type ReferenceStackName, semanticsOf } from './stacks';

export interface ClipOptions {
  clipRatio?: number;
  /** null/undefined → clipRatio */
  clipRatioLow?: number | null;
  clipRatioHigh?: number | null;
  /** dual-clip bound, must be > 1 (default 3) */
  clipRatioC?: number;
}

export interface PolicyLossInput {
  rows: ResponseRows;
  oldLogProb: Float32Array;
  logProb: Float32Array;
  advantages: Float32Array;
  rolloutIsWeights?: Float32Array | null;
  /** dtype the advantages tensor has upstream (bf16 on Agent Lightning's bf16 reward path) */
  advantagesDType?: FloatDType;
}

export interface PolicyLossOptions extends ClipOptions, AggOptions {
  lossAggMode?: string;
  /** dro's β (policy_loss.dro_beta) */
  droBeta?: number | null;
}

export interface PolicyLossResult {
  pgLoss: number;
  pgClipfrac: number;
  ppoKl: number;
  pgClipfracLower: number;
  /** per-token ℓ_t (after w_IS) */
  tokenLosses: Float32Array;
  /** per-token ∂ℓ_t/∂logπ_t (after w_IS), with torch's subgradient conventions (ties split evenly) */
  tokenGrads: Float32Array;
}

export function resolveClip(o: ClipOptions): { low: number; high: number; c: number } {
  const clip = o.clipRatio ?? 0.2;
  const low = o.clipRatioLow ?? clip;
  const high = o.clipRatioHigh ?? clip;
  const c = o.clipRatioC ?? 3.0;
  if (!(c > 1))
    throw new UpstreamError(
      'AssertionError',
      `The lower bound of the clip_ratio_c for dual-clip PPO should be greater than 1.0, but get the value: ${c}.`,
    );
  return { low, high, c };
}

/** The token count of a policy-loss input, every per-token array checked against it; the IS weights or null. */
function checkedTokens(input: PolicyLossInput): { n: number; w: Float32Array | null } {
  const { rows, oldLogProb, logProb, advantages } = input;
  const n = rows.offsets[rows.nRows];
  for (const [name, a] of [
    ['oldLogProb', oldLogProb],
    ['logProb', logProb],
    ['advantages', advantages],
  ] as const)
    if (a.length !== n) throw new Error(`${name} has ${a.length} values but the rows hold ${n} tokens`);
  const w = input.rolloutIsWeights ?? null;
  if (w && w.length !== n)
    throw new Error(`rolloutIsWeights has ${w.length} values but the rows hold ${n} tokens`);
  return { n, w };
}

/** Per-token clipped PPO losses, their gradients and the three metrics (shared by both loss modes). */
export function ppoTokenLosses(input: PolicyLossInput, clip: ClipOptions) {
  const { rows, oldLogProb, logProb, advantages } = input;
  const { n, w } = checkedTokens(input);
  const { low, high, c } = resolveClip(clip);
  const lo = Math.fround(1 - low);
  const hi = Math.fround(1 + high);
  const advBf16 = input.advantagesDType === 'bfloat16';
  const mask = rows.mask;
  const tokenLosses = new Float32Array(n);
  const tokenGrads = new Float32Array(n);
  let m = 0;
  let clipped = 0;
  let kl = 0;
  let lower = 0;
  for (let t = 0; t < n; t++) {
    const A = advantages[t];
    const raw = Math.fround(logProb[t] - oldLogProb[t]);
    const nk = raw < -20 ? -20 : Math.min(raw, 20);
    const gClamp = raw >= -20 && raw <= 20 ? 1 : 0;
    const ratio = Math.fround(Math.exp(nk));
    const l1 = Math.fround(-A * ratio);
    const rc = ratio < lo ? lo : Math.min(ratio, hi);
    const l2 = Math.fround(-A * rc);
    const g1 = -A * ratio * gClamp;
    const g2 = ratio >= lo && ratio <= hi ? g1 : 0;
    const c1 = Math.max(l1, l2);
    let gc1 = l1 > l2 ? g1 : l1 < l2 ? g2 : 0.5 * (g1 + g2);
    const l3 = advBf16 ? bf16(-A * c) : Math.fround(-A * c);
    let loss = c1;
    if (A < 0) {
      loss = Math.min(l3, c1);
      gc1 = l3 < c1 ? 0 : l3 > c1 ? gc1 : 0.5 * gc1;
    }
    const wt = w ? w[t] : 1;
    tokenLosses[t] = w ? Math.fround(loss * wt) : loss;
    tokenGrads[t] = gc1 * wt;
    if (mask[t]) {
      m++;
      kl -= nk;
      if (l2 > l1) clipped++;
      if (c1 > l3 && A < 0) lower++;
    }
  }
  const den = Math.fround(m + 1e-8);
  return {
    tokenLosses,
    tokenGrads,
    pgClipfrac: Math.fround(clipped / den),
    ppoKl: Math.fround(kl / den),
    pgClipfracLower: Math.fround(lower / den),
  };
}

export interface PolicyLossMode {
  name: string;
  label: string;
  formula: string;
  source: string;
  compute: (input: PolicyLossInput, opts: PolicyLossOptions) => PolicyLossResult;
}

// verl's get_policy_loss_fn raises its own message for an unknown mode
const registry = createRegistry<PolicyLossMode>('policy loss', {
  unknown: (name, valid) => `Unsupported loss mode: ${name} (known: ${valid.join(', ')})`,
});

export function registerPolicyLoss(mode: PolicyLossMode): void {
  registry.register(mode.name, mode);
}

export function getPolicyLoss(name: string, stack?: ReferenceStackName): PolicyLossMode {
  const m = registry.find(name);
  if (!m) {
    const valid = listPolicyLosses(stack).map((x) => x.name);
    throw new UnknownNameError(
      registry.kind,
      name,
      valid,
      `Unsupported loss mode: ${name} (known: ${valid.join(', ')})`,
    );
  }
  if (!lossOnStack(name, stack))
    throw new UpstreamError(
      'ValueError',
      `Unsupported loss mode: ${name} on ${stack ?? 'the default reference stack'} (known there: ${listPolicyLosses(
        stack,
      )
        .map((x) => x.name)
        .join(', ')})`,
    );
  return m;
}

const DEFAULT_STACK_LOSSES = ['vanilla', 'per_rollout_mean'];

function lossOnStack(name: string, stack?: ReferenceStackName): boolean {
  return DEFAULT_STACK_LOSSES.includes(name) || semanticsOf(stack).extraPolicyLosses.includes(name);
}

/** The policy losses of a reference stack (default: the default stack's). */
export function listPolicyLosses(stack?: ReferenceStackName): PolicyLossMode[] {
  return registry.list().filter((m) => lossOnStack(m.name, stack));
}

registerPolicyLoss({
  name: 'vanilla',
  label: 'PPO (dual-clip)',
  formula: 'L = agg_loss(w_IS · max/min-clipped(−A·ρ), mask, loss_agg_mode)',
  source: 'verl core_algos.compute_policy_loss_vanilla',
  compute(input, opts) {
    const r = ppoTokenLosses(input, opts);
    const pgLoss = aggLoss(input.rows, r.tokenLosses, opts.lossAggMode ?? 'token-mean', opts);
    return { pgLoss, ...r };
  },
});

registerPolicyLoss({
  name: 'per_rollout_mean',
  label: 'per-rollout mean (Agent Lightning)',
  formula: 'L = dp · Σ_t m_t · ℓ_t with A already divided by max(1, T_rollout · N_rows)',
  source: 'agentlightning/verl/per_rollout_loss.py:compute_policy_loss_per_rollout_mean',
  compute(input, opts) {
    const r = ppoTokenLosses(input, opts);
    let s = 0;
    const mask = input.rows.mask;
    for (let t = 0; t < r.tokenLosses.length; t++) if (mask[t]) s += r.tokenLosses[t];
    return { pgLoss: Math.fround(s * (opts.dpSize || 1)), ...r };
  },
});

/** DRO's per-token losses ℓ_t (after w_IS), ∂ℓ_t/∂logπ_t = (−A + β·(logπ − logπ_old))·w_IS, and ppo_kl. */
export function droTokenLosses(input: PolicyLossInput, droBeta: number | null | undefined) {
  if (droBeta == null || !(droBeta > 0))
    throw new UpstreamError('ValueError', 'policy_loss.dro_beta must be a positive value when using DRO');
  const { rows, oldLogProb, logProb, advantages } = input;
  const { n, w } = checkedTokens(input);
  const halfBeta = Math.fround(0.5 * droBeta);
  const tokenLosses = new Float32Array(n);
  const tokenGrads = new Float32Array(n);
  let m = 0;
  let kl = 0;
  for (let t = 0; t < n; t++) {
    const lr = Math.fround(logProb[t] - oldLogProb[t]);
    const pen = Math.fround(halfBeta * Math.fround(lr * lr));
    const loss = -Math.fround(Math.fround(logProb[t] * advantages[t]) - pen);
    const wt = w ? w[t] : 1;
    tokenLosses[t] = w ? Math.fround(loss * wt) : loss;
    tokenGrads[t] = (-advantages[t] + droBeta * lr) * wt;
    if (rows.mask[t]) {
      m++;
      kl -= lr;
    }
  }
  return { tokenLosses, tokenGrads, ppoKl: Math.fround(kl / Math.fround(m + 1e-8)) };
}

registerPolicyLoss({
  name: 'dro',
  label: 'DRO (verl 0.9.0)',
  formula:
    'L = agg_loss(−(logπ·A − ½β(logπ − logπ_old)²)·w_IS, mask, loss_agg_mode), β = policy_loss.dro_beta',
  source: 'verl 0.9.0 core_algos.compute_policy_loss_dro',
  compute(input, opts) {
    const r = droTokenLosses(input, opts.droBeta);
    const pgLoss = aggLoss(input.rows, r.tokenLosses, opts.lossAggMode ?? 'token-mean', opts);
    return { pgLoss, pgClipfrac: 0, pgClipfracLower: 0, ...r };
  },
});

export interface PolicyGradientOptions extends ClipOptions, AggOptions {
  /** a loss-mode registry name (lossModes.ts): an agg_loss mode, or per_rollout_mean */
  lossMode: string;
  /**
   * the per-token policy loss when lossMode is an agg_loss mode: 'vanilla' (default, dual-clip PPO) or 'dro'
   * (verl 0.9.0 stack only; needs droBeta)
   */
  policyLoss?: 'vanilla' | 'dro';
  /** actor_rollout_ref.actor.policy_loss.dro_beta */
  droBeta?: number | null;
}

export interface PolicyGradient {
  /** the scalar loss L of this mini-batch (what verl's policy loss returns) */
  loss: number;
  /** ∂L/∂logπ_t per token (0 at masked tokens): the gradient each token's log-prob receives */
  grad: Float32Array;
  pgClipfrac: number;
  ppoKl: number;
  pgClipfracLower: number;
}

/**
 * One mini-batch's policy loss and its gradient with respect to every token's log-prob, for a trainer:
 * `logProb` from the current policy, `oldLogProb` from the policy that computed the advantages' old log-probs,
 * `advantages` as the loss sees them (after the trainer's order of operations, e.g. divided by T_rollout·N for
 * per_rollout_mean), `rows.mask` the response mask (after rejection sampling). ∂L/∂logπ_t = c_r·m_t·∂ℓ_t/∂logπ_t
 * with c_r from the loss-mode registry and torch's subgradient conventions at clip boundaries. Pass the verl 0.8.0
 * engine's global batch info (batchNumTokens, globalBatchSize, dpSize) to reproduce a mini-batch of a larger step.
 */
export function policyLossGradient(input: PolicyLossInput, opts: PolicyGradientOptions): PolicyGradient {
  if (opts.policyLoss === 'dro') return droGradient(input, opts);
  const mode = getLossMode(opts.lossMode);
  const r = ppoTokenLosses(input, opts);
  const rows = input.rows;
  const coef = mode.rowCoefficients({ ...opts, rows, rowCounts: rowTokenCounts(rows) });
  const grad = new Float32Array(r.tokenGrads.length);
  const { offsets: off, mask } = rows;
  for (let i = 0; i < rows.nRows; i++) {
    const c = coef[i];
    for (let t = off[i]; t < off[i + 1]; t++) grad[t] = mask[t] ? r.tokenGrads[t] * c : 0;
  }
  const loss =
    mode.policyLoss === 'per_rollout_mean'
      ? getPolicyLoss('per_rollout_mean').compute(input, opts).pgLoss
      : aggLoss(rows, r.tokenLosses, mode.name, opts);
  return { loss, grad, pgClipfrac: r.pgClipfrac, ppoKl: r.ppoKl, pgClipfracLower: r.pgClipfracLower };
}

/** dro's loss and ∂L/∂logπ_t = c_r·m_t·∂ℓ_t/∂logπ_t over the agg_loss mode `opts.lossMode`. */
function droGradient(input: PolicyLossInput, opts: PolicyGradientOptions): PolicyGradient {
  getPolicyLoss('dro', opts.stack);
  const rows = input.rows;
  const agg = getAggMode(opts.lossMode, opts.stack);
  const r = droTokenLosses(input, opts.droBeta);
  const coef = agg.rowCoefficients(rows, { ...opts, rowCounts: rowTokenCounts(rows) });
  const grad = new Float32Array(r.tokenGrads.length);
  const { offsets: off, mask } = rows;
  for (let i = 0; i < rows.nRows; i++)
    for (let t = off[i]; t < off[i + 1]; t++) grad[t] = mask[t] ? r.tokenGrads[t] * coef[i] : 0;
  const loss = aggLoss(rows, r.tokenLosses, agg.name, opts);
  return { loss, grad, pgClipfrac: 0, ppoKl: r.ppoKl, pgClipfracLower: 0 };
}
