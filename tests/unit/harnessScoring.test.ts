import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import type { Rollout } from '../../src/core/trace/types';
import { type CodingTask, runCodingTests } from '../../src/harness/coding';
import { type ChatEngine, type EngineCall, RandomEngine, ScriptedEngine } from '../../src/harness/engines';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness, HARNESSES, type HarnessName } from '../../src/harness/registry';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import { degeneracyMetrics, degeneracyOf, validationMetrics } from '../../src/train/metrics';
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

describe('difficulty levels', () => {
  it('the mixed stream (no level) is the historical one: known tasks at known seeds', () => {
    // Recorded before levels existed; traces, samples and the shipped checkpoints' expert data depend on them.
    const [s] = getHarness('search').makeTasks('val', 3, 1) as unknown as {
      question: string;
      answer: string;
    }[];
    expect(s.question).toBe('In which year was the city of Bexveka founded?');
    const [c] = getHarness('coding').makeTasks('val', 3, 1) as unknown as {
      kind: string;
      tests: unknown[];
    }[];
    expect(c.tests).toHaveLength(4);
    const [i] = getHarness('instruction').makeTasks('train', 3, 1) as unknown as { prompt: string }[];
    expect(i.prompt).toBe(
      'Write a short piece about kites.\n- Use at least 31 words.\n- Write everything in lowercase letters.\n- Include the word "horizon".\n- Format the answer as exactly 4 bullet points starting with "- ".',
    );
    expect(getHarness('search').makeTasks('val', 3, 1, null)).toEqual(
      getHarness('search').makeTasks('val', 3, 1),
    );
  });

  for (const name of ['search', 'coding', 'instruction'] as const) {
    const h = getHarness(name);
    it(`${name}: a level draws only tasks of that level, reproducibly, with disjoint splits`, () => {
      expect(h.levels.length).toBeGreaterThanOrEqual(3);
      for (const { level } of h.levels) {
        const train = h.makeTasks('train', 5, 24, level);
        expect(train.map((t) => h.levelOf(t))).toEqual(train.map(() => level));
        expect(h.makeTasks('train', 5, 24, level)).toEqual(train);
        const val = h.makeTasks('val', 5, 24, level);
        const key = (t: object) => JSON.stringify({ ...t, id: '', split: '' });
        const trainKeys = new Set(train.map(key));
        expect(val.filter((t) => trainKeys.has(key(t)))).toEqual([]);
      }
      const top = h.levels[h.levels.length - 1].level;
      expect(() => h.makeTasks('train', 5, 2, top + 1)).toThrow(`harness '${name}' has levels`);
    });

    it(`${name}: the scripted expert solves every level`, async () => {
      for (const { level } of h.levels) {
        const rs = await run(name, 'scripted', 6, { level });
        expect(mean(rs)).toBe(1);
      }
    });
  }

  it('search: a task needs as many tool calls as its level has hops', async () => {
    for (const level of [1, 2, 3]) {
      const rs = await run('search', 'scripted', 4, { level });
      for (const r of rs) expect(r.calls.length).toBe(level + 1);
    }
  });

  it('coding: more tests at higher levels, and partial credit is the fraction passed', async () => {
    expect(
      getHarness('coding')
        .makeTasks('val', 2, 4, 1)
        .map((t) => (t as unknown as CodingTask).tests.length),
    ).toEqual([2, 2, 2, 2]);
    expect((getHarness('coding').makeTasks('val', 2, 1, 3)[0] as unknown as CodingTask).tests).toHaveLength(
      6,
    );
    const task = (getHarness('coding').makeTasks('val', 2, 40) as unknown as CodingTask[]).find(
      (t) => t.kind === 'is-prime',
    );
    if (!task) throw new Error('no is-prime task in the first 40');
    const primes = task.tests.filter((t) => t.expected[0] === '1').length;
    // "print 1" passes exactly the tests whose n is prime
    expect(runCodingTests(task, 'print 1').passed).toBe(primes);
    const [r] = await run('coding', fixedText(tok, ['```\nprint 1\n```']), 1, { maxTurns: 1 });
    const t0 = getHarness('coding').makeTasks('val', 7, 1)[0] as unknown as CodingTask;
    expect(r.finalReward).toBe(runCodingTests(t0, 'print 1').passed / t0.tests.length);
  });

  it('every harness documents its reward with an upstream analogue', () => {
    for (const name of HARNESSES.names() as HarnessName[]) {
      expect(getHarness(name).reward).toMatch(/verl|IFEval|Search-R1|PRIME/);
      expect(getHarness(name).levels.length).toBeGreaterThan(0);
    }
  });
});

describe('the degenerate-policy check', () => {
  it('flags an empty answer, a tool-call loop and repeated text; the expert shows none', async () => {
    const call = '<tool_call>\n{"name": "search", "arguments": {"query": "Kaselo"}}\n</tool_call>';
    const [loop] = await run('search', fixedText(tok, [call, call, '<answer>x</answer>']), 1);
    expect(degeneracyOf(loop)).toEqual({ emptyAnswer: false, toolLoop: true, repeatedText: false });
    const [empty] = await run('search', fixedText(tok, ['<think>\nhmm\n</think>\n\n']), 1);
    expect(degeneracyOf(empty)).toEqual({ emptyAnswer: true, toolLoop: false, repeatedText: false });
    const [same] = await run('coding', fixedText(tok, ['```\nprint 0\n```']), 1, { maxTurns: 2 });
    expect(degeneracyOf(same).repeatedText).toBe(true);
    const [babble] = await run('instruction', fixedText(tok, ['the ocean is blue '.repeat(3)]), 1);
    expect(degeneracyOf(babble).repeatedText).toBe(true);
    const expert = [
      ...(await run('search', 'scripted', 8, { level: 3 })),
      ...(await run('coding', 'scripted', 8)),
      ...(await run('instruction', 'scripted', 8)),
    ];
    const m = degeneracyMetrics(expert);
    expect(m['val/degenerate/any']).toBe(0);
    expect(degeneracyMetrics([loop, empty, same, babble, ...expert])['val/degenerate/any']).toBeCloseTo(
      4 / 28,
    );
  });

  it('validation metrics report the check and the reward per level', () => {
    const m = validationMetrics([], 1, 0, 1, () => 1);
    expect(Object.keys(m)).toContain('val/degenerate/tool_loop');
  });
});
