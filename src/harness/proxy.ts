/**
 * The in-page LLM proxy, modelled on Agent Lightning's gateway: harnesses call an OpenAI-compatible endpoint
 * under a per-rollout path; the proxy forwards to the engine, answers with vLLM-compatible token-id fields and
 * records every call as a core `ModelCall`. It also takes reward events and can be paused (HTTP 429 +
 * Retry-After) while weights are updated.
 *
 * Routes (an optional `/proxy` prefix is accepted on the rollout paths, as in AGL's gateway):
 *   GET  /healthz
 *   POST /rollout/{rid}/attempt/{aid}/mode/{train|val}/openai/v1/chat/completions
 *   POST /api/rollouts/{rid}/attempt/{aid}/events   body {"event_type":"reward","data":{"value":r}}
 *   POST /proxy/pause, POST /proxy/resume, GET /proxy/state
 *
 * Bounded under bad input: a prompt certainly over the context limit is refused before it is tokenized
 * (`ChatTokenizer.minTokenCount`), the number of open rollouts, of calls and rewards per rollout and of
 * remembered finished rollouts are capped, and a worker's channel (`scoped`) can only reach its own rollout.
 */
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { ModelCall, RewardEvent, ToolCall } from '../core/trace/types';
import type { ChatEngine } from './engines';
import { errorResponse, type HttpHandler, type HttpRequest, type HttpResponse } from './http';
import { type ChatCompletionResponse, RequestError, validateChatRequest } from './openai';
import { parseAssistantText } from './toolParser';

export interface ProxyOptions {
  engine: ChatEngine;
  /** renders prompts to ids for local engines; remote engines return their own prompt ids */
  tokenizer: ChatTokenizer | null;
  /** when set, every route but /healthz needs `Authorization: Bearer <key>` or `x-api-key` */
  apiKey?: string;
  maxContextTokens?: number;
  /** cap on max_tokens (also the default when the request gives none) */
  maxResponseTokens?: number;
  /** forced onto every request when set (AGL forces the training temperature) */
  temperature?: number;
  retryAfterSeconds?: number;
  now?: () => number;
  /** the policy version recorded on every call (a trainer bumps it after each weight sync: setPolicyVersion) */
  policyVersion?: number;
  /** rollouts recorded but not yet taken (default 10,000); calls for a new one beyond it get 503 */
  maxOpenRollouts?: number;
  /** calls per rollout (default 10,000), and as many rewards */
  maxCallsPerRollout?: number;
  /** called for every chat call refused with 429 while paused (a timeline draws these waits) */
  onPausedRejection?: (rolloutId: string, atMs: number) => void;
}

/** How many finished rollout ids are remembered (later calls for them get 409). */
const FINISHED_REMEMBERED = 100_000;

export interface RolloutRecord {
  rolloutId: string;
  attemptId: string;
  mode: 'train' | 'val';
  calls: ModelCall[];
  rewards: RewardEvent[];
}

const CHAT =
  /^(?:\/proxy)?\/rollout\/([^/]+)\/attempt\/([^/]+)\/mode\/([^/]+)\/openai\/v1\/chat\/completions$/;
const EVENTS = /^\/api\/rollouts\/([^/]+)\/attempt\/([^/]+)\/events$/;

function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body };
}

