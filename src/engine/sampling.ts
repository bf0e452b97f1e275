/**
 * Host-side token selection from one row of logits, shared by both engines so that equal logits give equal
 * tokens: temperature scaling, nucleus (top-p) truncation (Holtzman et al. 2020), and the log-prob of the
 * chosen token under the temperature-scaled distribution before truncation.
 */
import { topIndices } from '../core/topIndices';
import type { SampleRequest } from './policy/types';

export function checkSampleRequest(req: SampleRequest, vocabSize: number, contextLength: number): void {
  if (!Array.isArray(req.promptIds) || req.promptIds.length === 0)
    throw new Error('sample: promptIds must be a non-empty array of token ids');
  req.promptIds.forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
      throw new Error(`sample: promptIds[${i}] = ${id} is not a token id in [0, ${vocabSize})`);
  });
  if (req.promptIds.length >= contextLength)
    throw new Error(`sample: prompt has ${req.promptIds.length} tokens; the context holds ${contextLength}`);
  if (!(req.temperature >= 0) || !Number.isFinite(req.temperature))
    throw new Error(`sample: temperature must be ≥ 0, got ${req.temperature}`);
  if (!(req.topP > 0 && req.topP <= 1)) throw new Error(`sample: topP must be in (0, 1], got ${req.topP}`);
  if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1)
    throw new Error(`sample: maxTokens must be a positive integer, got ${req.maxTokens}`);
  if (!Number.isInteger(req.seed)) throw new Error(`sample: seed must be an integer, got ${req.seed}`);
  if (req.topK !== undefined && !(Number.isInteger(req.topK) && req.topK >= 0 && req.topK <= vocabSize))
    throw new Error(`sample: topK must be an integer in [0, ${vocabSize}], got ${req.topK}`);
}

/** log Σ exp(logits / t) over one logits row, max-shifted, in float64 arithmetic. */
function logSumExp(logits: ArrayLike<number>, t: number): number {
  const V = logits.length;
  let mx = Number.NEGATIVE_INFINITY;
  for (let v = 0; v < V; v++) mx = Math.max(mx, logits[v] / t);
  let sum = 0;
  for (let v = 0; v < V; v++) sum += Math.exp(logits[v] / t - mx);
  return mx + Math.log(sum);
}

/**
 * The whole next-token distribution of one logits row: log softmax(logits / temperature) over the vocabulary
 * (temperature 1 when greedy, as `topKLogProbs`), in float64 arithmetic and stored as float32.
 */
export function vocabLogSoftmax(logits: ArrayLike<number>, temperature: number): Float32Array {
  const V = logits.length;
  const t = temperature > 0 ? temperature : 1;
  const lse = logSumExp(logits, t);
  const out = new Float32Array(V);
  for (let v = 0; v < V; v++) out[v] = logits[v] / t - lse;
  return out;
}

/**
 * Checks the positions of a `vocabLogProbs` request on a sequence of n tokens: each predicts token p from the
 * tokens before it, so 1 ≤ p < n.
 */
export function checkVocabPositions(positions: readonly number[], n: number, what: string): void {
  for (const p of positions)
    if (!Number.isInteger(p) || p < 1 || p >= n)
      throw new Error(`${what}: position ${p} must be an integer in [1, ${n}) (the token it predicts)`);
}

/**
 * The k most likely tokens of softmax(logits / temperature) (temperature 1 when 0, as pickToken's log-prob),
 * most likely first (ties by id), with their log-probs: O(V·k), for the small k a trace records.
 */
export function topKLogProbs(
  logits: Float32Array,
  temperature: number,
  k: number,
): { ids: number[]; logProbs: number[] } {
  const V = logits.length;
  const t = temperature > 0 ? temperature : 1;
  const lse = logSumExp(logits, t);
  const ids = topIndices(logits, Math.min(k, V));
  return { ids, logProbs: ids.map((id) => logits[id] / t - lse) };
}

/** Picks a token from `logits` with `rand` (uniform [0,1)). */
export function pickToken(
  logits: Float32Array,
  temperature: number,
  topP: number,
  rand: () => number,
): { id: number; logProb: number } {
  const V = logits.length;
  const t = temperature > 0 ? temperature : 1;
  let mx = Number.NEGATIVE_INFINITY;
  for (let v = 0; v < V; v++) mx = Math.max(mx, logits[v] / t);
  const probs = new Float64Array(V);
  let sum = 0;
  for (let v = 0; v < V; v++) {
    probs[v] = Math.exp(logits[v] / t - mx);
    sum += probs[v];
  }
  const lse = mx + Math.log(sum);
  let id: number;
  if (temperature === 0) {
    id = 0;
    for (let v = 1; v < V; v++) if (logits[v] > logits[id]) id = v;
  } else {
    // Sort ids by probability (ties by id, so the order is total and reproducible), keep the smallest prefix
    // whose mass reaches topP, and draw within it.
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => probs[b] - probs[a] || a - b);
    let kept = 0;
    let mass = 0;
    while (kept < V && (kept === 0 || mass < topP * sum)) mass += probs[order[kept++]];
    let r = rand() * mass;
    id = order[kept - 1];
    for (let i = 0; i < kept; i++) {
      r -= probs[order[i]];
      if (r < 0) {
        id = order[i];
        break;
      }
    }
  }
  return { id, logProb: logits[id] / t - lse };
}
