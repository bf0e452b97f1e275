/**
 * Reference stacks: the upstream releases whose semantics the lab reproduces, as ONE registry keyed by the name
 * `lab.reference_stack` takes. Both stacks build rows the same way (Agent Lightning 1.0's `RolloutAdapter`, its
 * rollout-level advantage and per-rollout loss); they differ in verl's algorithms. Each stack lists what it
 * changes against the default stack, with the upstream change that made it; the algorithms read the stack's
 * `semantics`, and nothing else about a stack, so a difference not listed here cannot exist in the code.
 *
 * What verl 0.9.0 changed in the code paths the lab reproduces (read from the PyPI wheels of 0.8.0 and 0.9.0):
 * - core_algos.compute_reinforce_plus_plus_outcome_advantage: the running return is carried unchanged through
 *   mask-0 positions (observation spans) instead of restarting there; returns are 0 at mask-0 positions.
 * - core_algos.agg_loss: a new `token-sum` mode, L = dp · Σ m·ℓ.
 * - core_algos: a new registered policy loss `dro` (`policy_loss.dro_beta`).
 * - rollout_corr_helper.compute_is_metrics: rollout_is_seq_fraction_high / _low from the raw (untruncated)
 *   per-row mean weights.
 * - rollout_corr_helper._parse_rollout_rs_thresholds: a k1 spec whose lower bound exceeds its upper bound is a
 *   ValueError (0.8.0 accepted it and rejected every token).
 * Not modelled, because they change no number the lab computes for a batch: the V1 trainer
 * (`trainer.use_v1`, default true in 0.9.0, modes sync / colocate_async / separate_async) changes scheduling and
 * weight sync, and its multi-trajectory GRPO broadcast (v1/utils.compute_advantage_for_multi_trajectories) runs
 * on verl's own agent loop, not on Agent Lightning's rows; the critic's value loss now takes the global batch
 * info (the lab has no critic).
 */
import { createRegistry } from '../registry';

export const REFERENCE_STACK_NAMES = ['agentlightning-1.0+verl-0.8.0', 'verl-0.9.0'] as const;
export type ReferenceStackName = (typeof REFERENCE_STACK_NAMES)[number];
export const DEFAULT_REFERENCE_STACK: ReferenceStackName = 'agentlightning-1.0+verl-0.8.0';

/** The behaviours that differ between stacks; every algorithm that depends on the stack reads one of these. */
export interface StackSemantics {
  /** REINFORCE++'s running return at a mask-0 position: restarts (0.8.0) or is carried through (0.9.0) */
  reinforceReturnAtMask0: 'reset' | 'carry';
  /** rollout_is_seq_fraction_high / _low are measured on the truncated (0.8.0) or the raw (0.9.0) row means */
  isSeqFractionWeights: 'truncated' | 'raw';
  /** a rollout_rs k1 threshold with lower > upper raises ValueError */
  rejectsInvertedK1Thresholds: boolean;
  /** loss_agg_mode values beyond 0.8.0's four */
  extraAggModes: readonly string[];
  /** policy_loss.loss_mode values beyond 0.8.0's (and Agent Lightning's per_rollout_mean) */
  extraPolicyLosses: readonly string[];
}

/** One difference from the default stack: what changed, which settings it touches, and where upstream. */
export interface StackChange {
  id: string;
  /** the upstream config keys whose value decides whether the change shows */
  keys: readonly string[];
  summary: string;
  /** upstream file:function and the pull request that made the change */
  madeBy: string;
}

export interface ReferenceStack {
  name: ReferenceStackName;
  label: string;
  agentlightning: string;
  verl: string;
  semantics: StackSemantics;
  /** against the default stack; empty for the default */
  changes: readonly StackChange[];
}

const stacks = createRegistry<ReferenceStack>('reference stack');

function registerStack(s: ReferenceStack): void {
  stacks.register(s.name, s);
}

