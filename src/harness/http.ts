/**
 * HTTP-shaped messages that every harness transport carries: real HTTP (fetch), a MessageChannel between a
 * Web Worker / worker_thread and the in-page proxy, or a direct in-process call. The shapes and their runtime
 * validator are defined once here and used on both ends of a channel.
 */
import { isRecord } from '../core/wire';

export interface HttpRequest {
  method: string;
  /** path plus optional query, e.g. `/rollout/r1/attempt/0/mode/train/openai/v1/chat/completions` */
  path: string;
  headers: Record<string, string>;
  /** parsed JSON body, or undefined for none */
  body?: unknown;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * A fetch-style transport: one request in, one response out. Network failures reject with a TransportError;
 * an aborted `signal` rejects the request (and stops it where the transport can).
 */
export type Transport = (req: HttpRequest, opts?: { signal?: AbortSignal }) => Promise<HttpResponse>;

/** No answer: the server could not be reached, the connection broke, or the request was aborted or timed out. */
export class TransportError extends Error {}

/** Why `signal` was aborted, as a sentence. */
export function abortReason(signal: AbortSignal): string {
  const r = signal.reason;
  if (r instanceof Error && r.name === 'TimeoutError') return 'no answer in time (timed out)';
  if (r instanceof Error) return r.message;
  return typeof r === 'string' ? r : 'aborted';
}

/** A request-handling server (the proxy). */
export type HttpHandler = (req: HttpRequest) => Promise<HttpResponse>;

export type ChannelMessage =
  | { kind: 'http-request'; id: number; request: HttpRequest }
  | { kind: 'http-response'; id: number; response: HttpResponse };

function checkHeaders(v: unknown, where: string): Record<string, string> {
  if (!isRecord(v)) throw new Error(`${where}.headers must be an object of strings`);
  for (const [k, val] of Object.entries(v))
    if (typeof val !== 'string') throw new Error(`${where}.headers['${k}'] must be a string`);
  return v as Record<string, string>;
}

/** Validates one message that arrived on a harness channel; throws an Error naming the bad field. */
export function parseChannelMessage(data: unknown): ChannelMessage {
  if (!isRecord(data)) throw new Error('channel message must be an object');
  const { kind, id } = data;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0)
    throw new Error('channel message.id must be a non-negative integer');
  if (kind === 'http-request') {
    const r = data.request;
    if (!isRecord(r)) throw new Error('channel message.request must be an object');
    if (typeof r.method !== 'string' || !/^[A-Z]+$/.test(r.method))
      throw new Error('channel message.request.method must be an upper-case HTTP method');
    if (typeof r.path !== 'string' || !r.path.startsWith('/'))
      throw new Error("channel message.request.path must be a string starting with '/'");
    const headers = checkHeaders(r.headers, 'channel message.request');
    return { kind, id, request: { method: r.method, path: r.path, headers, body: r.body } };
  }
  if (kind === 'http-response') {
    const r = data.response;
    if (!isRecord(r)) throw new Error('channel message.response must be an object');
    if (typeof r.status !== 'number' || !Number.isInteger(r.status) || r.status < 100 || r.status > 599)
      throw new Error('channel message.response.status must be an HTTP status code (100-599)');
    const headers = checkHeaders(r.headers, 'channel message.response');
    return { kind, id, response: { status: r.status, headers, body: r.body } };
  }
  throw new Error(
    `channel message.kind must be 'http-request' or 'http-response', got ${JSON.stringify(kind)}`,
  );
}

/** The subset of MessagePort that both the DOM and node:worker_threads provide. */
export interface PortLike {
  postMessage(message: unknown): void;
  onmessage: ((ev: { data: unknown }) => void) | null;
  close?(): void;
}

/** Client end of a channel: requests go out as messages, responses come back matched by id. */
export function channelTransport(port: PortLike): Transport {
  let next = 0;
  const pending = new Map<number, { resolve: (r: HttpResponse) => void; reject: (e: Error) => void }>();
  port.onmessage = (ev) => {
    let msg: ChannelMessage;
    try {
      msg = parseChannelMessage(ev.data);
    } catch (e) {
      // A malformed reply cannot be matched to a request; fail every waiter rather than hang.
      for (const p of pending.values())
        p.reject(new Error(`bad message from proxy: ${(e as Error).message}`));
      pending.clear();
      return;
    }
    if (msg.kind !== 'http-response') return;
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    p.resolve(msg.response);
  };
  return (request, opts) =>
    new Promise<HttpResponse>((resolve, reject) => {
      const signal = opts?.signal;
      if (signal?.aborted) return reject(new TransportError(abortReason(signal)));
      const id = next++;
      const onAbort = () => {
        // the proxy may still answer; that answer is dropped
        pending.delete(id);
        reject(new TransportError(abortReason(signal as AbortSignal)));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      pending.set(id, {
        resolve: (r) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(r);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
      const msg: ChannelMessage = { kind: 'http-request', id, request };
      port.postMessage(msg);
    });
}

/** Server end of a channel: each valid request is handed to `handler`; invalid ones get a 400 when possible. */
export function serveChannel(port: PortLike, handler: HttpHandler): void {
  port.onmessage = (ev) => {
    let msg: ChannelMessage;
    try {
      msg = parseChannelMessage(ev.data);
    } catch (e) {
      const id = (ev.data as { id?: unknown })?.id;
      if (typeof id === 'number') {
        const reply: ChannelMessage = {
          kind: 'http-response',
          id,
          response: errorResponse(400, (e as Error).message, 'invalid_request_error'),
        };
        port.postMessage(reply);
      }
      return;
    }
    if (msg.kind !== 'http-request') return;
    const id = msg.id;
    handler(msg.request).then(
      (response) => port.postMessage({ kind: 'http-response', id, response } satisfies ChannelMessage),
      (e: unknown) =>
        port.postMessage({
          kind: 'http-response',
          id,
          response: errorResponse(
            500,
            `proxy error: ${e instanceof Error ? e.message : String(e)}`,
            'server_error',
          ),
        } satisfies ChannelMessage),
    );
  };
}

/** An OpenAI-style error body. */
export function errorResponse(
  status: number,
  message: string,
  type = 'invalid_request_error',
  extraHeaders: Record<string, string> = {},
  param?: string,
): HttpResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...extraHeaders },
    body: { error: { message, type, param: param ?? null, code: status } },
  };
}

export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<{
  status: number;
  headers: { forEach(cb: (v: string, k: string) => void): void };
  text(): Promise<string>;
}>;

/** Transport over real HTTP: `baseOrigin` + request path. Non-JSON bodies come back as strings. */
export function fetchTransport(
  baseOrigin: string,
  fetchFn: FetchLike = fetch as unknown as FetchLike,
): Transport {
  const origin = baseOrigin.replace(/\/+$/, '');
  return async (req, opts) => {
    const headers = { ...req.headers };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    const signal = opts?.signal;
    const failed = (e: unknown): never => {
      if (signal?.aborted) throw new TransportError(`${origin}: ${abortReason(signal)}`);
      const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
      const why = cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e));
      throw new TransportError(`cannot reach ${origin}: ${why}`);
    };
    let res: Awaited<ReturnType<FetchLike>>;
    try {
      res = await fetchFn(origin + req.path, {
        method: req.method,
        headers,
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal,
      });
    } catch (e) {
      return failed(e);
    }
    const outHeaders: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      outHeaders[k.toLowerCase()] = v;
    });
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      return failed(e);
    }
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // keep the raw text: an upstream HTML error page is still worth showing
    }
    return { status: res.status, headers: outHeaders, body };
  };
}
