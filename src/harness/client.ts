/**
 * The only model interface a harness sees: a minimal OpenAI-compatible chat-completions client over a
 * fetch-style transport. It never looks at token ids. Every answer is checked field by field
 * (`validateChatResponse`): an empty or non-JSON body, no choice, or a malformed message is an error, never an
 * empty answer. Every request has a timeout. HTTP 429 (a paused proxy) is retried after the `Retry-After`
 * the server sent (capped), or with exponential backoff when it sent none, until the waits add up to
 * `maxRetryWaitMs` in total (`RetryWaits`).
 */
import type { ChatMessage, ToolDefinition } from '../core/trace/types';
import { type FetchLike, fetchTransport, type Transport, TransportError } from './http';
import { type ChatCompletionResponse, ResponseError, validateChatResponse } from './openai';

export { TransportError } from './http';
export { ResponseError } from './openai';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ClientOptions {
  /** e.g. `http://host/proxy/rollout/r1/attempt/0/mode/train/openai/v1`, or a bare path on a channel transport */
  baseUrl: string;
  apiKey?: string;
  /** AGL `AGL_EVENT_URL`: where the reward event goes */
  eventUrl?: string;
  transport: Transport;
  maxRetries?: number;
  sleep?: (ms: number) => Promise<void>;
  /** per request (default 300 s): a server that does not answer in time is an error */
  timeoutMs?: number;
  /** longest wait a `Retry-After` may ask for (default 60 s) */
  maxRetryAfterMs?: number;
  /** all 429 waits of one request together (default 300 s): then the 429 is the answer */
  maxRetryWaitMs?: number;
  now?: () => number;
}

/** The default per-request timeout: generous, since a model may take minutes on a long answer. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
export const DEFAULT_MAX_RETRY_WAIT_MS = 300_000;

/**
 * The waits of one request's 429 retries: each the server's `Retry-After` (capped at `capMs`) or an
 * exponential backoff (250 ms doubling, at most 8 s), all together at most `totalMs`.
 */
export class RetryWaits {
  private waited = 0;
  private attempt = 0;
  constructor(
    private readonly totalMs: number,
    private readonly capMs: number = DEFAULT_MAX_RETRY_AFTER_MS,
  ) {}

  /** The next wait in ms, or null when it would take the total past `totalMs`. */
  next(retryAfter: string | undefined, now = Date.now()): number | null {
    const backoff = Math.min(250 * 2 ** this.attempt, 8000);
    this.attempt++;
    const ms = retryAfterMs(retryAfter, this.capMs, now) ?? backoff;
    if (this.waited + ms > this.totalMs) return null;
    this.waited += ms;
    return ms;
  }

  get waitedMs(): number {
    return this.waited;
  }
}

/**
 * The wait a `Retry-After` header asks for, in ms (delta-seconds or an HTTP date), or null when it is absent
 * or unreadable; never more than `capMs` (a server asking for an hour, or 10^11 s, which setTimeout cannot
 * even hold, waits `capMs`).
 */
export function retryAfterMs(header: string | undefined, capMs: number, now = Date.now()): number | null {
  if (header === undefined) return null;
  const h = header.trim();
  if (h === '') return null;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(h)) ms = Number(h) * 1000;
  else {
    // an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT"); anything else is unreadable
    if (!/^[A-Za-z]{3}, /.test(h)) return null;
    const at = Date.parse(h);
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  if (!Number.isFinite(ms)) return capMs;
  return Math.min(Math.max(0, ms), capMs);
}

export interface CompletionParams {
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  max_tokens?: number;
  temperature?: number;
  seed?: number;
}

function pathOf(url: string): string {
  if (url.startsWith('/')) return url.replace(/\/+$/, '');
  const u = new URL(url);
  return u.pathname.replace(/\/+$/, '') + u.search;
}

export class ChatClient {
  private readonly opts: ClientOptions;
  constructor(opts: ClientOptions) {
    this.opts = opts;
  }

  private headers(): Record<string, string> {
    return this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {};
  }

