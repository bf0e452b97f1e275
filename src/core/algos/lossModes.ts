/**
 * Loss modes: the ways Agent Lightning 1.0 + verl 0.8.0 turn per-token PPO losses into the scalar the actor
 * minimises, as ONE registry keyed by the upstream value. Two upstream keys select a mode:
 *
 * - `actor_rollout_ref.actor.loss_agg_mode` (with `policy_loss.loss_mode: vanilla`): verl's `agg_loss` modes
 *   token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm (aggLoss.ts);
 * - `actor_rollout_ref.actor.policy_loss.loss_mode: per_rollout_mean` (Agent Lightning's default): the trainer
 *   first divides the advantages by max(1, T_rollout·N) (normalize_advantages_by_rollout), then the loss is the
 *   masked sum × dp_size; `loss_agg_mode` is ignored.
 *
 * Every mode is L = Σ_t c_r(t)·m_t·ℓ_t(A_t) over the advantages the loss sees, with a per-row coefficient c_r;
 * so ∂L/∂logπ_t = c_r·m_t·∂ℓ_t/∂logπ_t, and at ratio 1 (nothing clipped) ∂ℓ_t/∂logπ_t = −A_t·w_IS,t. The page,
 * `lab analyze`, the trainer view and `aggLoss` iterate this registry; a new mode is one registration.
 */
import type { ResponseRows } from '../batch/types';
import { createRegistry, UnknownNameError } from '../registry';
import { type AggOptions, allAggModes, getAggMode, hasAggMode } from './aggLoss';
import type { Grouping } from './groups';
import type { FloatDType } from './numeric';
import { rolloutDivisors } from './rolloutLevel';
import type { ReferenceStackName } from './stacks';

export type LossModeKey =
  | 'actor_rollout_ref.actor.loss_agg_mode'
  | 'actor_rollout_ref.actor.policy_loss.loss_mode';

/** What a mode's coefficients may depend on (one mini-batch of rows). */
export interface LossContext extends AggOptions {
  rows: ResponseRows;
  /** valid tokens per row */
  rowCounts: Int32Array;
  /** rollout of each row (per_rollout_mean's T_rollout; only perRolloutDivisors reads it) */
  rollouts?: Grouping;
  /** per_rollout_mean's N: rows of the whole trained batch (upstream passes len(batch)) */
  numTrainedRows?: number;
  /** the advantages' dtype (per_rollout_mean's divisor is a tensor of it) */
  advantagesDType?: FloatDType;
}

export interface LossMode {
  name: string;
  /** the upstream key whose value selects this mode */
  key: LossModeKey;
  label: string;
  formula: string;
  /** the same formula in TeX (the page typesets it) */
  tex: string;
  source: string;
  /** the verl policy-loss function the actor calls */
  policyLoss: 'vanilla' | 'per_rollout_mean';
  /** the trainer divides the advantages by max(1, T_rollout·N) before the loss (per_rollout_mean) */
  normalizesAdvantages: boolean;
  /** c_r: ∂L/∂ℓ_t for a valid token of row r, on the advantages the loss sees */
  rowCoefficients: (ctx: LossContext) => Float64Array;
}

const modes = createRegistry<LossMode>('loss mode');

export function registerLossMode(m: LossMode): void {
  modes.register(m.name, m);
}

/** The loss modes of a reference stack (default: the default stack's): agg_loss modes it lacks are left out. */
export function listLossModes(stack?: ReferenceStackName): LossMode[] {
  return modes.list().filter((m) => m.key !== AGG_KEY || hasAggMode(m.name, stack));
}

export function getLossMode(name: string): LossMode {
  const m = modes.find(name);
  if (!m) {
    const valid = listLossModes().map((x) => x.name);
    throw new UnknownNameError(modes.kind, name, valid);
  }
  return m;
}

const AGG_KEY = 'actor_rollout_ref.actor.loss_agg_mode';

for (const agg of allAggModes())
  registerLossMode({
    name: agg.name,
    key: AGG_KEY,
    label: agg.label,
    formula: agg.formula,
    tex: agg.tex,
    source: `${agg.source} (policy_loss.loss_mode: vanilla)`,
    policyLoss: 'vanilla',
    normalizesAdvantages: false,
    rowCoefficients: (ctx) => getAggMode(agg.name, ctx.stack).rowCoefficients(ctx.rows, ctx),
  });

registerLossMode({
  name: 'per_rollout_mean',
  key: 'actor_rollout_ref.actor.policy_loss.loss_mode',
  label: 'per-rollout mean (Agent Lightning)',
  formula:
    'A ← A / max(1, T_rollout·N_rows) in the advantages’ dtype, then L = dp · Σ_t m_t ℓ_t: every rollout carries A_r/N in total',
  tex: 'A \\leftarrow \\dfrac{A}{\\max(1,\\ T_{\\text{rollout}}\\, N)},\\quad L = \\mathrm{dp}\\sum_{r,t} m_{rt}\\,\\ell_{rt}',
  source:
    'agentlightning 1.0 per_rollout_loss.py: normalize_advantages_by_rollout + compute_policy_loss_per_rollout_mean',
  policyLoss: 'per_rollout_mean',
  normalizesAdvantages: true,
  rowCoefficients: (ctx) => new Float64Array(ctx.rows.nRows).fill(ctx.dpSize || 1),
});

/** per_rollout_mean's divisors, for callers that normalise advantages themselves. */
export function perRolloutDivisors(ctx: LossContext): Float64Array {
  if (!ctx.rollouts) throw new Error('perRolloutDivisors needs the rollout of each row');
  return rolloutDivisors(
    ctx.rows,
    ctx.rollouts,
    ctx.numTrainedRows ?? ctx.rows.nRows,
    ctx.advantagesDType ?? 'float32',
    ctx.rowCounts,
  );
}
