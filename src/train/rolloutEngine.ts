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
import type { RolloutSampler, SyncCost } from '../engine/onnx/sampler';
import type { PolicyEngine } from '../engine/policy/types';
import { checkVocabPositions } from '../engine/sampling';
import type { ChatEngine, EngineCall, EngineOutput } from '../harness/engines';
import { PolicyChatEngine } from '../harness/policyEngine';
import { SamplerChatEngine } from '../harness/samplerEngine';

export type { SyncCost };

export interface RolloutEngine {
  /** e.g. 'policy-colocated', 'policy-copy', 'ort-wasm' */
  readonly kind: string;
  /** A chat engine for the proxy, sampling with these defaults (a proxy may force the temperature). */
  chat(sampling: { temperature: number; topP: number }): ChatEngine;
  /** the policy version whose weights are being served */
  readonly version: number;
  /**
   * Serve these trainer weights as `version` from now on (resolves once they are live). An engine that
   * re-exports or re-uploads the weights says what that cost.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an engine that only moves the version resolves to nothing
  syncWeights(params: Float32Array, version: number): Promise<SyncCost | void>;
  /**
   * The whole next-token distribution the engine would sample position p of `ids` from (log-probs over the
   * vocabulary at `temperature`, 1 ≤ p < ids.length), at the weights it serves now; absent where the engine
   * cannot give it.
   */
  vocabLogProbs?(ids: number[], positions: number[], temperature: number): Promise<Float32Array[]>;
  /** Resolves once the engine can serve (one that is built asynchronously); rejects with why it cannot. */
  ready?(): Promise<void>;
  dispose(): void;
}

export interface PolicyRolloutOptions {
  /** run seed: each call's sampling seed is derived from it, the rollout id and the call index */
  seed: number;
  model?: string;
}

/** Samples through a policy engine's own decode loop; the subclasses differ in what a weight sync does. */
abstract class PolicySamplingEngine implements RolloutEngine {
  abstract readonly kind: string;
  version = 0;
  constructor(
    protected readonly policy: PolicyEngine,
    private readonly tokenizer: ChatTokenizer,
    private readonly opts: PolicyRolloutOptions,
  ) {}
  chat(sampling: { temperature: number; topP: number }): ChatEngine {
    return new PolicyChatEngine(this.policy, this.tokenizer, { ...this.opts, ...sampling });
  }
  abstract syncWeights(params: Float32Array, version: number): Promise<undefined>;
  abstract dispose(): void;
}

/** Samples from the trainer's own engine: weights are already live after an update, so a sync moves the version. */
export class ColocatedRolloutEngine extends PolicySamplingEngine {
  readonly kind = 'policy-colocated';
  async syncWeights(_params: Float32Array, version: number): Promise<undefined> {
    this.version = version;
    return undefined;
  }
  /** the trainer's own forward: the same engine and weights, so its distributions are the trainer's */
  vocabLogProbs(ids: number[], positions: number[], temperature: number): Promise<Float32Array[]> {
    return policyVocabLogProbs(this.policy, ids, positions, temperature);
  }
  dispose(): void {}
}

/** Samples from its own engine instance; a sync copies the trainer's parameters into it. */
export class CopyRolloutEngine extends PolicySamplingEngine {
  readonly kind = 'policy-copy';
  async syncWeights(params: Float32Array, version: number): Promise<undefined> {
    await this.policy.setParams(params);
    this.version = version;
    return undefined;
  }
  vocabLogProbs(ids: number[], positions: number[], temperature: number): Promise<Float32Array[]> {
    return policyVocabLogProbs(this.policy, ids, positions, temperature);
  }
  dispose(): void {
    this.policy.dispose();
  }
}

/**
 * A policy engine's whole next-token distributions at positions of one sequence (a one-row batch at
 * `temperature`, 1 when greedy); an engine without `vocabLogProbs` is refused by name.
 */
export function policyVocabLogProbs(
  policy: PolicyEngine,
  ids: number[],
  positions: number[],
  temperature: number,
): Promise<Float32Array[]> {
  if (!policy.vocabLogProbs)
    throw new Error(`the ${policy.backend} policy engine does not expose its full next-token distribution`);
  checkVocabPositions(positions, ids.length, 'vocabLogProbs');
  return policy.vocabLogProbs(
    {
      tokens: Uint32Array.from(ids),
      mask: new Float32Array(ids.length).fill(1),
      batchSize: 1,
      seqLen: ids.length,
      temperature: temperature > 0 ? temperature : 1,
    },
    positions,
  );
}

