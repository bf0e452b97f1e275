/**
 * Any RolloutSampler (onnxruntime-web, transformers.js: engine/onnx/) as an engine behind the proxy. Like
 * PolicyChatEngine: the proxy renders the chat template with the run's tokenizer, the sampler returns ids and
 * log-probs under its own numerics, and the proxy records exactly those. Seeds are derived per (run seed, rollout,
 * call), so results do not depend on worker scheduling.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { RolloutSampler, SyncCost } from '../engine/onnx/sampler';
import { type ChatEngine, callSampling, type EngineCall, type EngineOutput, endOfTurnId } from './engines';

export interface SamplerChatEngineOptions {
  /** default sampling temperature when a request sets none */
  temperature?: number;
  topP?: number;
  /** run seed; each call's seed is derived from it and the (rollout, call) pair */
  seed?: number;
  /** a label for traces; default `<backend>-<precision>/<tokenizer>` */
  model?: string;
  /** extra ids that end a turn (a brought model's generation_config eos ids) */
  stopIds?: number[];
}

export class SamplerChatEngine implements ChatEngine {
  readonly model: string;
  private readonly stopIds: number[];
  /** weight syncs so far (the policy version the engine serves, counted from its first weights) */
  syncs = 0;

  constructor(
    readonly kind: string,
    readonly sampler: RolloutSampler,
    private readonly tok: ChatTokenizer,
    private readonly opts: SamplerChatEngineOptions = {},
  ) {
    if (tok.vocabSize > sampler.vocabSize)
      throw new Error(
        `tokenizer '${tok.name}' has ${tok.vocabSize} ids but the model's vocabulary is ${sampler.vocabSize}`,
      );
    this.stopIds = [...new Set([endOfTurnId(tok), ...(opts.stopIds ?? [])])];
    this.model = opts.model ?? `${sampler.backend}-${sampler.precision}/${tok.name}`;
  }

  async generate(call: EngineCall): Promise<EngineOutput> {
    const out = await this.sampler.sample({
      ...callSampling(call, this.tok, this.sampler.contextLength, 'the model', this.opts),
      stopIds: this.stopIds,
    });
    const ids = out.tokenIds;
    const textIds =
      out.finishReason === 'stop' && this.stopIds.includes(ids[ids.length - 1]) ? ids.slice(0, -1) : ids;
    return {
      text: textIds.length ? this.tok.decode(textIds) : '',
      tokenIds: Int32Array.from(ids),
      logProbs: Float32Array.from(out.logProbs),
      finishReason: out.finishReason,
    };
  }

  /** New trainer weights to the engine (re-export or re-upload); the proxy should be paused around it. */
  async syncWeights(params: Float32Array): Promise<SyncCost> {
    const cost = await this.sampler.syncWeights(params);
    this.syncs++;
    return cost;
  }

  dispose(): Promise<void> {
    return this.sampler.dispose();
  }
}
