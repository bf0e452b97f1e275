import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import type { Rollout } from '../../src/core/trace/types';
import { type ChatEngine, type EngineCall, RandomEngine, ScriptedEngine } from '../../src/harness/engines';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness, type HarnessName } from '../../src/harness/registry';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import { qwen3 } from './qwen3';

let tok: ChatTokenizer;
beforeAll(() => {
  tok = qwen3();
});

async function run(
  harness: HarnessName,
  engine: 'scripted' | 'random' | ((plan: ReturnType<typeof planRollouts>) => ChatEngine),
  n: number,
  extra: Partial<RunSpec> = {},
  proxyOpts: { maxResponseTokens?: number; maxContextTokens?: number } = {},
): Promise<Rollout[]> {
  const spec: RunSpec = { harness, split: 'val', n, groupSize: 1, seed: 7, behaviours: [], ...extra };
  const plan = planRollouts(spec);
  const tasks = new Map(plan.map((p) => [p.job.rolloutId, p.task]));
  const h = getHarness(harness);
  const eng =
    engine === 'scripted'
      ? new ScriptedEngine(
          tok,
          (c: EngineCall) => h.expert(tasks.get(c.rolloutId) as never, c.messages, c.tools),
          1,
        )
      : engine === 'random'
        ? new RandomEngine(tok, 3)
        : engine(plan);
  const proxy = new LlmProxy({ engine: eng, tokenizer: tok, ...proxyOpts });
  return runInline(spec, plan, proxy);
}

const mean = (rs: Rollout[]) => rs.reduce((a, r) => a + (r.finalReward ?? 0), 0) / rs.length;

describe('toy harnesses on validation tasks', () => {
  for (const name of ['instruction', 'search', 'coding'] as const) {
    it(`${name}: the scripted expert scores 1 and the random engine about 0`, async () => {
      const expert = await run(name, 'scripted', 12);
      expect(expert.every((r) => r.state === 'succeeded')).toBe(true);
      expect(mean(expert)).toBe(1);
      const random = await run(name, 'random', 12);
      expect(random.every((r) => r.state === 'succeeded')).toBe(true);
      expect(mean(random)).toBeLessThan(0.1);
      // every call is recorded with engine ids and one log-prob per id
      for (const r of [...expert, ...random])
        for (const c of r.calls) {
          expect(c.httpStatus).toBe(200);
          expect(c.promptTokenIds?.length).toBeGreaterThan(0);
          expect(c.responseTokenIds?.length).toBeGreaterThan(0);
          expect(c.responseLogProbs?.length).toBe(c.responseTokenIds?.length);
        }
    });
  }

  it('train and validation tasks are disjoint and reproducible', () => {
    for (const name of ['instruction', 'search', 'coding'] as const) {
      const h = getHarness(name);
      const a = h.makeTasks('train', 3, 20);
      expect(h.makeTasks('train', 3, 20)).toEqual(a);
      const val = h.makeTasks('val', 3, 20);
      const key = (t: object) => JSON.stringify({ ...t, id: '', split: '' });
      const trainKeys = new Set(a.map(key));
      expect(val.filter((t) => trainKeys.has(key(t)))).toEqual([]);
    }
  });
});

/** An engine that answers every call with fixed text, to drive harnesses into their error paths. */
function fixedText(tokenizer: ChatTokenizer, texts: string[]) {
  return () => new ScriptedEngine(tokenizer, (c) => texts[Math.min(c.callIndex, texts.length - 1)]);
}

describe('bad model output ends as an observation or a failed rollout, never a lost trace', () => {
  it('search: a malformed tool call is answered with a parse-error observation', async () => {
    const [r] = await run(
      'search',
      fixedText(tok, [
        '<tool_call>\n{"name": "search", "arguments": {"query": \n</tool_call>',
        '<answer>x</answer>',
      ]),
      1,
    );
    expect(r.state).toBe('succeeded');
    expect(r.calls).toHaveLength(2);
    expect(r.calls[0].response?.message.tool_calls).toBeUndefined();
    const last = r.calls[1].request.messages.at(-1);
    expect(last?.role).toBe('user');
    expect(last?.content).toMatch(/could not be parsed/);
    expect(r.finalReward).toBe(0);
  });

  it('search: an unknown tool and bad arguments come back as tool errors', async () => {
    const [r] = await run(
      'search',
      fixedText(tok, [
        '<tool_call>\n{"name": "browse", "arguments": {"url": "x"}}\n</tool_call>\n<tool_call>\n{"name": "search", "arguments": {"q": 1}}\n</tool_call>',
        '<answer>x</answer>',
      ]),
      1,
    );
    expect(r.state).toBe('succeeded');
    const tools = r.calls[1].request.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual([
      "error: unknown tool 'browse'; the only tool is 'search'",
      'error: search needs a non-empty string argument "query"',
    ]);
  });

  it('an over-long output is cut at max_tokens with finish_reason length and recorded', async () => {
    const long = `<think>\n${'very '.repeat(400)}\n</think>`;
    const rs = await run('search', fixedText(tok, [long]), 1, { maxTurns: 2 }, { maxResponseTokens: 64 });
    const [r] = rs;
    expect(r.state).toBe('succeeded');
    expect(r.calls).toHaveLength(2);
    expect(r.calls[0].response?.finishReason).toBe('length');
    expect(r.calls[0].responseTokenIds?.length).toBe(64);
    expect(r.calls[1].request.messages.at(-1)?.content).toMatch(/cut off/);
    expect(r.metadata.ended).toBe('max-turns');
  });

  it('coding: a non-terminating program becomes a step-limit observation', async () => {
    const [r] = await run('coding', fixedText(tok, ['```\nlet i = 0\nwhile 1\n  i = i + 1\nend\n```']), 1, {
      maxTurns: 2,
    });
    expect(r.state).toBe('succeeded');
    expect(r.calls).toHaveLength(2);
    expect(r.calls[1].request.messages.at(-1)?.content).toMatch(/stopped after 20000 steps/);
    expect(r.finalReward).toBe(0);
  });

  it('a prompt over the context limit fails the rollout with the reason and keeps earlier calls', async () => {
    const [r] = await run(
      'search',
      fixedText(tok, ['<tool_call>\n{"name": "search", "arguments": {"query": "city"}}\n</tool_call>']),
      1,
      {},
      { maxContextTokens: 700 },
    );
    expect(r.state).toBe('failed');
    expect(r.error).toMatch(/maximum context length is 700 tokens/);
    const ok = r.calls.filter((c) => c.httpStatus === 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(r.calls.at(-1)?.httpStatus).toBe(400);
  });
});
