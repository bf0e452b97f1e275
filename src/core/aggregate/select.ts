/**
 * Row selection on a TrainingBatch: upstream's `batch[indices]` (DataProto row gather), used for the trainer's
 * is_drop removal, trimming and balance_batch reordering. The result is a new CSR batch holding the given rows
 * in the given order; per-token arrays are copied.
 */
import type { TrainingBatch } from '../batch/types';

export function selectRows(batch: TrainingBatch, rows: ArrayLike<number>): TrainingBatch {
  const n = rows.length;
  const offsets = new Int32Array(n + 1);
  const promptOffsets = new Int32Array(n + 1);
  for (let k = 0; k < n; k++) {
    const r = rows[k];
    if (!(r >= 0 && r < batch.nRows))
      throw new Error(`selectRows: row ${r} is not in a batch of ${batch.nRows}`);
    offsets[k + 1] = offsets[k] + batch.offsets[r + 1] - batch.offsets[r];
    promptOffsets[k + 1] = promptOffsets[k] + batch.promptOffsets[r + 1] - batch.promptOffsets[r];
  }
  const T = offsets[n];
  const mask = new Uint8Array(T);
  const responseIds = new Int32Array(T);
  const tokenCall = new Int32Array(T);
  const lp = batch.responseLogProbs ? new Float32Array(T) : null;
  const promptIds = new Int32Array(promptOffsets[n]);
  const pick = <A extends Int32Array | Uint8Array | Float32Array>(a: A, make: (n: number) => A): A => {
    const out = make(n);
    for (let k = 0; k < n; k++) out[k] = a[rows[k]];
    return out;
  };
  for (let k = 0; k < n; k++) {
    const r = rows[k];
    const a = batch.offsets[r];
    const b = batch.offsets[r + 1];
    mask.set(batch.mask.subarray(a, b), offsets[k]);
    responseIds.set(batch.responseIds.subarray(a, b), offsets[k]);
    tokenCall.set(batch.tokenCall.subarray(a, b), offsets[k]);
    if (lp && batch.responseLogProbs) lp.set(batch.responseLogProbs.subarray(a, b), offsets[k]);
    promptIds.set(
      batch.promptIds.subarray(batch.promptOffsets[r], batch.promptOffsets[r + 1]),
      promptOffsets[k],
    );
  }
  return {
    nRows: n,
    offsets,
    mask,
    rowRollout: pick(batch.rowRollout, (m) => new Int32Array(m)),
    rolloutIds: Array.from(rows, (r) => batch.rolloutIds[r]),
    dataIds: Array.from(rows, (r) => batch.dataIds[r]),
    turnIndex: pick(batch.turnIndex, (m) => new Int32Array(m)),
    firstCall: pick(batch.firstCall, (m) => new Int32Array(m)),
    nCalls: pick(batch.nCalls, (m) => new Int32Array(m)),
    isDrop: pick(batch.isDrop, (m) => new Uint8Array(m)),
    promptOffsets,
    promptIds,
    responseIds,
    tokenCall,
    responseLogProbs: lp,
    reward: pick(batch.reward, (m) => new Float32Array(m)),
  };
}
