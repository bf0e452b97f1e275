/**
 * The project's policy as an OpenAI-compatible inference server, for Agent Lightning's gateway to forward to
 * (`POST /api/models` registers `{model, endpoint: http://host:port/v1, version}`). The gateway's proxy sends
 * plain `POST {endpoint}/chat/completions` with `return_token_ids` and `logprobs`; the answer carries vLLM's
 * token-id fields (`prompt_token_ids`, `choices[0].token_ids`, `choices[0].logprobs.content[].logprob`). Each
 * request goes through the harness's LlmProxy (chat template, tool-call parsing, vLLM fields) under a
 * per-request id, and the proxy's record of it is dropped afterwards: the gateway is the recorder here.
 *
 *   GET  /healthz                    {"status": "ok"}
 *   GET  /v1/models                  the one model, with the policy version it serves
 *   POST /v1/chat/completions        OpenAI chat completion + vLLM token ids
 *   GET  /weights                    {version, params, config}
 *   POST /weights                    {version, params_f32_base64}: replaces the weights (a trainer's weight push)
 */
import { createHash } from 'node:crypto';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import { layoutOf } from '../engine/model';
import type { PolicyEngine } from '../engine/policy/types';
import { errorResponse, type HttpRequest, type HttpResponse } from '../harness/http';
import { PolicyChatEngine } from '../harness/policyEngine';
import { LlmProxy } from '../harness/proxy';

export interface PolicyServerOptions {
  engine: PolicyEngine;
  tokenizer: ChatTokenizer;
  model: string;
  /** cap and default of max_tokens per call */
  maxTokens: number;
  seed: number;
  apiKey?: string;
}

export interface WeightPush {
  version: number;
  params_f32_base64: string;
}

/** Checks a weight push against the engine's parameter count; returns the decoded parameters. */
export function parseWeightPush(body: unknown, expected: number): { version: number; params: Float32Array } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new Error('weight push must be a JSON object {version, params_f32_base64}');
  const b = body as Record<string, unknown>;
  if (typeof b.version !== 'number' || !Number.isInteger(b.version) || b.version < 0)
    throw new Error(`version must be a non-negative integer, got ${JSON.stringify(b.version)}`);
  if (typeof b.params_f32_base64 !== 'string') throw new Error('params_f32_base64 must be a base64 string');
  const bytes = Buffer.from(b.params_f32_base64, 'base64');
  if (bytes.length !== expected * 4)
    throw new Error(
      `params_f32_base64 holds ${bytes.length} bytes; this policy has ${expected} float32 parameters (${expected * 4} bytes)`,
    );
  const params = new Float32Array(expected);
  new Uint8Array(params.buffer).set(bytes);
  for (let i = 0; i < params.length; i++)
    if (!Number.isFinite(params[i]))
      throw new Error(`params_f32_base64: parameter ${i} is not finite (${params[i]})`);
  return { version: b.version, params };
}

export function encodeWeightPush(params: Float32Array, version: number): WeightPush {
  return {
    version,
    params_f32_base64: Buffer.from(params.buffer, params.byteOffset, params.byteLength).toString('base64'),
  };
}

function json(status: number, body: unknown): HttpResponse {
  return { status, headers: { 'content-type': 'application/json' }, body };
}

export class PolicyServer {
  version = 0;
  private next = 0;
  private readonly proxy: LlmProxy;
  private readonly nParams: number;
  readonly handle = (req: HttpRequest): Promise<HttpResponse> => this.route(req);

  constructor(private readonly opts: PolicyServerOptions) {
    const chat = new PolicyChatEngine(opts.engine, opts.tokenizer, { seed: opts.seed, model: opts.model });
    this.proxy = new LlmProxy({
      engine: chat,
      tokenizer: opts.tokenizer,
      maxContextTokens: opts.engine.config.contextLength,
      maxResponseTokens: opts.maxTokens,
    });
    this.nParams = layoutOf(opts.engine.config).total;
  }

  private authorized(req: HttpRequest): boolean {
    if (!this.opts.apiKey) return true;
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) h[k.toLowerCase()] = v;
    return h.authorization === `Bearer ${this.opts.apiKey}` || h['x-api-key'] === this.opts.apiKey;
  }

  private async route(req: HttpRequest): Promise<HttpResponse> {
    const path = req.path.split('?')[0];
    if (path === '/healthz' && req.method === 'GET') return json(200, { status: 'ok' });
    if (!this.authorized(req)) return errorResponse(401, 'missing or wrong API key', 'authentication_error');
    if (path === '/v1/models' && req.method === 'GET')
      return json(200, {
        object: 'list',
        data: [{ id: this.opts.model, object: 'model', owned_by: 'harness-lab', version: this.version }],
      });
    if (path === '/v1/chat/completions') {
      if (req.method !== 'POST') return errorResponse(405, `${req.method} not allowed; use POST`);
      const rid = `req-${this.next++}`;
      try {
        const out = await this.proxy.handle({
          ...req,
          path: `/rollout/${rid}/attempt/0/mode/train/openai/v1/chat/completions`,
        });
        return out;
      } finally {
        this.proxy.take(rid);
      }
    }
    if (path === '/weights') {
      if (req.method === 'GET') {
        const params = await this.opts.engine.getParams();
        const digest = createHash('sha256')
          .update(Buffer.from(params.buffer, params.byteOffset, params.byteLength))
          .digest('hex');
        return json(200, {
          version: this.version,
          params: this.nParams,
          sha256: digest,
          config: this.opts.engine.config,
        });
      }
      if (req.method !== 'POST') return errorResponse(405, `${req.method} not allowed; use GET or POST`);
      let push: { version: number; params: Float32Array };
      try {
        push = parseWeightPush(req.body, this.nParams);
      } catch (e) {
        return errorResponse(400, (e as Error).message, 'invalid_request_error', {}, 'body');
      }
      await this.opts.engine.setParams(push.params);
      this.version = push.version;
      return json(200, { version: this.version, params: this.nParams });
    }
    return errorResponse(404, `no route for ${req.method} ${path}`, 'not_found_error');
  }
}
