/**
 * Builds the chips' inputs (ids, texts, quantities) for a span of batch positions, or for a call that has no
 * training tokens (dropped, failed, unmerged) from its own engine ids and log-probs.
 */
import { signedArray, type WeightSign } from '../../core/pipeline/sign';
import type { ModelCall, Rollout } from '../../core/trace/types';
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

/**
 * The trainer's log-prob and entropy at batch positions, from the calls of `rollout` (a kept step trace carries
 * them per response id). A call's trained tokens are its response ids in order, so the j-th mask-1 token of a
 * call within `positions` is its response id j (checked; NaN where it is not, and for observation tokens).
 * `positions` must start at or before each call's first token (a call's span or a whole row).
 */
export function trainerValuesAt(
  res: ComputeResult,
  positions: Int32Array,
  rollout: Rollout | undefined,
): { logprob: Float32Array; entropy: Float32Array; gap: Float32Array } | null {
  if (!rollout?.calls.some((c) => c.trainerLogProbs)) return null;
  const b = res.batch;
  const n = positions.length;
  const logprob = new Float32Array(n).fill(Number.NaN);
  const entropy = new Float32Array(n).fill(Number.NaN);
  const gap = new Float32Array(n).fill(Number.NaN);
  const cursor = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const p = positions[i];
    if (!b.mask[p]) continue;
    const ci = b.tokenCall[p];
    const j = cursor.get(ci) ?? 0;
    cursor.set(ci, j + 1);
    const call = rollout.calls[ci];
    const ids = call?.responseTokenIds;
    if (!call?.trainerLogProbs || !ids || j >= ids.length || ids[j] !== b.responseIds[p]) continue;
    logprob[i] = call.trainerLogProbs[j];
    entropy[i] = call.trainerEntropy?.[j] ?? Number.NaN;
    const engine = b.responseLogProbs ? b.responseLogProbs[p] : Number.NaN;
    gap[i] = engine - logprob[i];
  }
  return { logprob, entropy, gap };
}

function addTrainer(
  q: TokenQuantity[],
  available: Set<ColorBy>,
  t: { logprob: ArrayLike<number>; entropy: ArrayLike<number>; gap: ArrayLike<number> },
) {
  q.push(
    { key: 'trainerLogprob', label: 'log-prob (trainer)', values: t.logprob },
    { key: 'entropy', label: 'entropy (trainer)', values: t.entropy },
    { key: 'gap', label: 'log-prob gap (engine − trainer)', values: t.gap },
  );
  if (has(t.logprob)) available.add('trainerLogprob');
  if (has(t.entropy)) available.add('entropy');
  if (has(t.gap)) available.add('gap');
}

/** Quantities of batch positions; the weight in the sign convention `sign` (labelled with it). */
export function batchTokenView(
  res: ComputeResult,
  positions: Int32Array,
  tokenText: Map<number, string>,
  sign: WeightSign,
  rollout?: Rollout,
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
  const trainer = trainerValuesAt(res, positions, rollout);
  if (trainer) addTrainer(q, available, trainer);
  return { ids, texts: textsOf(ids, tokenText), quantities: q, available };
}

export function callTokenView(call: ModelCall, tokenText: Map<number, string>): TokenView {
  const ids = call.responseTokenIds ?? new Int32Array(0);
  const lp = call.responseLogProbs ?? new Float32Array(ids.length).fill(Number.NaN);
  const available = new Set<ColorBy>();
  if (call.responseLogProbs && has(lp)) available.add('logprob');
  const quantities: TokenQuantity[] = [{ key: 'logprob', label: 'log-prob (engine)', values: lp }];
  if (call.trainerLogProbs) {
    const t = call.trainerLogProbs;
    addTrainer(quantities, available, {
      logprob: t,
      entropy: call.trainerEntropy ?? new Float32Array(ids.length).fill(Number.NaN),
      gap: Float32Array.from(t, (v, i) => lp[i] - v),
    });
  }
  return { ids, texts: textsOf(ids, tokenText), quantities, available };
}
