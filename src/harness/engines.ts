/**
 * Engines behind the proxy. One small interface so a scripted expert, a seeded random-token sampler, a remote
 * OpenAI-compatible server and (later) the WebGPU policy are interchangeable: rendered prompt ids + messages +
 * sampling limits in; response text, token ids, per-token log-probs and a finish reason out.
 */
import { mulberry32 } from '../core/random';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { ChatMessage, TokenAlternatives, ToolCall, ToolDefinition } from '../core/trace/types';
import { RetryWaits } from './client';
import { abortReason, fetchTransport, type Transport, TransportError } from './http';
import { ResponseError, validateChatResponse } from './openai';

export interface EngineCall {
  rolloutId: string;
  callIndex: number;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** the chat template rendered with the generation prompt and encoded; null when the proxy has no tokenizer */
  promptIds: Int32Array | null;
  maxTokens: number;
  temperature?: number;
  seed?: number;
  /** aborted when the call is no longer wanted (its rollout ended or timed out) */
  signal?: AbortSignal;
}

export interface EngineOutput {
  /** the generated text without the end-of-turn token */
  text: string;
  tokenIds: Int32Array;
  logProbs: Float32Array;
  /** the k most likely tokens at each response position, when the engine records them (the trace keeps them) */
  topK?: TokenAlternatives;
  finishReason: 'stop' | 'length';
  /** the engine's own prompt ids, when it rendered the prompt itself (remote servers) */
  promptIds?: Int32Array;
  /** tool calls the engine already parsed (a remote server with a tool parser) */
  toolCalls?: ToolCall[];
  content?: string | null;
}

export interface ChatEngine {
  readonly kind: string;
  readonly model: string;
  generate(call: EngineCall): Promise<EngineOutput>;
}

/** The id that ends an assistant turn: `<|im_end|>` for ChatML templates (Qwen), else the common alternatives. */
export function endOfTurnId(tok: ChatTokenizer): number {
  for (const t of ['<|im_end|>', '<|eot_id|>', '<|end|>', '</s>', '<|endoftext|>']) {
    const id = tok.addedTokens.get(t);
    if (id !== undefined) return id;
  }
  throw new Error(`tokenizer '${tok.name}' has no known end-of-turn token`);
}

/** Hash of a string to 32 bits (FNV-1a), to derive per-call seeds that do not depend on scheduling order. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Plays a script (the harness's expert) through the run's tokenizer: the ids are exactly what the tokenizer
 * makes of the expert's text, ending with the end-of-turn id. A script has no distribution, so the log-probs are
 * drawn from a seeded generator in [-1.5, 0) (a confident policy) — finite, one per id, reproducible.
 */
export class ScriptedEngine implements ChatEngine {
  readonly kind = 'scripted';
  readonly model: string;
  private readonly eot: number;
  constructor(
    private readonly tok: ChatTokenizer,
    private readonly script: (call: EngineCall) => string,
    private readonly seed = 0,
  ) {
    this.model = `scripted/${tok.name}`;
    this.eot = endOfTurnId(tok);
  }

  async generate(call: EngineCall): Promise<EngineOutput> {
    const text = this.script(call);
    let ids = this.tok.encode(text);
    let finishReason: 'stop' | 'length' = 'stop';
    let outText = text;
    if (ids.length >= call.maxTokens) {
      ids = ids.slice(0, call.maxTokens);
      outText = this.tok.decode(ids);
      finishReason = 'length';
    } else {
      const withEot = new Int32Array(ids.length + 1);
      withEot.set(ids);
      withEot[ids.length] = this.eot;
      ids = withEot;
    }
    const rand = mulberry32(hash32(`${this.seed}:${call.rolloutId}:${call.callIndex}`));
    const logProbs = new Float32Array(ids.length);
    for (let i = 0; i < ids.length; i++) logProbs[i] = Math.log(0.22 + 0.78 * (1 - rand()));
    return { text: outText, tokenIds: ids, logProbs, finishReason };
  }
}

