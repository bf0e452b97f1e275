/**
 * The full-vocabulary train–inference mismatch of a step (`lab.vocab_mismatch`): for every call with token ids,
 * the rollout engine's and the trainer's whole next-token distributions at each response position of the same
 * prefix (prompt ids + the response ids before it), both at the weights that train on the step — measured before
 * the update and before the rollout engine's weight sync — and at the rollout temperature. The rollout side is
 * the rollout engine's own forward (onnxruntime-web at its precision; the colocated engine is the trainer's own
 * instance, so its distributions are the trainer's and the divergence is zero by construction); the trainer side
 * is the policy engine's forward. The staleness of an asynchronous run is not part of it. Core compares them
 * (core/vocabMismatch.ts).
 */

import type { Rollout } from '../core/trace/types';
import { tokenDivergence, VOCAB_MISMATCH_TOP_K, vocabMismatchOf } from '../core/vocabMismatch';
import type { PolicyEngine } from '../engine/policy/types';
import { policyVocabLogProbs, type RolloutEngine } from './rolloutEngine';

export interface VocabMismatchEngines {
  policy: PolicyEngine;
  rolloutEngine: RolloutEngine;
  /** the engine's name for messages (`actor_rollout_ref.rollout.name`) */
  rolloutName: string;
  temperature: number;
  contextLength: number;
  k?: number;
}

/**
 * The rollouts with `vocabMismatch` on every call that has prompt and response ids fitting the context (copies;
 * the input is not changed). An engine that cannot give its whole distribution is refused by name.
 */
export async function measureVocabMismatch(rollouts: Rollout[], e: VocabMismatchEngines): Promise<Rollout[]> {
  const rolloutSide = e.rolloutEngine.vocabLogProbs?.bind(e.rolloutEngine);
  if (!rolloutSide)
    throw new Error(
      `lab.vocab_mismatch: the rollout engine '${e.rolloutName}' (${e.rolloutEngine.kind}) does not expose its full next-token distribution`,
    );
  if (!e.policy.vocabLogProbs)
    throw new Error(
      `lab.vocab_mismatch: the ${e.policy.backend} trainer engine does not expose its full next-token distribution`,
    );
  const k = Math.min(e.k ?? VOCAB_MISMATCH_TOP_K, e.policy.config.vocabSize);
  const out: Rollout[] = [];
  for (const r of rollouts) {
    const calls = [];
    for (const c of r.calls) {
      const prompt = c.promptTokenIds;
      const response = c.responseTokenIds;
      if (!prompt || !response || response.length === 0 || prompt.length === 0) {
        calls.push(c);
        continue;
      }
      const ids = [...prompt, ...response];
      if (ids.length > e.contextLength) {
        calls.push(c);
        continue;
      }
      const positions = Array.from(response, (_, j) => prompt.length + j);
      const ro = await rolloutSide(ids, positions, e.temperature);
      const tr = await policyVocabLogProbs(e.policy, ids, positions, e.temperature);
      calls.push({
        ...c,
        vocabMismatch: vocabMismatchOf(
          positions.map((_, j) => tokenDivergence(ro[j], tr[j], k)),
          k,
        ),
      });
    }
    out.push({ ...r, calls });
  }
  return out;
}
