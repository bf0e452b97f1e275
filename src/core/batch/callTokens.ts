import type { Rollout } from '../trace/types';
import type { TrainingBatch } from './types';

type Call = Rollout['calls'][number];

/**
 * Each mask-1 token t of the batch's rows with the call it came from (its rollout's call `tokenCall[t]`), that
 * call's response ids and j, the token's index among the row's mask-1 tokens of that call (engine token
 * source: a row's mask-1 tokens are its calls' response ids in order). Rows whose rollout is not in `rollouts`,
 * and calls without response ids, are passed over. Whether ids[j] is the batch's token is the visitor's check.
 */
export function forEachCallToken<R extends Rollout>(
  batch: TrainingBatch,
  rollouts: readonly R[],
  visit: (call: Call, ids: ArrayLike<number>, j: number, t: number) => void,
): void {
  for (let row = 0; row < batch.nRows; row++) {
    const rollout = rollouts[batch.rowRollout[row]];
    if (!rollout) continue;
    const cursor = new Map<number, number>();
    for (let t = batch.offsets[row]; t < batch.offsets[row + 1]; t++) {
      if (!batch.mask[t]) continue;
      const ci = batch.tokenCall[t];
      const call = rollout.calls[ci];
      const ids = call?.responseTokenIds;
      if (!call || !ids) continue;
      const j = cursor.get(ci) ?? 0;
      cursor.set(ci, j + 1);
      visit(call, ids, j, t);
    }
  }
}
