import { computeRolloutCorrection } from '../../algos/rolloutCorrection';
import { registerFamily } from '../registry';
import { nested, rowsFromMask, sameShape } from './tensors';

/** verl rollout_corr_helper.compute_rollout_correction_and_add_to_batch (golden family `rollout_correction`). */
registerFamily(
  'rollout_correction',
  (c, { stack }) => {
    const p = c.params;
    const rows = rowsFromMask(c.input.response_mask, 'response_mask');
    const isLevel = p.rollout_is;
    if (isLevel != null && typeof isLevel !== 'string')
      throw new Error(`rollout_is must be a string or null, got ${JSON.stringify(isLevel)}`);
    const r = computeRolloutCorrection(
      rows,
      sameShape(rows, c.input.old_log_prob, 'old_log_prob'),
      sameShape(rows, c.input.rollout_log_prob, 'rollout_log_prob'),
      {
        rolloutIs: (isLevel ?? null) as 'token' | 'sequence' | null,
        rolloutIsThreshold:
          p.rollout_is_threshold === undefined ? 2.0 : (p.rollout_is_threshold as number | string | null),
        rolloutIsBatchNormalize: Boolean(p.rollout_is_batch_normalize),
        rolloutRs: (p.rollout_rs as string | null) ?? null,
        rolloutRsThreshold: (p.rollout_rs_threshold as string | number | null) ?? null,
        stack,
      },
    );
    return {
      rollout_is_weights: r.rolloutIsWeights ? nested(r.rolloutIsWeights, rows.nRows, rows.T) : null,
      response_mask: nested(r.responseMask, rows.nRows, rows.T),
      metrics: r.metrics,
    };
  },
  ['response_mask'],
);
