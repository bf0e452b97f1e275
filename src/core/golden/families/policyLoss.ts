import { getPolicyLoss, policyLossGradient } from '../../algos/policyLoss';
import { lossModeOf } from '../../config/fields';
import { registerFamily } from '../registry';
import type { Json } from '../types';
import { nested, optNum, rowsFromMask, sameShape } from './tensors';

export function globalBatchInfo(v: Json | undefined) {
  const g = (v ?? {}) as Record<string, Json>;
  return {
    dpSize: optNum(g.dp_size) ?? 1,
    batchNumTokens: optNum(g.batch_num_tokens),
    globalBatchSize: optNum(g.global_batch_size),
    lossScaleFactor: optNum(g.loss_scale_factor),
  };
}

/**
 * verl get_policy_loss_fn(loss_mode) as the actor calls it (golden family `policy_loss`); `grad_log_prob`
 * (∂pg_loss/∂log_prob by autograd upstream) is compared when the case records it. `dro` (verl 0.9.0) returns
 * only `actor/ppo_kl` beside its loss, so its cases record pg_loss, ppo_kl and the gradient.
 */
registerFamily('policy_loss', (c, { stack }) => {
  const p = c.params;
  const rows = rowsFromMask(c.input.response_mask, 'response_mask');
  const lossMode = String(p.loss_mode);
  const dro = lossMode === 'dro';
  getPolicyLoss(lossMode, stack);
  const r = policyLossGradient(
    {
      rows,
      oldLogProb: sameShape(rows, c.input.old_log_prob, 'old_log_prob'),
      logProb: sameShape(rows, c.input.log_prob, 'log_prob'),
      advantages: sameShape(rows, c.input.advantages, 'advantages'),
      rolloutIsWeights:
        c.input.rollout_is_weights == null
          ? null
          : sameShape(rows, c.input.rollout_is_weights, 'rollout_is_weights'),
    },
    {
      lossMode: dro ? String(p.loss_agg_mode) : lossModeOf(String(p.loss_agg_mode), lossMode),
      policyLoss: dro ? 'dro' : 'vanilla',
      droBeta: optNum(p.dro_beta),
      stack,
      clipRatio: optNum(p.clip_ratio) ?? 0.2,
      clipRatioLow: optNum(p.clip_ratio_low),
      clipRatioHigh: optNum(p.clip_ratio_high),
      clipRatioC: optNum(p.clip_ratio_c) ?? 3,
      paddedWidth: rows.T,
      ...globalBatchInfo(p.global_batch_info),
    },
  );
  const out: Record<string, unknown> = dro
    ? { pg_loss: r.loss, ppo_kl: r.ppoKl }
    : {
        pg_loss: r.loss,
        pg_clipfrac: r.pgClipfrac,
        ppo_kl: r.ppoKl,
        pg_clipfrac_lower: r.pgClipfracLower,
      };
  const exp = c.expected as Record<string, unknown>;
  if (exp && typeof exp === 'object' && 'grad_log_prob' in exp)
    out.grad_log_prob = nested(r.grad, rows.nRows, rows.T);
  return out;
});