/** A percent-decoded path segment, or null when its encoding is malformed. */
function decodePart(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

export class LlmProxy {
  private readonly records = new Map<string, RolloutRecord>();
  private paused = false;
  private pauseReason = '';
  private inflight = 0;
  private drainWaiters: (() => void)[] = [];
  private nextCallIndex = new Map<string, number>();
  /** rollouts already taken (the most recent FINISHED_REMEMBERED): later calls and events get 409 */
  private readonly finished = new Set<string>();
  /** engine calls in flight per rollout, aborted when the rollout is taken */
  private readonly inflightCalls = new Map<string, Set<AbortController>>();
  readonly handle = (req: HttpRequest): Promise<HttpResponse> => this.route(req);

  /**
   * A handler for one worker's channel: it may call only the chat and event routes of the rollout it is
   * running now (`current()`), so a harness cannot write calls or rewards into another rollout, pause the
   * proxy, or reach it between jobs.
   */
  scoped(current: () => string | null): HttpHandler {
    return async (req) => {
      const path = req.path.split('?')[0];
      if (path === '/healthz') return this.route(req);
      const m = CHAT.exec(path) ?? EVENTS.exec(path);
      const own = current();
      const rid = m ? decodePart(m[1]) : null;
      if (!m || own === null || rid !== own)
        return errorResponse(
          403,
          own === null
            ? `this worker runs no rollout now; ${req.method} ${path} refused`
            : `this worker runs rollout '${own}' and may only call its chat and events routes; ${req.method} ${path} refused`,
          'permission_error',
        );
      return this.route(req);
    };
  }

  constructor(private readonly opts: ProxyOptions) {}

  get engine(): ChatEngine {
    return this.opts.engine;
  }

  /** Stop admitting calls (429) and resolve once in-flight calls have drained. */
  pause(reason = 'weight update'): Promise<void> {
    this.paused = true;
    this.pauseReason = reason;
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  resume(): void {
    this.paused = false;
    this.pauseReason = '';
  }

  /** The policy version recorded on calls admitted from now on (the weights the engine now serves). */
  setPolicyVersion(version: number): void {
    this.opts.policyVersion = version;
  }

  get policyVersion(): number | undefined {
    return this.opts.policyVersion;
  }

  /** The Retry-After sent with 429s while paused (a trainer sizes it to the expected pause). */
  setRetryAfter(seconds: number): void {
    if (!(seconds > 0) || !Number.isFinite(seconds))
      throw new Error(`retry-after must be a positive number of seconds, got ${seconds}`);
    this.opts.retryAfterSeconds = seconds;
  }

  state(): { paused: boolean; retry_after_seconds: number; reason: string | null; inflight: number } {
    return {
      paused: this.paused,
      retry_after_seconds: this.opts.retryAfterSeconds ?? 1,
      reason: this.paused ? this.pauseReason : null,
      inflight: this.inflight,
    };
  }

  record(rolloutId: string): RolloutRecord | undefined {
    return this.records.get(rolloutId);
  }

  /**
   * Removes and returns what was recorded for a rollout (the trainer consumes rollouts once). Calls still in
   * flight (a timed-out or cancelled worker) are returned as copies marked 499, so the returned record never
   * changes afterwards; later requests for the rollout get 409.
   */
  take(rolloutId: string): RolloutRecord | undefined {
    const r = this.records.get(rolloutId);
    this.records.delete(rolloutId);
    this.nextCallIndex.delete(rolloutId);
    this.finished.add(rolloutId);
    if (this.finished.size > FINISHED_REMEMBERED) {
      const oldest = this.finished.values().next().value as string;
      this.finished.delete(oldest);
    }
    // A call still waiting for its engine (a hung remote server) is abandoned now, not when it times out.
    for (const ctl of this.inflightCalls.get(rolloutId) ?? []) ctl.abort(new Error('the rollout ended'));
    this.inflightCalls.delete(rolloutId);
    if (!r) return r;
    const calls = r.calls.map((c) =>
      c.httpStatus === 0
        ? { ...c, httpStatus: 499, error: 'the rollout ended while this call was in flight' }
        : c,
    );
    return { ...r, calls, rewards: [...r.rewards] };
  }

  private recordFor(rid: string, aid: string, mode: 'train' | 'val'): RolloutRecord | HttpResponse {
    let r = this.records.get(rid);
    if (!r) {
      const max = this.opts.maxOpenRollouts ?? 10_000;
      if (this.records.size >= max)
        return errorResponse(
          503,
          `too many rollouts in progress (${this.records.size}); rollout '${rid}' was not opened`,
          'server_error',
          { 'retry-after': '5' },
        );
      r = { rolloutId: rid, attemptId: aid, mode, calls: [], rewards: [] };
      this.records.set(rid, r);
    }
    return r;
  }

  private authorized(req: HttpRequest): boolean {
    const key = this.opts.apiKey;
    if (!key) return true;
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) h[k.toLowerCase()] = v;
    return h.authorization === `Bearer ${key}` || h['x-api-key'] === key;
  }

  private async route(req: HttpRequest): Promise<HttpResponse> {
    const path = req.path.split('?')[0];
    if (path === '/healthz' && req.method === 'GET') return json(200, { status: 'ok' });
    if (!this.authorized(req)) return errorResponse(401, 'missing or wrong API key', 'authentication_error');
    if (path === '/proxy/state' && req.method === 'GET') return json(200, this.state());
    if (path === '/proxy/pause' && req.method === 'POST') {
      const reason = (req.body as { reason?: unknown })?.reason;
      void this.pause(typeof reason === 'string' ? reason : 'paused');
      return json(200, this.state());
    }
    if (path === '/proxy/resume' && req.method === 'POST') {
      this.resume();
      return json(200, this.state());
    }
    let m = CHAT.exec(path);
    if (m) {
      if (req.method !== 'POST') return errorResponse(405, `${req.method} not allowed; use POST`);
      const mode = m[3];
      if (mode !== 'train' && mode !== 'val')
        return errorResponse(404, `mode must be 'train' or 'val', got '${mode}'`, 'not_found_error');
      const rid = decodePart(m[1]);
      const aid = decodePart(m[2]);
      if (rid === null || aid === null) return errorResponse(400, `malformed percent-encoding in ${path}`);
      if (this.finished.has(rid))
        return errorResponse(409, `rollout '${rid}' has already finished`, 'invalid_request_error');
      return this.chat(rid, aid, mode, req.body);
    }
    m = EVENTS.exec(path);
    if (m) {
      if (req.method !== 'POST') return errorResponse(405, `${req.method} not allowed; use POST`);
      const rid = decodePart(m[1]);
      const aid = decodePart(m[2]);
      if (rid === null || aid === null) return errorResponse(400, `malformed percent-encoding in ${path}`);
      if (this.finished.has(rid))
        return errorResponse(409, `rollout '${rid}' has already finished`, 'invalid_request_error');
      return this.event(rid, aid, req.body);
    }
    return errorResponse(404, `no route for ${req.method} ${path}`, 'not_found_error');
  }

  private event(rid: string, aid: string, body: unknown): HttpResponse {
    const b = body as { event_type?: unknown; data?: { value?: unknown } } | null;
    if (typeof b !== 'object' || b === null)
      return errorResponse(400, 'event body must be a JSON object', undefined, {}, 'body');
    if (b.event_type !== 'reward')
      return errorResponse(
        400,
        `'event_type' must be 'reward', got ${JSON.stringify(b.event_type)}`,
        undefined,
        {},
        'event_type',
      );
    const value = b.data?.value;
    if (typeof value !== 'number' || !Number.isFinite(value))
      return errorResponse(400, "'data.value' must be a finite number", undefined, {}, 'data.value');
    const rec = this.recordFor(rid, aid, 'train');
    if ('status' in rec) return rec;
    const maxRewards = this.opts.maxCallsPerRollout ?? 10_000;
    if (rec.rewards.length >= maxRewards)
      return errorResponse(
        400,
        `rollout '${rid}' already has ${rec.rewards.length} rewards`,
        undefined,
        {},
        'body',
      );
    const ev: RewardEvent = { value, timestampMs: (this.opts.now ?? Date.now)() };
    if (rec.calls.length > 0) ev.callIndex = rec.calls.length - 1;
    rec.rewards.push(ev);
    return json(200, { ok: true });
  }

  private async chat(rid: string, aid: string, mode: 'train' | 'val', body: unknown): Promise<HttpResponse> {
    let req: ReturnType<typeof validateChatRequest>;
    try {
      req = validateChatRequest(body);
    } catch (e) {
      if (e instanceof RequestError)
        return errorResponse(400, e.message, 'invalid_request_error', {}, e.param);
      throw e;
    }
    if (req.stream)
      return errorResponse(
        400,
        "'stream': true is not supported: the proxy records token ids per call, which a stream does not carry; send stream: false",
        'invalid_request_error',
        {},
        'stream',
      );
    if (this.paused) {
      this.opts.onPausedRejection?.(rid, (this.opts.now ?? Date.now)());
      return errorResponse(429, `proxy paused (${this.pauseReason}); retry later`, 'rate_limit_error', {
        'retry-after': String(this.opts.retryAfterSeconds ?? 1),
      });
    }

    const now = this.opts.now ?? Date.now;
    const rec = this.recordFor(rid, aid, mode);
    if ('status' in rec) return rec;
    const maxCalls = this.opts.maxCallsPerRollout ?? 10_000;
    if (rec.calls.length >= maxCalls)
      return errorResponse(
        400,
        `rollout '${rid}' already has ${rec.calls.length} calls, the most one rollout may make`,
        'invalid_request_error',
      );
    const callIndex = this.nextCallIndex.get(rid) ?? 0;
    this.nextCallIndex.set(rid, callIndex + 1);
    const maxResponse = this.opts.maxResponseTokens ?? 1024;
    const maxContext = this.opts.maxContextTokens ?? 32768;
    const temperature = this.opts.temperature ?? req.temperature;
    const call: ModelCall = {
      request: {
        model: this.opts.engine.model,
        messages: req.messages,
        tools: req.tools,
        sampling: {
          temperature,
          top_p: req.top_p,
          max_tokens: req.max_tokens ?? req.max_completion_tokens,
          stop: req.stop,
          seed: req.seed,
        },
      },
      response: null,
      engine: {
        engine: this.opts.engine.kind,
        model: this.opts.engine.model,
        policyVersion: this.opts.policyVersion,
      },
      timings: { startMs: now(), endMs: now() },
      httpStatus: 0,
    };
    // Keep calls in the order they were admitted even if they finish out of order.
    rec.calls.push(call);
    const fail = (status: number, message: string, type: string, param?: string): HttpResponse => {
      call.httpStatus = status;
      call.error = message;
      if (call.timings) call.timings.endMs = now();
      return errorResponse(status, message, type, {}, param);
    };

    let promptIds: Int32Array | null = null;
    const tok = this.opts.tokenizer;
    if (tok) {
      let text: string;
      try {
        text = tok.renderChat(req.messages, { addGenerationPrompt: true, tools: req.tools });
      } catch (e) {
        return fail(
          400,
          `chat template failed on these messages: ${(e as Error).message}`,
          'invalid_request_error',
          'messages',
        );
      }
      // Refuse a prompt that is certainly too long before the (possibly slow) tokenization.
      const atLeast = tok.minTokenCount(text);
      if (atLeast >= maxContext)
        return fail(
          400,
          `This model's maximum context length is ${maxContext} tokens. However, your messages resulted in at least ${atLeast} tokens.`,
          'invalid_request_error',
          'messages',
        );
      promptIds = tok.encode(text);
      if (promptIds.length >= maxContext)
        return fail(
          400,
          `This model's maximum context length is ${maxContext} tokens. However, your messages resulted in ${promptIds.length} tokens.`,
          'invalid_request_error',
          'messages',
        );
      call.promptTokenIds = promptIds;
    }
    const requested = req.max_tokens ?? req.max_completion_tokens ?? maxResponse;
    const maxTokens = Math.max(1, Math.min(requested, maxResponse, maxContext - (promptIds?.length ?? 0)));

    this.inflight++;
    const ctl = new AbortController();
    const calls = this.inflightCalls.get(rid) ?? new Set<AbortController>();
    this.inflightCalls.set(rid, calls);
    calls.add(ctl);
    let out: Awaited<ReturnType<ChatEngine['generate']>>;
    try {
      out = await this.opts.engine.generate({
        rolloutId: rid,
        callIndex,
        messages: req.messages,
        tools: req.tools,
        promptIds,
        maxTokens,
        temperature,
        seed: req.seed,
        signal: ctl.signal,
      });
    } catch (e) {
      return fail(502, `engine failed: ${e instanceof Error ? e.message : String(e)}`, 'server_error');
    } finally {
      calls.delete(ctl);
      if (calls.size === 0 && this.inflightCalls.get(rid) === calls) this.inflightCalls.delete(rid);
      this.inflight--;
      if (this.inflight === 0 && this.drainWaiters.length) {
        for (const w of this.drainWaiters.splice(0)) w();
      }
    }

    let content: string | null;
    let toolCalls: ToolCall[];
    if (out.toolCalls !== undefined || out.content !== undefined) {
      content = out.content ?? null;
      toolCalls = out.toolCalls ?? [];
    } else {
      const parsed = parseAssistantText(out.text, `call_${callIndex}_`);
      content = parsed.content;
      toolCalls = parsed.toolCalls;
    }
    if (out.promptIds) call.promptTokenIds = out.promptIds;
    if (out.tokenIds.length > 0 || out.text === '') {
      call.responseTokenIds = out.tokenIds;
      call.responseLogProbs = out.logProbs;
      if (out.topK && out.topK.ids.length === out.tokenIds.length * out.topK.k) call.responseTopK = out.topK;
    }
    const finishReason = out.finishReason === 'length' ? 'length' : toolCalls.length ? 'tool_calls' : 'stop';
    const message = {
      role: 'assistant' as const,
      content,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    };
    call.response = { message, finishReason };
    call.httpStatus = 200;
    if (call.timings) call.timings.endMs = now();

    const ids = Array.from(out.tokenIds);
    // OpenAI's log-probs are numbers; an engine without a value for some token gives none for the call.
    const lpComplete = call.responseLogProbs !== undefined && !out.logProbs.some(Number.isNaN);
    const answer: ChatCompletionResponse = {
      id: `chatcmpl-${rid}-${callIndex}`,
      object: 'chat.completion',
      created: Math.floor(now() / 1000),
      model: this.opts.engine.model,
      prompt_token_ids: call.promptTokenIds ? Array.from(call.promptTokenIds) : null,
      choices: [
        {
          index: 0,
          message,
          finish_reason: finishReason,
          token_ids: call.responseTokenIds ? ids : null,
          logprobs: lpComplete
            ? {
                content: ids.map((id, i) => ({
                  token: tok ? tok.tokenText(id) : String(id),
                  logprob: out.logProbs[i],
                })),
              }
            : null,
        },
      ],
      usage: {
        prompt_tokens: call.promptTokenIds?.length ?? 0,
        completion_tokens: ids.length,
        total_tokens: (call.promptTokenIds?.length ?? 0) + ids.length,
      },
    };
    return json(200, answer);
  }
}
