/**
 * The only model interface a harness sees: a minimal OpenAI-compatible chat-completions client over a
 * fetch-style transport. It never looks at token ids. HTTP 429 (a paused proxy) is retried after the
 * `Retry-After` the server sent, or with exponential backoff when it sent none.
 */
import type { ChatMessage, ToolDefinition } from '../core/trace/types';
import { type FetchLike, fetchTransport, type Transport } from './http';
import type { ChatCompletionResponse } from './openai';

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

  async complete(params: CompletionParams): Promise<ChatCompletionResponse> {
    const sleep = this.opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    const maxRetries = this.opts.maxRetries ?? 20;
    const path = `${pathOf(this.opts.baseUrl)}/chat/completions`;
    for (let attempt = 0; ; attempt++) {
      const res = await this.opts.transport({
        method: 'POST',
        path,
        headers: this.headers(),
        body: { ...params, stream: false },
      });
      if (res.status === 200) return res.body as ChatCompletionResponse;
      const message =
        (res.body as { error?: { message?: string } })?.error?.message ??
        (typeof res.body === 'string' ? res.body.slice(0, 300) : JSON.stringify(res.body));
      if (res.status === 429 && attempt < maxRetries) {
        const ra = Number(res.headers['retry-after']);
        const backoff = Math.min(250 * 2 ** attempt, 8000);
        await sleep(Number.isFinite(ra) && ra >= 0 ? ra * 1000 : backoff);
        continue;
      }
      throw new ApiError(res.status, `chat completion failed with HTTP ${res.status}: ${message}`);
    }
  }

  /** Posts the AGL reward event; a no-op without an event URL. */
  async reportReward(value: number): Promise<void> {
    if (!this.opts.eventUrl) return;
    const res = await this.opts.transport({
      method: 'POST',
      path: pathOf(this.opts.eventUrl),
      headers: this.headers(),
      body: { event_type: 'reward', data: { value } },
    });
    if (res.status < 200 || res.status >= 300)
      throw new ApiError(
        res.status,
        `reward event failed with HTTP ${res.status}: ${JSON.stringify(res.body)}`,
      );
  }
}

/**
 * A client for Agent Lightning's environment (`AGL_OPENAI_BASE_URL`, `AGL_EVENT_URL`, `AGL_KEY`), or null when
 * `AGL_OPENAI_BASE_URL` is unset. Both URLs are served by the same gateway origin.
 */
export function clientFromAglEnv(
  env: Record<string, string | undefined>,
  fetchFn?: FetchLike,
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
  });
}
