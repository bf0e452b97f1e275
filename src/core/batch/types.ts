/**
 * Training rows in ragged (CSR) layout: row r's response tokens are positions [offsets[r], offsets[r+1]) of
 * every per-token array. A padded verl tensor [B,T] is the special case offsets[r] = r·T, so the same
 * algorithms run on verl-shaped golden inputs and on ragged batches of millions of tokens without padding.
 */
export interface ResponseRows {
  nRows: number;
  /** length nRows + 1, offsets[0] = 0 */
  offsets: Int32Array;
  /** loss/response mask per token: 1 = trainable, 0 = observation, padding or hole */
  mask: Uint8Array;
}

/**
 * What sample building (`agentlightning.trace_aggregator.level`) produces from a batch of rollouts: one entry
 * per training row, prompts and responses in CSR layout. Upstream keeps these as padded tensors plus
 * `non_tensor_batch` lists; here they are flat typed arrays plus per-row metadata.
 */
export interface TrainingBatch extends ResponseRows {
  /** index into the source rollouts array, per row */
  rowRollout: Int32Array;
  /** per row: the rollout's id and its data id (GRPO group uid) */
  rolloutIds: string[];
  dataIds: string[];
  /** per row: transition level → the call index; trajectory level → -1 (upstream emits no turn index there) */
  turnIndex: Int32Array;
  /** per row: first call index that went into this row and how many calls were merged into it */
  firstCall: Int32Array;
  nCalls: Int32Array;
  /** per row: prompt longer than max prompt length (upstream `is_drop`) */
  isDrop: Uint8Array;
  /** prompt ids in CSR layout (after truncation), length nRows + 1 offsets */
  promptOffsets: Int32Array;
  promptIds: Int32Array;
  /** response ids, aligned with `mask` (offsets) */
  responseIds: Int32Array;
  /** per response token: the call it belongs to (observation tokens belong to the call whose prompt added them) */
  tokenCall: Int32Array;
  /** per response token: engine log-prob (0.0 on observation tokens); null when the batch has none */
  responseLogProbs: Float32Array | null;
  /** per row: the rollout's final reward as the trainer sees it (fillna applied) */
  reward: Float32Array;
}
