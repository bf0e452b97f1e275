import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { ChatClient, clientFromAglEnv } from '../../src/harness/client';
import { RandomEngine, RemoteEngine, ScriptedEngine } from '../../src/harness/engines';
import {
  channelTransport,
  type FetchLike,
  type HttpRequest,
  parseChannelMessage,
  serveChannel,
} from '../../src/harness/http';
import type { ChatCompletionResponse } from '../../src/harness/openai';
import { LlmProxy } from '../../src/harness/proxy';
import { parseAssistantText, pythonJsonDumps } from '../../src/harness/toolParser';
import { qwen3 } from './qwen3';

let tok: ChatTokenizer;
beforeAll(() => {
  tok = qwen3();
});

const CHAT = '/rollout/r1/attempt/0/mode/train/openai/v1/chat/completions';
const post = (path: string, body: unknown, headers: Record<string, string> = {}): HttpRequest => ({
  method: 'POST',
  path,
  headers,
  body,
});
const scripted = (text: string) => new ScriptedEngine(tok, () => text);
const errMsg = (b: unknown) => (b as { error: { message: string; param: string | null } }).error;

describe('LLM proxy', () => {
  it('answers with vLLM token-id fields and records the call with the engine ids', async () => {
    const proxy = new LlmProxy({ engine: scripted('Hello there.'), tokenizer: tok });
    const res = await proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'hi' }] }));
    expect(res.status).toBe(200);
    const body = res.body as ChatCompletionResponse;
    const expectPrompt = tok.encodeChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(body.prompt_token_ids).toEqual(Array.from(expectPrompt));
    expect(body.choices[0].token_ids).toEqual([...tok.encode('Hello there.'), 151645]);
    expect(body.choices[0].logprobs?.content.map((c) => c.token).join('')).toBe('Hello there.<|im_end|>');
    expect(body.choices[0].message.content).toBe('Hello there.');
    const call = proxy.record('r1')?.calls[0];
    expect(call?.httpStatus).toBe(200);
    expect(Array.from(call?.responseTokenIds ?? [])).toEqual(body.choices[0].token_ids);
    expect(Array.from(call?.responseLogProbs ?? [])).toEqual(
      body.choices[0].logprobs?.content.map((c) => Math.fround(c.logprob)),
    );
    expect(proxy.record('r1')?.mode).toBe('train');
  });

  it('records an immediate end-of-turn from the random engine as an empty answer', async () => {
    const proxy = new LlmProxy({ engine: new RandomEngine(tok, 0, 1), tokenizer: tok });
    const body = (await proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'q' }] })))
      .body as ChatCompletionResponse;
    expect(body.choices[0].message.content).toBe('');
    expect(body.choices[0].token_ids).toEqual([151645]);
    expect(body.choices[0].logprobs?.content[0].logprob).toBe(0);
  });

  it('parses Qwen <tool_call> text into tool_calls like the hermes parser', async () => {
    const text =
      'Let me check.\n<tool_call>\n{"name": "search", "arguments": {"query":"Oslo", "k": 2}}\n</tool_call>';
    const proxy = new LlmProxy({ engine: scripted(text), tokenizer: tok });
    const body = (await proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'q' }] })))
      .body as ChatCompletionResponse;
    expect(body.choices[0].finish_reason).toBe('tool_calls');
    expect(body.choices[0].message.content).toBe('Let me check.');
    expect(body.choices[0].message.tool_calls?.[0].function).toEqual({
      name: 'search',
      arguments: '{"query": "Oslo", "k": 2}',
    });
    expect(parseAssistantText('<tool_call>\n{"name": 3}\n</tool_call>', 'c').parseError).toMatch(
      /no string "name"/,
    );
    expect(pythonJsonDumps({ a: [1, 'x'], b: null, c: 1.5 })).toBe('{"a": [1, "x"], "b": null, "c": 1.5}');
  });

  it('rejects bad bodies with a 400 naming the field, and stream:true', async () => {
    const proxy = new LlmProxy({ engine: scripted('x'), tokenizer: tok });
    const cases: [unknown, string, RegExp][] = [
      [{}, 'messages', /'messages' must be a non-empty array/],
      [{ messages: [{ role: 'bot', content: 'x' }] }, 'messages[0].role', /must be one of/],
      [{ messages: [{ role: 'user', content: 'x' }], temperature: 3 }, 'temperature', /\[0, 2\]/],
      [
        { messages: [{ role: 'tool', content: 'x' }] },
        'messages[0].tool_call_id',
        /required for role 'tool'/,
      ],
      [
        { messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: {} }] },
        'tools[0].function.name',
        /non-empty/,
      ],
      [{ messages: [{ role: 'user', content: 'x' }], max_tokens: 1.5 }, 'max_tokens', /integer/],
      [{ messages: [{ role: 'user', content: 'x' }], stream: true }, 'stream', /not supported/],
    ];
    for (const [body, param, re] of cases) {
      const res = await proxy.handle(post(CHAT, body));
      expect(res.status).toBe(400);
      expect(errMsg(res.body).param).toBe(param);
      expect(errMsg(res.body).message).toMatch(re);
    }
    expect(
      (await proxy.handle(post('/rollout/r1/attempt/0/mode/test/openai/v1/chat/completions', {}))).status,
    ).toBe(404);
    expect((await proxy.handle(post('/nope', {}))).status).toBe(404);
    expect(proxy.record('r1')).toBeUndefined();
  });

  it('takes OpenAI list content and nulls for absent fields; refuses n > 1 and malformed paths', async () => {
    const proxy = new LlmProxy({ engine: scripted('ok'), tokenizer: tok });
    const listForm = await proxy.handle(
      post(CHAT, {
        model: null,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'h' },
              { type: 'text', text: 'i' },
            ],
            name: null,
          },
          { role: 'assistant', content: 'yes', tool_calls: null },
          { role: 'user', content: 'again' },
        ],
      }),
    );
    expect(listForm.status).toBe(200);
    const call = proxy.record('r1')?.calls[0];
    expect(call?.request.messages[0].content).toBe('hi');
    // the recorded prompt is the template over the joined text
    const expected = tok.encodeChat(
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yes' },
        { role: 'user', content: 'again' },
      ],
      { addGenerationPrompt: true },
    );
    expect(Array.from(call?.promptTokenIds ?? [])).toEqual(Array.from(expected));
    const image = await proxy.handle(
      post(CHAT, { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }),
    );
    expect(image.status).toBe(400);
    expect(errMsg(image.body).message).toContain("'image_url' parts are not supported");
    expect(errMsg(image.body).param).toBe('messages[0].content[0]');
    const n3 = await proxy.handle(post(CHAT, { n: 3, messages: [{ role: 'user', content: 'q' }] }));
    expect(n3.status).toBe(400);
    expect(errMsg(n3.body).param).toBe('n');
    const badPath = await proxy.handle(
      post('/rollout/%E0%A4%A/attempt/0/mode/train/openai/v1/chat/completions', {
        messages: [{ role: 'user', content: 'q' }],
      }),
    );
    expect(badPath.status).toBe(400);
    expect(errMsg(badPath.body).message).toContain('malformed percent-encoding');
  });

  it('checks the API key except on /healthz', async () => {
    const proxy = new LlmProxy({ engine: scripted('x'), tokenizer: tok, apiKey: 'k1' });
    expect((await proxy.handle({ method: 'GET', path: '/healthz', headers: {} })).body).toEqual({
      status: 'ok',
    });
    expect((await proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'x' }] }))).status).toBe(401);
    expect(
      (
        await proxy.handle(
          post(CHAT, { messages: [{ role: 'user', content: 'x' }] }, { Authorization: 'Bearer k1' }),
        )
      ).status,
    ).toBe(200);
    expect(
      (await proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'x' }] }, { 'x-api-key': 'k1' })))
        .status,
    ).toBe(200);
  });

  it('takes reward events and validates them', async () => {
    const proxy = new LlmProxy({ engine: scripted('x'), tokenizer: tok });
    const ev = '/api/rollouts/r9/attempt/0/events';
    expect((await proxy.handle(post(ev, { event_type: 'reward', data: { value: 0.5 } }))).status).toBe(200);
    const bad = await proxy.handle(post(ev, { event_type: 'reward', data: { value: 'high' } }));
    expect(bad.status).toBe(400);
    expect(errMsg(bad.body).param).toBe('data.value');
    expect(errMsg((await proxy.handle(post(ev, { event_type: 'span' }))).body).param).toBe('event_type');
    expect(proxy.take('r9')?.rewards.map((r) => r.value)).toEqual([0.5]);
    // a taken (finished) rollout accepts nothing more
    expect((await proxy.handle(post(ev, { event_type: 'reward', data: { value: 1 } }))).status).toBe(409);
  });

  it('pauses with 429 + Retry-After; the client waits and retries until resumed', async () => {
    const proxy = new LlmProxy({ engine: scripted('ok'), tokenizer: tok, retryAfterSeconds: 2 });
    await proxy.handle(post('/proxy/pause', { reason: 'weight update' }));
    const direct = await proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'x' }] }));
    expect(direct.status).toBe(429);
    expect(direct.headers['retry-after']).toBe('2');
    expect((await proxy.handle({ method: 'GET', path: '/proxy/state', headers: {} })).body).toMatchObject({
      paused: true,
      reason: 'weight update',
    });
    const waits: number[] = [];
    const client = new ChatClient({
      baseUrl: '/rollout/r2/attempt/0/mode/val/openai/v1',
      transport: proxy.handle,
      sleep: async (ms) => {
        waits.push(ms);
        if (waits.length === 3) proxy.resume();
      },
    });
    const res = await client.complete({ messages: [{ role: 'user', content: 'x' }] });
    expect(res.choices[0].message.content).toBe('ok');
    expect(waits).toEqual([2000, 2000, 2000]);
    expect(proxy.record('r2')?.calls).toHaveLength(1);
  });

  it('drains in-flight calls before a pause completes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const inner = scripted('slow');
    const proxy = new LlmProxy({
      engine: {
        kind: 'gated',
        model: 'm',
        generate: async (c) => {
          await gate;
          return inner.generate(c);
        },
      },
      tokenizer: tok,
    });
    const call = proxy.handle(post(CHAT, { messages: [{ role: 'user', content: 'x' }] }));
    await new Promise((r) => setTimeout(r, 10));
    let paused = false;
    const p = proxy.pause().then(() => {
      paused = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(paused).toBe(false);
    // taking the rollout mid-call freezes its record: the in-flight call is marked 499 in the copy returned
    const taken = proxy.take('r1');
    expect(taken?.calls.map((c) => c.httpStatus)).toEqual([499]);
    release();
    expect((await call).status).toBe(200);
    expect(taken?.calls[0].response).toBeNull();
    await p;
    expect(paused).toBe(true);
  });

  it('forwards to a remote OpenAI-compatible server and keeps its ids (RemoteEngine against another proxy)', async () => {
    const upstream = new LlmProxy({ engine: scripted('remote answer'), tokenizer: tok, apiKey: 'up' });
    const remote = new RemoteEngine(
      'http://upstream.test/rollout/u/attempt/0/mode/val/openai/v1',
      'm',
      'up',
      upstream.handle,
    );
    const front = new LlmProxy({ engine: remote, tokenizer: null });
    const body = (await front.handle(post(CHAT, { messages: [{ role: 'user', content: 'hi' }] })))
      .body as ChatCompletionResponse;
    expect(body.choices[0].message.content).toBe('remote answer');
    const call = front.record('r1')?.calls[0];
    expect(Array.from(call?.promptTokenIds ?? [])).toEqual(
      Array.from(upstream.record('u')?.calls[0].promptTokenIds ?? []),
    );
    expect(Array.from(call?.responseTokenIds ?? [])).toEqual([...tok.encode('remote answer'), 151645]);
  });

  it('builds a client from Agent Lightning env variables and posts the reward with the bearer key', async () => {
    const seen: { url: string; auth?: string; body?: string }[] = [];
    const fakeFetch: FetchLike = async (url, init) => {
      seen.push({ url, auth: init.headers.authorization, body: init.body });
      return { status: 200, headers: new Headers(), text: async () => '{"ok":true}' };
    };
    const client = clientFromAglEnv(
      {
        AGL_OPENAI_BASE_URL: 'http://gw:8000/proxy/rollout/ro-1/attempt/0/mode/train/openai/v1',
        AGL_EVENT_URL: 'http://gw:8000/api/rollouts/ro-1/attempt/0/events',
        AGL_KEY: 'secret',
      },
      fakeFetch,
    );
    await client?.reportReward(0.75);
    expect(seen).toEqual([
      {
        url: 'http://gw:8000/api/rollouts/ro-1/attempt/0/events',
        auth: 'Bearer secret',
        body: '{"event_type":"reward","data":{"value":0.75}}',
      },
    ]);
    expect(clientFromAglEnv({})).toBeNull();
  });
});