/** A harness's scripted expert as an engine: each call is answered for the task of its rollout in `taskOf`. */
export function expertEngine<T>(
  tok: ChatTokenizer,
  harness: { expert(task: T, messages: ChatMessage[], tools?: ToolDefinition[]): string },
  taskOf: ReadonlyMap<string, T>,
  seed: number,
): ScriptedEngine {
  return new ScriptedEngine(
    tok,
    (call) => {
      const task = taskOf.get(call.rolloutId);
      if (!task) throw new Error(`no task for rollout '${call.rolloutId}'`);
      return harness.expert(task, call.messages, call.tools);
    },
    seed,
  );
}

/**
 * Samples ids uniformly from the tokenizer's base vocabulary (no added tokens), ending the turn with the
 * end-of-turn id with probability `stopProb` per step. Log-probs are the exact log-probabilities of that
 * distribution. Seeded per (run seed, rollout, call), so results do not depend on worker scheduling.
 */
export class RandomEngine implements ChatEngine {
  readonly kind = 'random';
  readonly model: string;
  private readonly eot: number;
  private readonly baseVocab: number;
  constructor(
    private readonly tok: ChatTokenizer,
    private readonly seed = 0,
    private readonly stopProb = 1 / 40,
  ) {
    this.model = `random/${tok.name}`;
    this.eot = endOfTurnId(tok);
    let minAdded = tok.vocabSize;
    for (const id of tok.addedTokens.values()) if (id < minAdded) minAdded = id;
    this.baseVocab = minAdded;
  }

  async generate(call: EngineCall): Promise<EngineOutput> {
    const rand = mulberry32(hash32(`${this.seed}:${call.rolloutId}:${call.callIndex}`));
    const ids: number[] = [];
    const lps: number[] = [];
    const lpToken = Math.log((1 - this.stopProb) / this.baseVocab);
    const lpStop = Math.log(this.stopProb);
    let finishReason: 'stop' | 'length' = 'length';
    while (ids.length < call.maxTokens) {
      if (rand() < this.stopProb) {
        ids.push(this.eot);
        lps.push(lpStop);
        finishReason = 'stop';
        break;
      }
      ids.push(Math.floor(rand() * this.baseVocab));
      lps.push(lpToken);
    }
    const textIds = finishReason === 'stop' ? ids.slice(0, -1) : ids;
    return {
      // An immediate end-of-turn is a legal, empty answer (the HF decoder refuses an empty id list).
      text: textIds.length ? this.tok.decode(textIds) : '',
      tokenIds: Int32Array.from(ids),
      logProbs: Float32Array.from(lps),
      finishReason,
    };
  }
}

export interface RemoteEngineOptions {
  /** token ids must be below this: the vocabulary of the tokenizer the trace is read with */
  vocabSize?: number;
  /** named in errors about the vocabulary */
  vocabName?: string;
  /** per request (default 300 s) */
  timeoutMs?: number;
  /** all 429 waits of one call together (default 60 s; `RetryWaits`) */
  maxRetryWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Forwards each call to an OpenAI-compatible server (vLLM, SGLang, another proxy) asking for token ids and
 * log-probs (`return_token_ids`, `logprobs`), and takes ids, log-probs and the prompt ids from its answer.
 * The answer is checked field by field before anything is recorded: a server that ignores
 * `return_token_ids`, returns ids outside the vocabulary, or log-probs that are not one per token is an error
 * naming the field (the proxy records the call as failed with it), never a silently wrong trace. HTTP 429 (a
 * paused upstream proxy) is retried after its Retry-After, the waits bounded in total (`maxRetryWaitMs`).
 */
export class RemoteEngine implements ChatEngine {
  readonly kind = 'remote';
  private readonly transport: Transport;
  private readonly path: string;
  private readonly origin: string;
  constructor(
    baseUrl: string,
    readonly model: string,
    private readonly apiKey = '',
    transport?: Transport,
    private readonly opts: RemoteEngineOptions = {},
  ) {
    const url = new URL(baseUrl.replace(/\/+$/, ''));
    this.origin = url.origin;
    this.path = `${url.pathname.replace(/\/+$/, '')}/chat/completions`;
    this.transport = transport ?? fetchTransport(url.origin);
  }