registerStack({
  name: 'agentlightning-1.0+verl-0.8.0',
  label: 'Agent Lightning 1.0.x + verl 0.8.0',
  agentlightning: '1.0.x',
  verl: '0.8.0',
  semantics: {
    reinforceReturnAtMask0: 'reset',
    isSeqFractionWeights: 'truncated',
    rejectsInvertedK1Thresholds: false,
    extraAggModes: [],
    extraPolicyLosses: [],
  },
  changes: [],
});

registerStack({
  name: 'verl-0.9.0',
  label: 'Agent Lightning 1.0.x rows + verl 0.9.0',
  agentlightning: '1.0.x',
  verl: '0.9.0',
  semantics: {
    reinforceReturnAtMask0: 'carry',
    isSeqFractionWeights: 'raw',
    rejectsInvertedK1Thresholds: true,
    extraAggModes: ['token-sum'],
    extraPolicyLosses: ['dro'],
  },
  changes: [
    {
      id: 'reinforce_returns_through_observations',
      keys: ['algorithm.adv_estimator'],
      summary:
        'REINFORCE++ carries the running return unchanged through mask-0 spans (observation tokens), so a turn before a tool observation gets the later reward, discounted by γ once per valid token; returns are 0 at mask-0 positions (0.8.0 restarted the return at every mask-0 position and kept r_t there)',
      madeBy:
        'verl/trainer/ppo/core_algos.py:compute_reinforce_plus_plus_outcome_advantage, verl-project/verl#7300 (fixes #7278)',
    },
    {
      id: 'token_sum_aggregation',
      keys: ['actor_rollout_ref.actor.loss_agg_mode'],
      summary:
        "new loss_agg_mode 'token-sum': L = dp_size · Σ_t m_t ℓ_t (0.8.0: ValueError Invalid loss_agg_mode)",
      madeBy: 'verl/trainer/ppo/core_algos.py:agg_loss, verl/workers/config/actor.py, verl-project/verl#7197',
    },
    {
      id: 'dro_policy_loss',
      keys: ['actor_rollout_ref.actor.policy_loss.loss_mode', 'actor_rollout_ref.actor.policy_loss.dro_beta'],
      summary:
        "new policy loss 'dro': ℓ = −(logπ·A − ½β(logπ − logπ_old)²)·w_IS, aggregated by loss_agg_mode; β = policy_loss.dro_beta > 0 (0.8.0: unknown loss mode)",
      madeBy:
        'verl/trainer/ppo/core_algos.py:compute_policy_loss_dro, verl/workers/config/actor.py:PolicyLossConfig.dro_beta, verl-project/verl#7245',
    },
    {
      id: 'is_seq_fraction_on_raw_weights',
      keys: ['algorithm.rollout_correction.rollout_is', 'algorithm.rollout_correction.rollout_is_threshold'],
      summary:
        'rollout_corr/rollout_is_seq_fraction_high and _low compare the raw per-row mean IS weight with the thresholds (0.8.0 used the truncated weights, so with TIS the high fraction was always 0); the weights themselves are unchanged',
      madeBy: 'verl/trainer/ppo/rollout_corr_helper.py:compute_is_metrics, verl-project/verl#6806',
    },
    {
      id: 'rs_k1_threshold_order',
      keys: ['algorithm.rollout_correction.rollout_rs_threshold'],
      summary:
        "a k1 rejection threshold 'lo_hi' with lo > hi raises ValueError (0.8.0 accepted it and rejected every row or token)",
      madeBy: 'verl/trainer/ppo/rollout_corr_helper.py:_parse_rollout_rs_thresholds (verl 0.9.0)',
    },
  ],
});

export function listReferenceStacks(): ReferenceStack[] {
  return stacks.list();
}

export function getReferenceStack(name: string = DEFAULT_REFERENCE_STACK): ReferenceStack {
  return stacks.get(name);
}

/** The stack whose verl release is `verl` (a golden file's `generator.verl`); null when none is. */
export function stackOfVerlVersion(verl: string): ReferenceStack | null {
  return listReferenceStacks().find((s) => s.verl === verl) ?? null;
}

/** The semantics of a stack name (undefined: the default stack). */
export function semanticsOf(name?: string | null): StackSemantics {
  return getReferenceStack(name ?? DEFAULT_REFERENCE_STACK).semantics;
}
