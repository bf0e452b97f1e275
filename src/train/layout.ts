/**
 * The batch layout between core's rows and the policy engine: training row r (prompt ids p_r, response ids
 * s_r, CSR in a TrainingBatch) becomes engine row b = prompt ++ response, right-padded to a common length T.
 * The engine's per-position arrays are aligned with tokens: logProbs[b, t] = log π(tokens[b,t] | tokens[b,<t]),
 * so response token j of row r sits at t = |p_r| + j. `index` maps every response token of the laid-out rows
 * (in row order) to that flat position, which is all gather (engine → rows) and scatter (rows → engine) need.
 *
 * The sign: core's weights are ∂L/∂logπ of a loss L to minimise; `trainStep` / `accumulateGrads` take w and
 * minimise −Σ w·logπ, so w = −∂L/∂logπ. `scatterWeights` is the one place that negation happens.
 */
import type { Batch } from '../engine/model';

/** The CSR pieces of a TrainingBatch the layout needs. */
export interface RowTokens {
  nRows: number;
  offsets: Int32Array;
  mask: Uint8Array;
  promptOffsets: Int32Array;
  promptIds: Int32Array;
  responseIds: Int32Array;
}

export interface EngineLayout {
  batch: Batch;
  /** per response token of the chosen rows, in row order: flat index b·T + t into the engine arrays */
  index: Int32Array;
  /** the chosen rows, in engine order */
  rows: Int32Array;
}

/** Padded lengths used, so a WebGPU engine builds few graph shapes (each ≈ 1.5× the previous). */
const BUCKETS = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096];

export function paddedLength(n: number, contextLength: number): number {
  for (const b of BUCKETS) if (b >= n) return Math.min(b, contextLength);
  return contextLength;
}

export class LayoutError extends Error {}

/**
 * Lays the rows `rows` (indices into `src`) out as one right-padded engine batch. The mask is 1 on response
 * positions (the engine reports log-probs and entropies there, 0 elsewhere).
 */
export function layoutRows(
  src: RowTokens,
  rows: ArrayLike<number>,
  opts: { contextLength: number; temperature?: number; rolloutIds?: string[] },
): EngineLayout {
  const B = rows.length;
  if (B === 0) throw new LayoutError('layoutRows: no rows');
  let longest = 0;
  let nResp = 0;
  for (let k = 0; k < B; k++) {
    const r = rows[k];
    const p = src.promptOffsets[r + 1] - src.promptOffsets[r];
    const s = src.offsets[r + 1] - src.offsets[r];
    if (p < 1) throw new LayoutError(`row ${r}: empty prompt (the first response token needs a context)`);
    if (p + s > opts.contextLength)
      throw new LayoutError(
        `row ${r}${opts.rolloutIds ? ` (rollout ${opts.rolloutIds[r]})` : ''} has ${p + s} tokens (prompt ${p} + response ${s}); the policy's context is ${opts.contextLength}`,
      );
    longest = Math.max(longest, p + s);
    nResp += s;
  }
  const T = paddedLength(longest, opts.contextLength);
  const tokens = new Uint32Array(B * T);
  const mask = new Float32Array(B * T);
  // every real token: the prompt is context the response attends to (mask marks only the response)
  const attention = new Float32Array(B * T);
  const index = new Int32Array(nResp);
  let at = 0;
  for (let b = 0; b < B; b++) {
    const r = rows[b];
    const p0 = src.promptOffsets[r];
    const p = src.promptOffsets[r + 1] - p0;
    const s0 = src.offsets[r];
    const s = src.offsets[r + 1] - s0;
    const base = b * T;
    for (let t = 0; t < p; t++) tokens[base + t] = src.promptIds[p0 + t];
    attention.fill(1, base, base + p + s);
    for (let j = 0; j < s; j++) {
      tokens[base + p + j] = src.responseIds[s0 + j];
      mask[base + p + j] = 1;
      index[at++] = base + p + j;
    }
  }
  return {
    batch: { tokens, mask, attention, batchSize: B, seqLen: T, temperature: opts.temperature },
    index,
    rows: Int32Array.from(rows),
  };
}

/** Engine per-position values → per response token of the laid-out rows. */
export function gatherTokens(engine: Float32Array, layout: EngineLayout): Float32Array {
  const out = new Float32Array(layout.index.length);
  for (let i = 0; i < out.length; i++) out[i] = engine[layout.index[i]];
  return out;
}

/**
 * Per-response-token ∂L/∂logπ of the laid-out rows → the engine's per-position weights w = −∂L/∂logπ
 * (zero on prompt and padding positions).
 */
export function scatterWeights(grads: Float32Array, layout: EngineLayout): Float32Array {
  if (grads.length !== layout.index.length)
    throw new LayoutError(
      `scatterWeights: ${grads.length} gradients for ${layout.index.length} response tokens`,
    );
  const w = new Float32Array(layout.batch.batchSize * layout.batch.seqLen);
  for (let i = 0; i < grads.length; i++) w[layout.index[i]] = -grads[i];
  return w;
}

/**
 * Rows split into engine micro-batches of at most `maxRows`, shortest first (less padding; the order is
 * fixed by (length, row), so it is deterministic). Gradients of one mini-batch's micro-batches add up, so
 * the split changes nothing but speed and memory.
 */
export function microBatches(src: RowTokens, rows: ArrayLike<number>, maxRows: number): number[][] {
  const len = (r: number) =>
    src.promptOffsets[r + 1] - src.promptOffsets[r] + src.offsets[r + 1] - src.offsets[r];
  const order = Array.from(rows).sort((a, b) => len(a) - len(b) || a - b);
  const out: number[][] = [];
  for (let i = 0; i < order.length; i += maxRows) out.push(order.slice(i, i + maxRows));
  return out;
}
