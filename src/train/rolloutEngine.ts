/**
 * The rollout engine is not the trainer. The proxy asks a `RolloutEngine` for completions; the trainer updates
 * its own policy engine and then pushes weights to the rollout engine as an explicit, timed step
 * (`syncWeights`), after which calls are recorded under the new policy version. Implementations: our policy
 * sampling from the trainer's own engine instance (colocated, as verl's hybrid engine: the sync only moves the
 * version) or from a separate instance that receives a copy of the weights; an onnxruntime-web or
 * transformers.js engine implements the same interface (re-export or re-upload in `syncWeights`), and its
 * log-probs then differ from the trainer's — what rollout correction exists for.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { PolicyEngine } from '../engine/policy/types';
import type { ChatEngine } from '../harness/engines';
import { PolicyChatEngine } from '../harness/policyEngine';

export interface RolloutEngine {
  /** e.g. 'policy-colocated', 'policy-copy', 'ort-wasm' */
  readonly kind: string;
  /** A chat engine for the proxy, sampling with these defaults (a proxy may force the temperature). */
  chat(sampling: { temperature: number; topP: number }): ChatEngine;
  /** the policy version whose weights are being served */
  readonly version: number;
  /** Serve these trainer weights as `version` from now on (resolves once they are live). */
  syncWeights(params: Float32Array, version: number): Promise<void>;
  dispose(): void;
}

export interface PolicyRolloutOptions {
  /** run seed: each call's sampling seed is derived from it, the rollout id and the call index */
  seed: number;
  model?: string;
}

/** Samples from the trainer's own engine: weights are already live after an update, so a sync moves the version. */
export class ColocatedRolloutEngine implements RolloutEngine {
  readonly kind = 'policy-colocated';
  version = 0;
  constructor(
    private readonly policy: PolicyEngine,
    private readonly tokenizer: ChatTokenizer,
    private readonly opts: PolicyRolloutOptions,
  ) {}
  chat(sampling: { temperature: number; topP: number }): ChatEngine {
    return new PolicyChatEngine(this.policy, this.tokenizer, { ...this.opts, ...sampling });
  }
  async syncWeights(_params: Float32Array, version: number): Promise<void> {
    this.version = version;
  }
  dispose(): void {}
}

/** Samples from its own engine instance; a sync copies the trainer's parameters into it. */
export class CopyRolloutEngine implements RolloutEngine {
  readonly kind = 'policy-copy';
  version = 0;
  constructor(
    private readonly policy: PolicyEngine,
    private readonly tokenizer: ChatTokenizer,
    private readonly opts: PolicyRolloutOptions,
  ) {}
  chat(sampling: { temperature: number; topP: number }): ChatEngine {
    return new PolicyChatEngine(this.policy, this.tokenizer, { ...this.opts, ...sampling });
  }
  async syncWeights(params: Float32Array, version: number): Promise<void> {
    await this.policy.setParams(params);
    this.version = version;
  }
  dispose(): void {
    this.policy.dispose();
  }
}