/**
 * Another runtime samples: onnxruntime-web or transformers.js over the policy exported at a weight precision
 * (engine/onnx/). Each sync re-exports the trainer's weights and replaces the session or reloads the folder; its
 * log-probs differ from the trainer's by that runtime's numerics and the precision.
 */
export class SamplerRolloutEngine implements RolloutEngine {
  readonly kind: string;
  version = 0;
  constructor(
    /** the proxy's engine name: 'onnxruntime-web', 'transformers.js' */
    private readonly engineName: string,
    readonly sampler: RolloutSampler,
    private readonly tokenizer: ChatTokenizer,
    private readonly opts: PolicyRolloutOptions,
  ) {
    this.kind = `${sampler.backend}-${sampler.precision}`;
  }
  chat(sampling: { temperature: number; topP: number }): ChatEngine {
    return new SamplerChatEngine(this.engineName, this.sampler, this.tokenizer, {
      ...this.opts,
      ...sampling,
    });
  }
  async syncWeights(params: Float32Array, version: number): Promise<SyncCost> {
    const cost = await this.sampler.syncWeights(params);
    this.version = version;
    return cost;
  }
  get vocabLogProbs():
    | ((ids: number[], positions: number[], temperature: number) => Promise<Float32Array[]>)
    | undefined {
    const s = this.sampler;
    const f = s.vocabLogProbs;
    return f ? (ids, positions, temperature) => f.call(s, ids, positions, temperature) : undefined;
  }
  dispose(): void {
    void this.sampler.dispose().catch(() => {});
  }
}

/** A chat engine whose engine is still being built: it names itself and answers once it is there. */
class DeferredChat implements ChatEngine {
  inner: ChatEngine | null = null;
  constructor(
    private readonly label: string,
    private readonly get: () => Promise<ChatEngine>,
  ) {}
  get kind(): string {
    return this.inner?.kind ?? this.label;
  }
  get model(): string {
    return this.inner?.model ?? this.label;
  }
  async generate(call: EngineCall): Promise<EngineOutput> {
    return (await this.get()).generate(call);
  }
}

/**
 * A rollout engine that is built asynchronously (an ONNX session, a model load) behind one that can be handed
 * to the proxies at once. `ready()` resolves when it is built (the run waits for it before the first rollout)
 * or rejects with the reason it could not be.
 */
export class DeferredRolloutEngine implements RolloutEngine {
  private inner: RolloutEngine | null = null;
  private readonly built: Promise<RolloutEngine>;
  private readonly chats: { chat: DeferredChat; sampling: { temperature: number; topP: number } }[] = [];
  private disposed = false;

  constructor(
    /** what the engine will be (e.g. 'onnxruntime-web wasm int8'): its name until it is built */
    readonly kind: string,
    make: Promise<RolloutEngine>,
  ) {
    this.built = make.then((e) => {
      if (this.disposed) {
        e.dispose();
        throw new Error(`rollout engine ${kind}: disposed while it was being built`);
      }
      this.inner = e;
      for (const c of this.chats) c.chat.inner = e.chat(c.sampling);
      return e;
    });
    this.built.catch(() => {});
  }

  get version(): number {
    return this.inner?.version ?? 0;
  }

  /** the engine, once built */
  get engine(): RolloutEngine | null {
    return this.inner;
  }

  async ready(): Promise<void> {
    await this.built;
  }

  chat(sampling: { temperature: number; topP: number }): ChatEngine {
    if (this.inner) return this.inner.chat(sampling);
    const chat: DeferredChat = new DeferredChat(this.kind, async () => {
      await this.built;
      return chat.inner as ChatEngine;
    });
    this.chats.push({ chat, sampling });
    return chat;
  }

  async syncWeights(params: Float32Array, version: number): Promise<SyncCost | undefined> {
    return (await (await this.built).syncWeights(params, version)) ?? undefined;
  }

  get vocabLogProbs():
    | ((ids: number[], positions: number[], temperature: number) => Promise<Float32Array[]>)
    | undefined {
    const e = this.inner;
    const f = e?.vocabLogProbs;
    return e && f ? (ids, positions, temperature) => f.call(e, ids, positions, temperature) : undefined;
  }

  dispose(): void {
    this.disposed = true;
    this.inner?.dispose();
  }
}
