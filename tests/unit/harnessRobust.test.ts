/**
 * The agent client, the remote engine, the proxy and the rollout / agent commands under bad input: answers
 * checked field by field, timeouts, capped Retry-After, bounded work, one-line errors with exit codes,
 * interrupts that keep what was recorded.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandError, EXIT, UsageError } from '../../src/cli/args';
import { command as agent } from '../../src/cli/commands/agent';
import { command as rollout } from '../../src/cli/commands/rollout';
import { serveHttp } from '../../src/cli/httpServe';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { parseTraceText } from '../../src/core/trace/io';
import { ChatClient, ResponseError, retryAfterMs, TransportError } from '../../src/harness/client';
import { type ChatEngine, type EngineCall, RemoteEngine, ScriptedEngine } from '../../src/harness/engines';
import type { HttpResponse, Transport } from '../../src/harness/http';
import { validateChatResponse } from '../../src/harness/openai';
import { LlmProxy } from '../../src/harness/proxy';
import { qwen3 } from './qwen3';

let tok: ChatTokenizer;
beforeAll(() => {
  tok = qwen3();
});

const ok = (body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status: 200,
  headers,
  body,
});
const answer = (extra: Record<string, unknown> = {}, choice: Record<string, unknown> = {}) => ({
  id: 'x',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  prompt_token_ids: [1, 2, 3],
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'hi' },
      finish_reason: 'stop',
      token_ids: [5, 6],
      logprobs: {
        content: [
          { token: 'a', logprob: -0.5 },
          { token: 'b', logprob: -1 },
        ],
      },
      ...choice,
    },
  ],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  ...extra,
});
const call: EngineCall = {
  rolloutId: 'r',
  callIndex: 0,
  messages: [{ role: 'user', content: 'q' }],
  promptIds: null,
  maxTokens: 8,
};

describe('answers are checked field by field', () => {
  it('the remote engine names the field a server got wrong, and records nothing from it', async () => {
    const cases: [unknown, RegExp][] = [
      [
        answer({}, { token_ids: undefined }),
        /choices\[0\]\.token_ids is missing: the engine did not return the response's token ids; it must honour return_token_ids/,
      ],
      [answer({ prompt_token_ids: undefined }), /prompt_token_ids is missing: .*return_token_ids/],
      [
        answer({}, { token_ids: [5, 200000] }),
        /choices\[0\]\.token_ids\[1\] is 200000, outside the vocabulary of qwen3 \(151669 tokens\)/,
      ],
      [answer({}, { token_ids: [5, 1.5] }), /choices\[0\]\.token_ids\[1\] must be a token id/],
      [
        answer({}, { logprobs: { content: [{ logprob: -1 }] } }),
        /choices\[0\]\.logprobs\.content has 1 entries but choices\[0\]\.token_ids has 2/,
      ],
      [
        answer({}, { logprobs: { content: [{ logprob: -1 }, { logprob: 'x' }] } }),
        /choices\[0\]\.logprobs\.content\[1\]\.logprob must be a number/,
      ],
      [
        answer({}, { message: { role: 'assistant', content: { text: 'hi' } } }),
        /choices\[0\]\.message\.content must be a string or null/,
      ],
      [
        answer({}, { message: { role: 'assistant', content: null, tool_calls: [{ id: 't' }] } }),
        /tool_calls\[0\]\.function must be an object/,
      ],
      [answer({ choices: [] }), /choices is empty/],
      ['<html>Bad gateway</html>', /body is not JSON/],
      [null, /body is empty/],
    ];
    for (const [body, re] of cases) {
      const engine = new RemoteEngine('http://x/v1', 'm', '', async () => ok(body), {
        vocabSize: tok.vocabSize,
        vocabName: tok.name,
      });
      await expect(engine.generate(call)).rejects.toThrow(re);
    }
    // through the proxy, such a call is a failed call with the reason, never a recorded answer
    const engine = new RemoteEngine('http://x/v1', 'm', '', async () =>
      ok(answer({}, { token_ids: undefined })),
    );
    const proxy = new LlmProxy({ engine, tokenizer: null });
    const res = await proxy.handle({
      method: 'POST',
      path: '/rollout/r/attempt/0/mode/train/openai/v1/chat/completions',
      headers: {},
      body: { messages: call.messages },
    });
    expect(res.status).toBe(502);
    const rec = proxy.take('r');
    expect(rec?.calls[0].httpStatus).toBe(502);
    expect(rec?.calls[0].responseTokenIds).toBeUndefined();
    expect(rec?.calls[0].error).toMatch(/choices\[0\]\.token_ids is missing/);
  });

  it('the proxy answers what the same validator accepts', async () => {
    const proxy = new LlmProxy({ engine: new ScriptedEngine(tok, () => 'Hello.'), tokenizer: tok });
    const res = await proxy.handle({
      method: 'POST',
      path: '/rollout/a/attempt/0/mode/train/openai/v1/chat/completions',
      headers: {},
      body: { messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(200);
    const v = validateChatResponse(res.body, { requireTokenIds: true, vocabSize: tok.vocabSize });
    expect(v.choices[0].token_ids?.length).toBe(v.choices[0].logprobs?.content.length);
  });

  it('the agent client refuses empty, non-JSON and choice-less answers instead of reading them as empty text', async () => {
    for (const [body, re] of [
      [{ choices: [] }, /choices is empty/],
      ['', /body is empty/],
      ['oops', /body is not JSON/],
      [{ choices: [{ message: { content: 5 } }] }, /choices\[0\]\.message\.content must be a string or null/],
    ] as [unknown, RegExp][]) {
      const client = new ChatClient({ baseUrl: '/v1', transport: async () => ok(body) });
      await expect(client.complete({ messages: [] })).rejects.toThrow(re);
      await expect(client.complete({ messages: [] })).rejects.toBeInstanceOf(ResponseError);
    }
  });
});

describe('every request has a timeout; Retry-After is capped', () => {
  it('a server that never answers is an error after the timeout, not a hang', async () => {
    const never: Transport = () => new Promise(() => {});
    const client = new ChatClient({ baseUrl: '/v1', transport: never, timeoutMs: 200 });
    const t0 = Date.now();
    await expect(client.complete({ messages: [] })).rejects.toBeInstanceOf(TransportError);
    expect(Date.now() - t0).toBeLessThan(5000);
    const engine = new RemoteEngine(
      'http://127.0.0.1:1/v1',
      'm',
      '',
      (_req, opts) =>
        new Promise((_, reject) =>
          opts?.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
        ),
      { timeoutMs: 200 },
    );
    await expect(engine.generate(call)).rejects.toThrow(/gave no answer within 200 ms/);
  });

  it('Retry-After: seconds, dates, absurd values and junk', () => {
    const cap = 60_000;
    expect(retryAfterMs('2', cap)).toBe(2000);
    expect(retryAfterMs('3600', cap)).toBe(cap);
    expect(retryAfterMs('99999999999', cap)).toBe(cap);
    expect(retryAfterMs('1e400', cap)).toBeNull();
    expect(retryAfterMs('', cap)).toBeNull();
    expect(retryAfterMs('-5', cap)).toBeNull();
    expect(retryAfterMs(new Date(10_000).toUTCString(), cap, 4_000)).toBe(6000);
  });

  it('the client waits what a paused proxy asks, never more than the cap', async () => {
    const waits: number[] = [];
    let n = 0;
    const client = new ChatClient({
      baseUrl: '/v1',
      transport: async () =>
        n++ < 2
          ? { status: 429, headers: { 'retry-after': n === 1 ? '99999999999' : '0.5' }, body: null }
          : ok(answer()),
      sleep: async (ms) => void waits.push(ms),
    });
    await client.complete({ messages: [] });
    expect(waits).toEqual([60_000, 500]);
  });

  it('the waits of one request are bounded in total: past maxRetryWaitMs the 429 is the answer', async () => {
    const waits: number[] = [];
    const client = new ChatClient({
      baseUrl: '/v1',
      transport: async () => ({
        status: 429,
        headers: { 'retry-after': '30' },
        body: { error: { message: 'paused' } },
      }),
      sleep: async (ms) => void waits.push(ms),
      maxRetryWaitMs: 100_000,
    });
    await expect(client.complete({ messages: [] })).rejects.toThrow(
      'chat completion still refused with HTTP 429 after 90.0 s of waiting (at most 100 s in total): paused',
    );
    expect(waits).toEqual([30_000, 30_000, 30_000]);
  });

  it('the remote engine waits out a paused server within its bound, then fails naming it', async () => {
    const waits: number[] = [];
    let n = 0;
    const paused =
      (count: number): Transport =>
      async () =>
        n++ < count ? { status: 429, headers: { 'retry-after': '2' }, body: null } : ok(answer());
    const engine = new RemoteEngine('http://x/v1', 'm', '', paused(2), {
      maxRetryWaitMs: 5000,
      sleep: async (ms) => void waits.push(ms),
    });
    expect((await engine.generate(call)).tokenIds.length).toBeGreaterThan(0);
    expect(waits).toEqual([2000, 2000]);
    n = 0;
    waits.length = 0;
    const stuck = new RemoteEngine('http://x/v1', 'm', '', paused(100), {
      maxRetryWaitMs: 5000,
      sleep: async (ms) => void waits.push(ms),
    });
    await expect(stuck.generate(call)).rejects.toThrow(
      'remote engine still answered 429 after 4.0 s of waiting (at most 5 s in total)',
    );
    expect(waits).toEqual([2000, 2000]);
  });
});

describe('the proxy stays responsive and bounded', () => {
  const chat = (rid: string, body: unknown) => ({
    method: 'POST',
    path: `/rollout/${rid}/attempt/0/mode/train/openai/v1/chat/completions`,
    headers: {},
    body,
  });

  it('a prompt certainly over the context is refused before it is tokenized', async () => {
    const proxy = new LlmProxy({ engine: new ScriptedEngine(tok, () => 'x'), tokenizer: tok });
    const t0 = performance.now();
    const res = await proxy.handle(
      chat('big', { messages: [{ role: 'user', content: 'a'.repeat(1_500_000) }] }),
    );
    const ms = performance.now() - t0;
    expect(res.status).toBe(400);
    expect((res.body as { error: { message: string; param: string } }).error).toMatchObject({
      param: 'messages',
    });
    expect((res.body as { error: { message: string } }).error.message).toMatch(
      /maximum context length is 32768 tokens\. However, your messages resulted in at least \d+ tokens/,
    );
    // tokenizing it takes ~10 s here; the bound takes milliseconds (generous limit for a loaded machine)
    expect(ms).toBeLessThan(2000);
    expect(tok.minTokenCount('a'.repeat(1_500_000))).toBeGreaterThan(32768);
    // the bound is a true lower bound on real text
    for (const t of ['Hello world, 12345 and more.', 'x'.repeat(5000), '9'.repeat(3000)])
      expect(tok.minTokenCount(t)).toBeLessThanOrEqual(tok.encode(t).length);
  });

  it('bounds open rollouts, and a worker reaches only its own rollout', async () => {
    const proxy = new LlmProxy({
      engine: new ScriptedEngine(tok, () => 'x'),
      tokenizer: tok,
      maxOpenRollouts: 2,
    });
    const msg = { messages: [{ role: 'user', content: 'q' }] };
    expect((await proxy.handle(chat('a', msg))).status).toBe(200);
    expect((await proxy.handle(chat('b', msg))).status).toBe(200);
    expect((await proxy.handle(chat('c', msg))).status).toBe(503);
    proxy.take('a');
    expect((await proxy.handle(chat('c', msg))).status).toBe(200);
    let current: string | null = 'c';
    const scoped = proxy.scoped(() => current);
    expect((await scoped(chat('b', msg))).status).toBe(403);
    expect((await scoped({ method: 'POST', path: '/proxy/pause', headers: {}, body: {} })).status).toBe(403);
    expect((await scoped(chat('c', msg))).status).toBe(200);
    current = null;
    expect((await scoped(chat('c', msg))).status).toBe(403);
    expect(proxy.record('b')?.calls).toHaveLength(1);
  });

  it('taking a rollout aborts its engine call still in flight', async () => {
    let aborted = false;
    const hung: ChatEngine = {
      kind: 'hung',
      model: 'h',
      generate: (c) =>
        new Promise((_, reject) =>
          c.signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          }),
        ),
    };
    const proxy = new LlmProxy({ engine: hung, tokenizer: null });
    const pending = proxy.handle(chat('h', { messages: [{ role: 'user', content: 'q' }] }));
    await new Promise((r) => setTimeout(r, 20));
    const rec = proxy.take('h');
    expect(rec?.calls[0].httpStatus).toBe(499);
    expect((await pending).status).toBe(502);
    expect(aborted).toBe(true);
  });

  it('a body over the limit gets 413 with a JSON error, not a reset', async () => {
    const proxy = new LlmProxy({ engine: new ScriptedEngine(tok, () => 'x'), tokenizer: tok });
    const { server, url } = await serveHttp(proxy.handle, 0, '127.0.0.1', { maxBodyBytes: 1000 });
    try {
      const body = JSON.stringify({ messages: [{ role: 'user', content: 'y'.repeat(5000) }] });
      const res = await fetch(`${url}/rollout/z/attempt/0/mode/train/openai/v1/chat/completions`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('body');
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('lab rollout and lab agent under bad flags, bad servers and interrupts', () => {
  const base = ['--harness', 'instruction', '--engine', 'random'];
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'lab-robust-cli-'));
  });

  it('counts have upper bounds and --out is checked before the run', async () => {
    const out = join(dir, 't.jsonl');
    const bad: [string[], RegExp][] = [
      [[...base, '--out', out, '--n', '1e300'], /--n must be at most 100000/],
      [[...base, '--out', out, '--group-size', '1e300'], /--group-size must be at most 1024/],
      [[...base, '--out', out, '--workers', '1e6'], /--workers must be at most 64/],
      [
        [...base, '--out', out, '--n', '100000', '--group-size', '1000'],
        /--n × --group-size must be at most 1000000/,
      ],
      [[...base, '--out', out, '--seed', '1e300'], /--seed must be an integer of at most 2\^53/],
      [[...base, '--out', out, '--max-tokens', '1e12'], /--max-tokens must be at most/],
      [[...base, '--out', dir], /--out: .* is a folder, not a file/],
      [[...base, '--out', join(dir, 'no', 'such', 't.jsonl')], /--out: output folder .* does not exist/],
    ];
    for (const [argv, re] of bad) {
      const p = rollout.run(argv);
      await expect(p).rejects.toBeInstanceOf(UsageError);
      await expect(rollout.run(argv)).rejects.toThrow(re);
    }
  });

  it('a hung remote engine is cut at the rollout timeout; the run ends promptly', async () => {
    // a server that accepts the request and never answers
    const server: Server = createServer(() => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const out = join(dir, 'hung.jsonl');
      const t0 = Date.now();
      const code = await rollout.run([
        '--harness',
        'instruction',
        '--engine',
        `http://127.0.0.1:${port}/v1`,
        '--n',
        '1',
        '--workers',
        '1',
        '--timeout-ms',
        '1500',
        '--out',
        out,
      ]);
      expect(code).toBe(0);
      expect(Date.now() - t0).toBeLessThan(30_000);
      const [r] = parseTraceText(readFileSync(out, 'utf8')).rollouts;
      expect(r.state).toBe('failed');
      expect(r.error).toMatch(/timed out after 1500 ms/);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('SIGINT keeps every finished rollout and closes the file (exit 130)', async () => {
    const out = join(dir, 'int.jsonl');
    // its own process group, signalled as a whole, as a terminal's Ctrl-C does
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/lab.ts',
        'rollout',
        '--harness',
        'coding',
        '--engine',
        'random',
        '--n',
        '5000',
        '--workers',
        '2',
        '--out',
        out,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    let stdout = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    // wait until rollouts are being written, then interrupt
    for (let i = 0; i < 120; i++) {
      await new Promise((r) => setTimeout(r, 500));
      try {
        if (readFileSync(out, 'utf8').split('\n').length > 5) break;
      } catch {}
    }
    process.kill(-(child.pid as number), 'SIGINT');
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code).toBe(EXIT.sigint);
    const text = readFileSync(out, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const b = parseTraceText(text);
    expect(b.issues).toEqual([]);
    expect(b.rollouts.length).toBeGreaterThan(5);
    expect(b.rollouts.length).toBeLessThan(5000);
    expect(stdout).toMatch(new RegExp(`interrupted by SIGINT: ${b.rollouts.length} rollouts written`));
    for (const r of b.rollouts.filter((x) => x.state === 'failed'))
      expect(r.error).toBe('interrupted by SIGINT');
  }, 120_000);

  it('lab agent: an HTTP error is one line with exit code 3, an unreachable server exit code 4', async () => {
    const server: Server = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const prev = process.env.AGL_OPENAI_BASE_URL;
    try {
      process.env.AGL_OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
      const e = await agent.run(['--harness', 'instruction']).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(CommandError);
      expect((e as CommandError).exitCode).toBe(EXIT.http);
      expect((e as CommandError).message).toBe('chat completion failed with HTTP 500: internal error');
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
      const closedPort = (closed.address() as { port: number }).port;
      await new Promise<void>((r) => closed.close(() => r()));
      process.env.AGL_OPENAI_BASE_URL = `http://127.0.0.1:${closedPort}/v1`;
      const u = await agent.run(['--harness', 'instruction']).catch((x: unknown) => x);
      expect((u as CommandError).exitCode).toBe(EXIT.unreachable);
      expect((u as CommandError).message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED$/);
      await expect(agent.run(['--harness', 'instruction', '--index', '1e300'])).rejects.toThrow(
        /--index must be an integer in \[0, 1000000\)/,
      );
      await expect(agent.run(['--harness', 'instruction', '--timeout-ms', '0'])).rejects.toThrow(
        /--timeout-ms must be an integer number of milliseconds in \[1, 2147483647\], got 0/,
      );
      expect(agent.usage).toMatch(/--timeout-ms MS=300000\] \[--max-retry-wait-ms MS=300000\]/);
      expect(rollout.usage).toMatch(/--max-retry-wait-ms MS=60000/);
    } finally {
      if (prev === undefined) delete process.env.AGL_OPENAI_BASE_URL;
      else process.env.AGL_OPENAI_BASE_URL = prev;
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('lab agent: --timeout-ms cuts a hung server, --max-retry-wait-ms a server that stays paused', async () => {
    let mode: 'hang' | 'paused' = 'hang';
    let requests = 0;
    const server: Server = createServer((_req, res) => {
      requests++;
      if (mode === 'paused') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0.2' });
        res.end(JSON.stringify({ error: { message: 'training step 3' } }));
      } // 'hang': never answers
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const prev = process.env.AGL_OPENAI_BASE_URL;
    try {
      process.env.AGL_OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
      const hung = await agent
        .run(['--harness', 'instruction', '--timeout-ms', '300'])
        .catch((x: unknown) => x);
      expect((hung as CommandError).exitCode).toBe(EXIT.unreachable);
      expect((hung as CommandError).message).toMatch(/within 300 ms/);
      mode = 'paused';
      requests = 0;
      const p = await agent
        .run(['--harness', 'instruction', '--max-retry-wait-ms', '1000'])
        .catch((x: unknown) => x);
      expect((p as CommandError).exitCode).toBe(EXIT.http);
      expect((p as CommandError).message).toBe(
        'chat completion still refused with HTTP 429 after 1.0 s of waiting (at most 1 s in total): training step 3',
      );
      expect(requests).toBe(6); // five waits of 0.2 s fill the bound; the sixth answer is final
    } finally {
      if (prev === undefined) delete process.env.AGL_OPENAI_BASE_URL;
      else process.env.AGL_OPENAI_BASE_URL = prev;
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('lab … | head exits quietly', () => {
    const r = spawnSync(
      'bash',
      [
        '-c',
        'set -o pipefail; npx tsx src/cli/lab.ts analyze public/samples/search-scripted.jsonl --tokenizer qwen3 --json | head -c 10 > /dev/null',
      ],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 60_000);
});

afterAll(() => {});
