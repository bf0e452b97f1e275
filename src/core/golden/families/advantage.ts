import { computeAdvantage } from '../../algos/advantage';
import { indexGroups } from '../../algos/groups';
import { bf16, type FloatDType } from '../../algos/numeric';
import { registerFamily } from '../registry';
import { nested, rowsFromMask, sameShape, strings, vector } from './tensors';

/** verl ray_trainer.compute_advantage → the registered estimator (golden family `advantage`). */
registerFamily('advantage', (c, { stack }) => {
  const p = c.params;
  const rows = rowsFromMask(c.input.response_mask, 'response_mask');
  const tokenLevelRewards = sameShape(rows, c.input.token_level_rewards, 'token_level_rewards');
  // `reward_dtype` (optional, default float32): the dtype token_level_rewards has upstream
  if (p.reward_dtype !== undefined && p.reward_dtype !== 'float32' && p.reward_dtype !== 'bfloat16')
    throw new Error(`reward_dtype must be float32 or bfloat16, got ${JSON.stringify(p.reward_dtype)}`);
  const dtype: FloatDType = p.reward_dtype === 'bfloat16' ? 'bfloat16' : 'float32';
  if (dtype === 'bfloat16')
    for (let i = 0; i < tokenLevelRewards.length; i++) tokenLevelRewards[i] = bf16(tokenLevelRewards[i]);
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
      dtype,
      stack,
    },
  );
  const res: Record<string, unknown> = {
    advantages: nested(out.advantages, rows.nRows, rows.T),
    returns: nested(out.returns, rows.nRows, rows.T),
  };
  if (p.reward_dtype !== undefined) res.advantages_dtype = out.dtype;
  return res;
});
