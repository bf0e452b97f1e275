/**
 * The padded verl view of built rows, as `RolloutAdapter.get_train_data_batch` lays its tensors out: prompts
 * LEFT-padded to max_prompt_length, responses RIGHT-padded to max_response_length, `attention_mask` over both,
 * `position_ids = clamp(cumsum(attention_mask) - 1, min=0)`, and `token_level_scores` with the reward at the
 * last attended position (`argmax(positions * attention_mask)`), sliced to the response part. Row-major [B, T]
 * flat arrays. For shipping a batch to a verl trainer and for checking against upstream tensors.
 */
import type { BuildResult } from './buildTrainingBatch';

export interface PaddedBatch {
  nRows: number;
  maxPromptLength: number;
  maxResponseLength: number;
  /** [B, P] */
  prompts: Int32Array;
  /** [B, R] */
  responses: Int32Array;
  /** [B, P + R] */
  inputIds: Int32Array;
  attentionMask: Uint8Array;
  positionIds: Int32Array;
  /** [B, R]: 0 on observation tokens and padding */
  responseMask: Uint8Array;
  tokenLevelScores: Float32Array;
  /** [B, R], 0.0 on padding; null when the batch has no rollout log-probs */
  rolloutLogProbs: Float32Array | null;
  /** [B] */
  isDropMask: Uint8Array;
}

export function padTrainingBatch(
  res: BuildResult,
  lengths: { maxPromptLength: number; maxResponseLength: number },
): PaddedBatch {
  const b = res.batch;
  const P = lengths.maxPromptLength;
  const R = lengths.maxResponseLength;
  const T = P + R;
  const B = b.nRows;
  const pad = res.padTokenId;
  const prompts = new Int32Array(B * P).fill(pad);
  const responses = new Int32Array(B * R).fill(pad);
  const inputIds = new Int32Array(B * T);
  const attentionMask = new Uint8Array(B * T);
  const positionIds = new Int32Array(B * T);
  const responseMask = new Uint8Array(B * R);
  const tokenLevelScores = new Float32Array(B * R);
  const rolloutLogProbs = b.responseLogProbs ? new Float32Array(B * R) : null;
  for (let r = 0; r < B; r++) {
    const pa = b.promptOffsets[r];
    const pl = b.promptOffsets[r + 1] - pa;
    const ra = b.offsets[r];
    const rl = b.offsets[r + 1] - ra;
    if (pl > P || rl > R)
      throw new Error(`row ${r}: prompt ${pl} / response ${rl} tokens exceed the padded lengths ${P} / ${R}`);
    prompts.set(b.promptIds.subarray(pa, pa + pl), r * P + (P - pl));
    responses.set(b.responseIds.subarray(ra, ra + rl), r * R);
    responseMask.set(b.mask.subarray(ra, ra + rl), r * R);
    if (rolloutLogProbs && b.responseLogProbs)
      rolloutLogProbs.set(b.responseLogProbs.subarray(ra, ra + rl), r * R);
    inputIds.set(prompts.subarray(r * P, (r + 1) * P), r * T);
    inputIds.set(responses.subarray(r * R, (r + 1) * R), r * T + P);
    attentionMask.fill(1, r * T + (P - pl), r * T + P);
    attentionMask.fill(1, r * T + P, r * T + P + rl);
    let cum = 0;
    let last = 0;
    for (let t = 0; t < T; t++) {
      const m = attentionMask[r * T + t];
      cum += m;
      positionIds[r * T + t] = Math.max(cum - 1, 0);
      if (m) last = t;
    }
    // Upstream writes the score at the last attended position and keeps the response slice of it.
    if (last >= P) tokenLevelScores[r * R + (last - P)] = b.reward[r];
  }
  return {
    nRows: B,
    maxPromptLength: P,
    maxResponseLength: R,
    prompts,
    responses,
    inputIds,
    attentionMask,
    positionIds,
    responseMask,
    tokenLevelScores,
    rolloutLogProbs,
    isDropMask: b.isDrop.slice(),
  };
}