describe('channel transport', () => {
  it('validates channel messages, naming the bad field', () => {
    expect(() =>
      parseChannelMessage({
        kind: 'http-request',
        id: 1,
        request: { method: 'post', path: '/', headers: {} },
      }),
    ).toThrow(/method/);
    expect(() =>
      parseChannelMessage({
        kind: 'http-request',
        id: 1,
        request: { method: 'POST', path: 'x', headers: {} },
      }),
    ).toThrow(/path/);
    expect(() =>
      parseChannelMessage({ kind: 'http-response', id: 1, response: { status: 99, headers: {} } }),
    ).toThrow(/status/);
    expect(() => parseChannelMessage({ kind: 'http-request', id: -1 })).toThrow(/id/);
    expect(() =>
      parseChannelMessage({
        kind: 'http-request',
        id: 2,
        request: { method: 'GET', path: '/', headers: { a: 1 } },
      }),
    ).toThrow(/headers\['a'\]/);
  });

  it('carries requests and responses over a real MessageChannel, answering invalid messages with 400', async () => {
    const proxy = new LlmProxy({ engine: scripted('via channel'), tokenizer: tok });
    const ch = new MessageChannel();
    serveChannel(ch.port1 as never, proxy.handle);
    const transport = channelTransport(ch.port2 as never);
    const client = new ChatClient({ baseUrl: '/rollout/c1/attempt/0/mode/train/openai/v1', transport });
    const [a, b] = await Promise.all([
      client.complete({ messages: [{ role: 'user', content: 'one' }] }),
      client.complete({ messages: [{ role: 'user', content: 'two' }] }),
    ]);
    expect(a.choices[0].message.content).toBe('via channel');
    expect(b.prompt_token_ids).toEqual(
      Array.from(tok.encodeChat([{ role: 'user', content: 'two' }], { addGenerationPrompt: true })),
    );
    // a raw malformed request on the wire gets a 400 reply with the validator's message
    const raw = new MessageChannel();
    serveChannel(raw.port1 as never, proxy.handle);
    const reply = new Promise<unknown>((r) => {
      raw.port2.onmessage = (ev) => r(ev.data);
    });
    raw.port2.postMessage({
      kind: 'http-request',
      id: 7,
      request: { method: 'POST', path: 'nope', headers: {} },
    });
    expect(await reply).toMatchObject({ kind: 'http-response', id: 7, response: { status: 400 } });
    ch.port1.close();
    raw.port1.close();
  });
});
