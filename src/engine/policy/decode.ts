/**
 * The decode loop both engines share: fill the KV cache with the prompt (`prefill`, which returns the
 * next-token logits, or else `step` one token at a time), then pick and feed tokens (with each position's top-k when asked)
 * until a stop id, maxTokens, or the end of the context. Token choice is host-side (sampling.ts), so equal logits give equal
 * tokens on every backend.
 */
import { mulberry32 } from '../../core/random';
import { pickToken, topKLogProbs } from '../sampling';
import type { SampleRequest, SampleResult } from './types';

export async function decodeLoop(
  req: SampleRequest,
  contextLength: number,
  step: (id: number, pos: number) => void | Promise<void>,
  readLogits: () => Promise<Float32Array>,
  prefill?: (promptIds: number[]) => Promise<Float32Array>,
): Promise<SampleResult> {
  const rand = mulberry32(req.seed);
  const stop = new Set(req.stopIds ?? []);
  let pos = 0;
  let logits: Float32Array;
  if (prefill) {
    logits = await prefill(req.promptIds);
    pos = req.promptIds.length;
  } else {
    for (const id of req.promptIds) await step(id, pos++);
    logits = await readLogits();
  }
  const tokenIds: number[] = [];
  const logProbs: number[] = [];
  const k = req.topK ?? 0;
  const topK: { ids: number[]; logProbs: number[] }[] | undefined = k > 0 ? [] : undefined;
  const done = (finishReason: SampleResult['finishReason']): SampleResult =>
    topK ? { tokenIds, logProbs, topK, finishReason } : { tokenIds, logProbs, finishReason };
  while (true) {
    if (tokenIds.length > 0) logits = await readLogits();
    const { id, logProb } = pickToken(logits, req.temperature, req.topP, rand);
    tokenIds.push(id);
    logProbs.push(logProb);
    topK?.push(topKLogProbs(logits, req.temperature, k));
    if (stop.has(id)) return done('stop');
    if (tokenIds.length >= req.maxTokens || pos >= contextLength) return done('length');
    await step(id, pos++);
  }
}
