import { aggLoss } from '../../algos/aggLoss';
import { registerFamily } from '../registry';
import { optNum, rowsFromMask, sameShape } from './tensors';

/** verl core_algos.agg_loss (golden family `agg_loss`). */
registerFamily('agg_loss', (c, { stack }) => {
  const p = c.params;
  const rows = rowsFromMask(c.input.loss_mask, 'loss_mask');
  const loss = aggLoss(rows, sameShape(rows, c.input.loss_mat, 'loss_mat'), String(p.loss_agg_mode), {
    dpSize: optNum(p.dp_size) ?? 1,
    batchNumTokens: optNum(p.batch_num_tokens),
    globalBatchSize: optNum(p.global_batch_size),
    lossScaleFactor: optNum(p.loss_scale_factor),
    paddedWidth: rows.T,
    stack,
  });
  return { loss };
});
