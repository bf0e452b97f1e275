/**
 * Builds the chips' inputs (ids, texts, quantities) for a span of batch positions, or for a call that has no
 * training tokens (dropped, failed, unmerged) from its own engine ids and log-probs.
 */
import { signedArray, type WeightSign } from '../../core/pipeline/sign';
import type { ModelCall } from '../../core/trace/types';
import { gather } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import type { ColorBy } from '../tokens/quantities';
import type { TokenQuantity } from '../tokens/TokenChips';

export interface TokenView {
  ids: Int32Array;
  texts: string[];
  quantities: TokenQuantity[];
  /** which colourings have data here */
  available: Set<ColorBy>;
}

export function textsOf(ids: ArrayLike<number>, tokenText: Map<number, string>): string[] {
  const out: string[] = new Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = tokenText.get(ids[i]) ?? `<${ids[i]}>`;
  return out;
}

function has(values: ArrayLike<number>): boolean {
  for (let i = 0; i < values.length; i++) if (!Number.isNaN(values[i])) return true;
  return false;
}

/** Quantities of batch positions; the weight in the sign convention `sign` (labelled with it). */
export function batchTokenView(
  res: ComputeResult,
  positions: Int32Array,
  tokenText: Map<number, string>,
  sign: WeightSign,
): TokenView {
  const { batch } = res;
  const ids = Int32Array.from(positions, (p) => batch.responseIds[p]);
  const q: TokenQuantity[] = [
    { key: 'weight', label: sign.label, values: signedArray(gather(res.tokenWeight, positions), sign) },
    { key: 'advantage', label: 'advantage', values: gather(res.tokenAdvantage, positions) },
    { key: 'logprob', label: 'log-prob (engine)', values: gather(batch.responseLogProbs, positions) },
    { key: 'mask', label: 'loss mask', values: gather(batch.mask, positions) },
  ];
  const available = new Set<ColorBy>(['weight', 'advantage', 'mask']);
  if (batch.responseLogProbs && has(q[2].values)) available.add('logprob');
  return { ids, texts: textsOf(ids, tokenText), quantities: q, available };
}

export function callTokenView(call: ModelCall, tokenText: Map<number, string>): TokenView {
  const ids = call.responseTokenIds ?? new Int32Array(0);
  const lp = call.responseLogProbs ?? new Float32Array(ids.length).fill(Number.NaN);
  const available = new Set<ColorBy>();
  if (call.responseLogProbs && has(lp)) available.add('logprob');
  return {
    ids,
    texts: textsOf(ids, tokenText),
    quantities: [{ key: 'logprob', label: 'log-prob (engine)', values: lp }],
    available,
  };
}
