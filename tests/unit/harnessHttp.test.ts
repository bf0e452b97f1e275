/** The same harness code over real HTTP: the proxy served by node:http, reached with fetch. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command as rollout } from '../../src/cli/commands/rollout';
import { serveHttp } from '../../src/cli/httpServe';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { ScriptedEngine } from '../../src/harness/engines';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness } from '../../src/harness/registry';
import type { SearchTask } from '../../src/harness/search';
import { parseRolloutsJsonl } from '../../src/harness/traceJsonl';
import { qwen3 } from './qwen3';

let tok: ChatTokenizer;
let server: Server;
let url: string;
let proxy: LlmProxy;
const tasks = () => getHarness('search').makeTasks('val', 4, 3) as SearchTask[];

beforeAll(async () => {
  tok = qwen3();
  const h = getHarness('search');
  // The upstream "gateway": rollout ids are the task index, so the expert knows which task it answers.
  proxy = new LlmProxy({
    engine: new ScriptedEngine(tok, (c) =>
      h.expert(tasks()[Number(c.rolloutId.replace('ro-', ''))], c.messages),
    ),
    tokenizer: tok,
    apiKey: 'k',
  });
  ({ server, url } = await serveHttp(proxy.handle));
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('harnesses over real HTTP', () => {
  it('lab agent runs a task from the AGL env variables and posts its reward with the bearer key', async () => {
    const { stdout } = await promisify(execFile)(
      'npx',
      [
        'tsx',
        'src/cli/lab.ts',
        'agent',
        '--harness',
        'search',
        '--split',
        'val',
        '--seed',
        '4',
        '--index',
        '2',
      ],
      {
        env: {
          ...process.env,
          AGL_OPENAI_BASE_URL: `${url}/proxy/rollout/ro-2/attempt/0/mode/val/openai/v1`,
          AGL_EVENT_URL: `${url}/api/rollouts/ro-2/attempt/0/events`,
          AGL_KEY: 'k',
        },
      },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1) as string)).toMatchObject({
      task: tasks()[2].id,
      reward: 1,
    });
    const rec = proxy.take('ro-2');
    expect(rec?.rewards.map((r) => r.value)).toEqual([1]);
    expect(rec?.calls.length).toBe(tasks()[2].hops.length + 1);
    expect(rec?.mode).toBe('val');
  });

  it('lab rollout --engine URL forwards every call and records the remote ids', async () => {
    // Without OPENAI_API_KEY the upstream refuses (401): every rollout fails with that reason, nothing crashes.
    const out = join(mkdtempSync(join(tmpdir(), 'lab-remote-')), 't.jsonl');
    const prev = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      await rollout.run([
        '--harness',
        'search',
        '--engine',
        `${url}/rollout/ro-0/attempt/0/mode/val/openai/v1`,
        '--split',
        'val',
        '--seed',
        '4',
        '--n',
        '1',
        '--workers',
        '1',
        '--out',
        out,
      ]);
      const [failed] = parseRolloutsJsonl(readFileSync(out, 'utf8'));
      expect(failed.state).toBe('failed');
      expect(failed.error).toMatch(/HTTP 502: engine failed: remote engine answered 401/);
      expect(failed.calls[0].httpStatus).toBe(502);
      process.env.OPENAI_API_KEY = 'k';
      await rollout.run([
        '--harness',
        'search',
        '--engine',
        `${url}/rollout/ro-0/attempt/0/mode/val/openai/v1`,
        '--split',
        'val',
        '--seed',
        '4',
        '--n',
        '1',
        '--workers',
        '1',
        '--out',
        out,
      ]);
      const [r] = parseRolloutsJsonl(readFileSync(out, 'utf8'));
      expect(r.state).toBe('succeeded');
      expect(r.finalReward).toBe(1);
      const upstream = proxy.take('ro-0');
      expect(r.calls.map((c) => Array.from(c.responseTokenIds ?? []))).toEqual(
        upstream?.calls.map((c) => Array.from(c.responseTokenIds ?? [])),
      );
      expect(r.calls.map((c) => Array.from(c.promptTokenIds ?? []))).toEqual(
        upstream?.calls.map((c) => Array.from(c.promptTokenIds ?? [])),
      );
    } finally {
      if (prev === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = prev;
    }
  });
});
