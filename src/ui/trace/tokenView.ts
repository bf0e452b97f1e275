/**
 * Builds the chips' inputs (ids, texts, quantities) for a span of batch positions, or for a call that has no
 * training tokens (dropped, failed, unmerged) from its own engine ids and log-probs.
 */
import { signedArray, type WeightSign } from '../../core/pipeline/sign';
import type { ModelCall } from '../../core/trace/types';
import { gather, logProbGap, type TrainerValues } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import type { ColorBy } from '../tokens/quantities';
import type { TokenQuantity } from '../tokens/TokenChips';

export interface TokenView {
  ids: Int32Array;
  texts: string[];
  quantities: TokenQuantity[];
  /** which colourings have data here */
  available: Set<ColorBy>;
  /** tooltip lines of chip i: the engine's top-k alternatives there, when the call recorded them */
  alternatives?: (i: number) => string[];
}

/**
 * Tooltip lines for response position i of a call with recorded alternatives: rank, token text, id and
 * probability, most likely first.
 */
export function alternativeLines(call: ModelCall, i: number, tokenText: Map<number, string>): string[] {
  const a = call.responseTopK;
  if (!a || i < 0 || (i + 1) * a.k > a.ids.length) return [];
  const lines = [`top-${a.k} (engine)`];
  for (let j = 0; j < a.k; j++) {
    const id = a.ids[i * a.k + j];
    const p = Math.exp(a.logProbs[i * a.k + j]);
    lines.push(`${j + 1}. ${JSON.stringify(tokenText.get(id) ?? `<${id}>`)} · id ${id} · p ${p.toFixed(4)}`);
  }
  return lines;
}

/**
 * Tooltip lines for response position i of a call with a full-vocabulary comparison: KL and TV there, then the
 * tokens whose probabilities the rollout engine and the trainer disagree on most, with both probabilities.
 */
export function vocabMismatchLines(call: ModelCall, i: number, tokenText: Map<number, string>): string[] {
  const m = call.vocabMismatch;
  if (!m || i < 0 || i >= m.kl.length) return [];
  const lines = [
    `whole vocabulary: KL(rollout ‖ trainer) ${m.kl[i].toExponential(3)} · TV ${m.tv[i].toExponential(3)}`,
    `most disagreeing (p rollout / trainer)`,
  ];
  for (let j = 0; j < m.k; j++) {
    const id = m.ids[i * m.k + j];
    const pr = Math.exp(m.rolloutLogProbs[i * m.k + j]);
    const pt = Math.exp(m.trainerLogProbs[i * m.k + j]);
    lines.push(
      `${j + 1}. ${JSON.stringify(tokenText.get(id) ?? `<${id}>`)} · id ${id} · ${pr.toFixed(4)} / ${pt.toFixed(4)}`,
    );
  }
  return lines;
}

const VOCAB_KL_LABEL = 'KL(rollout ‖ trainer), whole vocabulary';
const VOCAB_TV_LABEL = 'TV, whole vocabulary';

/**
 * Adds a call's full-vocabulary KL and TV (per response token) to a view whose tokens are exactly its response
 * ids, with their tooltip lines after any the view has; a view of other tokens is left as it is.
 */
export function withVocabMismatch(v: TokenView, call: ModelCall, tokenText: Map<number, string>): TokenView {
  const m = call.vocabMismatch;
  if (!m || !alignsWithResponse(call, v.ids)) return v;
  v.quantities.push({ key: 'vocabKl', label: VOCAB_KL_LABEL, values: m.kl });
  v.quantities.push({ key: 'vocabTv', label: VOCAB_TV_LABEL, values: m.tv });
  v.available.add('vocabKl').add('vocabTv');
  const before = v.alternatives;
  v.alternatives = (i) => [...(before?.(i) ?? []), ...vocabMismatchLines(call, i, tokenText)];
  return v;
}

/** True when the batch tokens at `positions` are exactly the call's response ids, so position i is response token i. */
export function alignsWithResponse(call: ModelCall, ids: Int32Array): boolean {
  const r = call.responseTokenIds;
  if (!r || r.length !== ids.length) return false;
  for (let i = 0; i < r.length; i++) if (r[i] !== ids[i]) return false;
  return true;
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

const GAP_LABEL = 'log-prob gap (engine − trainer)';
const ENTROPY_LABEL = 'entropy (trainer)';
const TRAINER_LP_LABEL = 'log-prob (trainer)';

/**
 * Quantities of batch positions; the weight in the sign convention `sign` (labelled with it). With the
 * trainer's values of the positions (trainerValuesOf: a kept training trace), also the trainer's log-prob, its entropy and
 * the engine − trainer log-prob gap.
 */
export function batchTokenView(
  res: ComputeResult,
  positions: Int32Array,
  tokenText: Map<number, string>,
  sign: WeightSign,
  trainer?: TrainerValues | null,
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
  if (trainer) {
    const trainerLp = gather(trainer.logProbs, positions);
    const entropy = gather(trainer.entropy, positions);
    const gap = logProbGap(q[2].values, trainerLp, q[3].values);
    q.push({ key: 'trainerLogprob', label: TRAINER_LP_LABEL, values: trainerLp });
    q.push({ key: 'entropy', label: ENTROPY_LABEL, values: entropy });
    q.push({ key: 'gap', label: GAP_LABEL, values: gap });
    if (has(trainerLp)) available.add('trainerLogprob');
    if (has(entropy)) available.add('entropy');
    if (has(gap)) available.add('gap');
  }
  return { ids, texts: textsOf(ids, tokenText), quantities: q, available };
}

export function callTokenView(call: ModelCall, tokenText: Map<number, string>): TokenView {
  const ids = call.responseTokenIds ?? new Int32Array(0);
  const lp = call.responseLogProbs ?? new Float32Array(ids.length).fill(Number.NaN);
  const available = new Set<ColorBy>();
  if (call.responseLogProbs && has(lp)) available.add('logprob');
  const quantities: TokenQuantity[] = [{ key: 'logprob', label: 'log-prob (engine)', values: lp }];
  if (call.trainerLogProbs) {
    const entropy = call.trainerEntropy ?? new Float32Array(ids.length).fill(Number.NaN);
    const gap = logProbGap(call.responseLogProbs, call.trainerLogProbs);
    quantities.push({ key: 'trainerLogprob', label: TRAINER_LP_LABEL, values: call.trainerLogProbs });
    quantities.push({ key: 'entropy', label: ENTROPY_LABEL, values: entropy });
    quantities.push({ key: 'gap', label: GAP_LABEL, values: gap });
    if (has(call.trainerLogProbs)) available.add('trainerLogprob');
    if (has(entropy)) available.add('entropy');
    if (has(gap)) available.add('gap');
  }
  const alternatives = call.responseTopK ? (i: number) => alternativeLines(call, i, tokenText) : undefined;
  return withVocabMismatch(
    { ids, texts: textsOf(ids, tokenText), quantities, available, alternatives },
    call,
    tokenText,
  );
}