  async generate(call: EngineCall): Promise<EngineOutput> {
    const headers: Record<string, string> = {};
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    const timeoutMs = this.opts.timeoutMs ?? 300_000;
    const waits = new RetryWaits(this.opts.maxRetryWaitMs ?? 60_000);
    const sleep = this.opts.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
    for (;;) {
      const res = await this.once(call, headers, timeoutMs);
      if (res.status !== 429) return this.answer(res);
      const wait = waits.next(res.headers['retry-after']);
      if (wait === null)
        throw new Error(
          `remote engine still answered 429 after ${(waits.waitedMs / 1000).toFixed(1)} s of waiting (at most ${((this.opts.maxRetryWaitMs ?? 60_000) / 1000).toFixed(0)} s in total)`,
        );
      if (call.signal?.aborted)
        throw new TransportError(`remote engine call cancelled: ${abortReason(call.signal)}`);
      await sleep(wait);
    }
  }

  private async once(
    call: EngineCall,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<Awaited<ReturnType<Transport>>> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    let res: Awaited<ReturnType<Transport>>;
    try {
      res = await this.transport(
        {
          method: 'POST',
          path: this.path,
          headers,
          body: {
            model: this.model,
            messages: call.messages,
            tools: call.tools,
            max_tokens: call.maxTokens,
            temperature: call.temperature,
            seed: call.seed,
            logprobs: true,
            return_token_ids: true,
          },
        },
        { signal },
      );
    } catch (e) {
      if (signal.aborted && !(call.signal?.aborted ?? false))
        throw new TransportError(`remote engine ${this.origin} gave no answer within ${timeoutMs} ms`);
      if (signal.aborted) throw new TransportError(`remote engine call cancelled: ${abortReason(signal)}`);
      throw e;
    }
    return res;
  }

  private answer(res: Awaited<ReturnType<Transport>>): EngineOutput {
    if (res.status !== 200) {
      const msg = (res.body as { error?: { message?: string } })?.error?.message ?? JSON.stringify(res.body);
      throw new Error(`remote engine answered ${res.status}: ${String(msg).slice(0, 500)}`);
    }
    let body: ReturnType<typeof validateChatResponse>;
    try {
      body = validateChatResponse(res.body, {
        requireTokenIds: true,
        vocabSize: this.opts.vocabSize,
        vocabName: this.opts.vocabName,
      });
    } catch (e) {
      if (e instanceof ResponseError)
        throw new ResponseError(e.field, `${e.detail} (remote engine answer; nothing was recorded from it)`);
      throw e;
    }
    const choice = body.choices[0];
    const ids = choice.token_ids as number[];
    const lps = choice.logprobs?.content.map((c) => c.logprob);
    const content = choice.message.content;
    return {
      text: content ?? '',
      content,
      toolCalls: choice.message.tool_calls,
      tokenIds: Int32Array.from(ids),
      // no log-probs at all: every value absent (NaN), as the trace model records it
      logProbs: lps ? Float32Array.from(lps) : new Float32Array(ids.length).fill(Number.NaN),
      finishReason: choice.finish_reason === 'length' ? 'length' : 'stop',
      promptIds: Int32Array.from(body.prompt_token_ids as number[]),
    };
  }
}

/**
 * The sampling request of a call to an engine with a `contextLength`-token context: the call's prompt ids (else
 * the chat template's), the temperature and top-p (the call's, else the engine's options, else 1), the call's
 * token budget capped by the room the context leaves, and the seed derived from the run seed, rollout and call.
 * `holder` names the context's owner in the error when the prompt leaves no room.
 */
export function callSampling(
  call: EngineCall,
  tok: ChatTokenizer,
  contextLength: number,
  holder: string,
  opts: { seed?: number; temperature?: number; topP?: number },
): { promptIds: number[]; temperature: number; topP: number; maxTokens: number; seed: number } {
  const prompt =
    call.promptIds ?? tok.encodeChat(call.messages, { tools: call.tools, addGenerationPrompt: true });
  const room = contextLength - prompt.length;
  if (room < 1)
    throw new Error(`prompt has ${prompt.length} tokens; ${holder}'s context is ${contextLength}`);
  return {
    promptIds: Array.from(prompt),
    temperature: call.temperature ?? opts.temperature ?? 1,
    topP: opts.topP ?? 1,
    maxTokens: Math.min(call.maxTokens, room),
    seed: hash32(`${call.seed ?? opts.seed ?? 0}:${call.rolloutId}:${call.callIndex}`),
  };
}
