/**
 * The project's own policy (WebGPU or its CPU reference) as an engine behind the proxy: the proxy renders the
 * chat template with the policy's tokenizer, the policy samples token ids with their log-probs, and the proxy
 * records exactly those — the token-in/token-out contract a trainer needs.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { TokenAlternatives } from '../core/trace/types';
import type { PolicyEngine } from '../engine/policy/types';
import { type ChatEngine, callSampling, type EngineCall, type EngineOutput, endOfTurnId } from './engines';

export interface PolicyChatEngineOptions {
  /** default sampling temperature when a request sets none */
  temperature?: number;
  topP?: number;
  /** run seed; each call's seed is derived from it and the (rollout, call) pair, so scheduling does not matter */
  seed?: number;
  /** a label for traces (e.g. the checkpoint's name) */
  model?: string;
  /** alternatives recorded per response token for the Trace view (TokenAlternatives); 0 records none */
  topK?: number;
}

/** The alternatives per token our own policy records into traces unless told otherwise. */
export const DEFAULT_TRACE_TOP_K = 5;

export class PolicyChatEngine implements ChatEngine {
  readonly kind = 'policy';
  readonly model: string;
  private readonly eot: number;

  constructor(
    readonly policy: PolicyEngine,
    private readonly tok: ChatTokenizer,
    private readonly opts: PolicyChatEngineOptions = {},
  ) {
    if (tok.vocabSize > policy.config.vocabSize)
      throw new Error(
        `tokenizer '${tok.name}' has ${tok.vocabSize} ids but the policy's vocabulary is ${policy.config.vocabSize}`,
      );
    this.eot = endOfTurnId(tok);
    this.model = opts.model ?? `policy-${policy.backend}/${tok.name}`;
  }

  async generate(call: EngineCall): Promise<EngineOutput> {
    const out = await this.policy.sample({
      ...callSampling(call, this.tok, this.policy.config.contextLength, 'the policy', this.opts),
      stopIds: [this.eot],
      topK: Math.min(this.opts.topK ?? DEFAULT_TRACE_TOP_K, this.policy.config.vocabSize),
    });
    const ids = out.tokenIds;
    const textIds = out.finishReason === 'stop' && ids[ids.length - 1] === this.eot ? ids.slice(0, -1) : ids;
    return {
      text: textIds.length ? this.tok.decode(textIds) : '',
      tokenIds: Int32Array.from(ids),
      logProbs: Float32Array.from(out.logProbs),
      ...(out.topK?.length ? { topK: flatAlternatives(out.topK) } : {}),
      finishReason: out.finishReason,
    };
  }
}

/** Per-token alternative lists (all of one length k) → the trace's flat, position-major form. */
export function flatAlternatives(perToken: { ids: number[]; logProbs: number[] }[]): TokenAlternatives {
  const k = perToken[0].ids.length;
  const ids = new Int32Array(perToken.length * k);
  const logProbs = new Float32Array(perToken.length * k);
  perToken.forEach((a, i) => {
    if (a.ids.length !== k || a.logProbs.length !== k)
      throw new Error(`token ${i} has ${a.ids.length} alternatives, token 0 has ${k}`);
    ids.set(a.ids, i * k);
    logProbs.set(a.logProbs, i * k);
  });
  return { k, ids, logProbs };
}
