/**
 * What the agl-cpu template's two Node processes (the policy server and the trainer) must agree on: the
 * policy's shape and initial weights (seeded), and the catalogue the job templates are checked against.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import { loadCheckpointFile } from '../engine/checkpoint';
import { defaultConfig, type PolicyConfig } from '../engine/model';
import { createPolicyEngine } from '../engine/policy';
import type { PolicyEngine } from '../engine/policy/types';
import { BEHAVIOURS } from '../harness/harness';
import { HARNESSES } from '../harness/registry';
import { AGL_CPU_CONTEXT, type Catalogue } from '../server/protocol/templates';

export const HARNESS_CATALOGUE: Catalogue = { harnesses: Object.keys(HARNESSES), behaviours: BEHAVIOURS };

/** The policy of an agl-cpu run: the default shape sized for the tokenizer, context 256, seeded. */
export function aglCpuPolicyConfig(tok: ChatTokenizer, seed: number): PolicyConfig {
  return { ...defaultConfig, vocabSize: tok.vocabSize, contextLength: AGL_CPU_CONTEXT, seed: seed + 1 };
}

/** The CPU engine with the run's initial weights: a checkpoint when given, else the seeded initialisation. */
export async function aglCpuPolicy(
  tok: ChatTokenizer,
  seed: number,
  checkpoint?: string,
): Promise<PolicyEngine> {
  if (checkpoint) {
    const ck = await loadCheckpointFile(checkpoint);
    if (ck.config.vocabSize < tok.vocabSize)
      throw new Error(
        `checkpoint ${checkpoint}: vocabulary ${ck.config.vocabSize} < tokenizer's ${tok.vocabSize}`,
      );
    return (await createPolicyEngine({ backend: 'cpu', config: ck.config, params: ck.params })).engine;
  }
  return (await createPolicyEngine({ backend: 'cpu', config: aglCpuPolicyConfig(tok, seed) })).engine;
}