  /** One request with the client's timeout; no answer in time rejects with a TransportError. */
  private async send(req: Parameters<Transport>[0]): Promise<Awaited<ReturnType<Transport>>> {
    const ms = this.opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const ctl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = new TransportError(`no answer from ${req.method} ${req.path} within ${ms} ms`);
        ctl.abort(e);
        reject(e);
      }, ms);
    });
    try {
      return await Promise.race([this.opts.transport(req, { signal: ctl.signal }), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async complete(params: CompletionParams): Promise<ChatCompletionResponse> {
    const sleep = this.opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    const maxRetries = this.opts.maxRetries ?? 20;
    const waits = new RetryWaits(
      this.opts.maxRetryWaitMs ?? DEFAULT_MAX_RETRY_WAIT_MS,
      this.opts.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    );
    const path = `${pathOf(this.opts.baseUrl)}/chat/completions`;
    for (let attempt = 0; ; attempt++) {
      const res = await this.send({
        method: 'POST',
        path,
        headers: this.headers(),
        body: { ...params, stream: false },
      });
      if (res.status === 200) {
        try {
          return validateChatResponse(res.body);
        } catch (e) {
          if (e instanceof ResponseError)
            throw new ResponseError(e.field, `${e.detail} (in the answer to POST ${path})`);
          throw e;
        }
      }
      if (res.status === 429 && attempt < maxRetries) {
        const wait = waits.next(res.headers['retry-after'], (this.opts.now ?? Date.now)());
        if (wait === null)
          throw new ApiError(
            429,
            `chat completion still refused with HTTP 429 after ${(waits.waitedMs / 1000).toFixed(1)} s of waiting (at most ${((this.opts.maxRetryWaitMs ?? DEFAULT_MAX_RETRY_WAIT_MS) / 1000).toFixed(0)} s in total): ${errorMessage(res.body)}`,
          );
        await sleep(wait);
        continue;
      }
      throw new ApiError(
        res.status,
        `chat completion failed with HTTP ${res.status}: ${errorMessage(res.body)}`,
      );
    }
  }

  /** Posts the AGL reward event; a no-op without an event URL. */
  async reportReward(value: number): Promise<void> {
    if (!this.opts.eventUrl) return;
    const res = await this.send({
      method: 'POST',
      path: pathOf(this.opts.eventUrl),
      headers: this.headers(),
      body: { event_type: 'reward', data: { value } },
    });
    if (res.status < 200 || res.status >= 300)
      throw new ApiError(
        res.status,
        `reward event failed with HTTP ${res.status}: ${errorMessage(res.body)}`,
      );
  }
}

/** The message of an error body (OpenAI's `{error: {message}}`, or the start of whatever text came back). */
function errorMessage(body: unknown): string {
  const m = (body as { error?: { message?: unknown } } | null)?.error?.message;
  if (typeof m === 'string') return m.slice(0, 500);
  if (typeof body === 'string') return body.slice(0, 300) || '(empty body)';
  if (body === null || body === undefined) return '(empty body)';
  try {
    return JSON.stringify(body).slice(0, 300);
  } catch {
    return '(unprintable body)';
  }
}

/**
 * A client for Agent Lightning's environment (`AGL_OPENAI_BASE_URL`, `AGL_EVENT_URL`, `AGL_KEY`), or null when
 * `AGL_OPENAI_BASE_URL` is unset. Both URLs are served by the same gateway origin.
 */
export function clientFromAglEnv(
  env: Record<string, string | undefined>,
  fetchFn?: FetchLike,
  limits: Pick<ClientOptions, 'timeoutMs' | 'maxRetryWaitMs'> = {},
): ChatClient | null {
  const base = env.AGL_OPENAI_BASE_URL;
  if (!base) return null;
  const origin = new URL(base).origin;
  const eventUrl = env.AGL_EVENT_URL;
  if (eventUrl && new URL(eventUrl).origin !== origin)
    throw new Error(`AGL_EVENT_URL (${eventUrl}) is not on the same origin as AGL_OPENAI_BASE_URL (${base})`);
  return new ChatClient({
    baseUrl: base,
    eventUrl,
    apiKey: env.AGL_KEY,
    transport: fetchTransport(origin, fetchFn),
    ...limits,
  });
}
