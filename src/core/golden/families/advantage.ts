import { computeAdvantage } from '../../algos/advantage';
import { indexGroups } from '../../algos/groups';
import { registerFamily } from '../registry';
import { nested, rowsFromMask, sameShape, strings, vector } from './tensors';

/** verl ray_trainer.compute_advantage → the registered estimator (golden family `advantage`). */
registerFamily('advantage', (c) => {
  const p = c.params;
  const rows = rowsFromMask(c.input.response_mask, 'response_mask');
  const tokenLevelRewards = sameShape(rows, c.input.token_level_rewards, 'token_level_rewards');
  const groups = indexGroups(strings(c.input.index, 'index'));
  const cfg = (p.config ?? {}) as Record<string, unknown>;
  const out = computeAdvantage(
    String(p.adv_estimator),
    {
      rows,
      tokenLevelRewards,
      groups,
      rewardBaselines:
        c.input.reward_baselines == null ? undefined : vector(c.input.reward_baselines, 'reward_baselines'),
    },
    {
      // grpo takes the argument; grpo_passk reads config.norm_adv_by_std_in_grpo (both carry the same value)
      normAdvByStd: Boolean(
        p.adv_estimator === 'grpo_passk' ? (cfg.norm_adv_by_std_in_grpo ?? true) : p.norm_adv_by_std_in_grpo,
      ),
      epsilon: typeof p.epsilon === 'number' ? p.epsilon : 1e-6,
      gamma: typeof cfg.gamma === 'number' ? cfg.gamma : typeof p.gamma === 'number' ? p.gamma : 1,
    },
  );
  return {
    advantages: nested(out.advantages, rows.nRows, rows.T),
    returns: nested(out.returns, rows.nRows, rows.T),
  };
});
