import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { retokenizationView } from '../../src/core/tokenize/retokenizationView';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { parseTraceText, retokenizedMark, toJsonlTrace } from '../../src/core/trace/io';
import { formatIssue, type Rollout } from '../../src/core/trace/types';
import { toNemoGymLines } from '../tools/frameworkSamples';
import { qwen3 as loadQwen3 } from './qwen3';

let qwen3: ChatTokenizer;
// the Qwen3 tokenizer (151k-token vocabulary) takes seconds to build on a loaded machine
beforeAll(() => {
  qwen3 = loadQwen3();
}, 120_000);

const root = join(import.meta.dirname, '..', '..');
const sample = (name: string) => readFileSync(join(root, 'public', 'samples', `${name}.jsonl`), 'utf8');
const frameworkSample = (name: string) =>
  readFileSync(join(root, 'public', 'samples', 'frameworks', `${name}.jsonl`), 'utf8');
const ours = (name: string) => parseTraceText(sample(name)).rollouts;

const ids = (a: Int32Array | undefined) => (a ? Array.from(a) : null);
const lps = (a: Float32Array | undefined) => (a ? Array.from(a) : null);

/** Every call's ids and log-probs, in order. */
function tokens(rs: Rollout[]) {
  return rs.flatMap((r) =>
    r.calls.map((c) => ({
      prompt: ids(c.promptTokenIds),
      response: ids(c.responseTokenIds),
      logProbs: lps(c.responseLogProbs),
    })),
  );
}

/** import → our JSONL → import: the same rollouts, every id and log-prob kept. */
function roundTrip(rs: Rollout[]): Rollout[] {
  const back = parseTraceText(toJsonlTrace(rs));
  expect(back.format).toBe('jsonl');
  expect(back.issues).toEqual([]);
  return back.rollouts;
}

describe('NeMo Gym rollouts', () => {
  it('are detected and keep the recorded ids and log-probs, the text beside them, reward and group key', () => {
    const src = ours('search-scripted');
    const t = parseTraceText(toNemoGymLines(src).join('\n'));
    expect(t.format).toBe('nemo-gym');
    expect(t.issues).toEqual([]);
    expect(t.rollouts.length).toBe(src.length);
    expect(tokens(t.rollouts)).toEqual(tokens(src));
    t.rollouts.forEach((r, i) => {
      expect(r.finalReward).toBe(src[i].finalReward);
      expect(r.metadata.source).toBe('nemo-gym');
      expect(r.rolloutId).toBe(`${r.metadata.task_index}-${r.metadata.rollout_index}`);
      expect(r.dataId).toBe(`task-${r.metadata.task_index}`);
      // each call's response text and thinking are kept beside its ids
      r.calls.forEach((c, k) => {
        const orig = src[i].calls[k].response?.message;
        expect(c.response?.message.content).toBe(orig?.content ?? null);
        expect(c.response?.message.tool_calls?.map((x) => x.function.name)).toEqual(
          orig?.tool_calls?.map((x) => x.function.name),
        );
      });
    });
    // groups: the same tasks as the source
    const groups = (rs: Rollout[]) => rs.map((r) => rs.filter((x) => x.dataId === r.dataId).length);
    expect(groups(t.rollouts)).toEqual(groups(src));
  });

  it('keeps reasoning items as reasoning text and rebuilds each generation’s context', () => {
    const line = {
      responses_create_params: { input: [{ role: 'user', content: 'What is 2+2?' }] },
      response: {
        output: [
          { type: 'reasoning', summary: [{ type: 'summary_text', text: 'add them' }] },
          {
            type: 'function_call',
            call_id: 'c1',
            name: 'calc',
            arguments: '{"x":"2+2"}',
            prompt_token_ids: [1, 2, 3],
            generation_token_ids: [4, 5],
            generation_log_probs: [-0.5, -0.25],
          },
          { type: 'function_call_output', call_id: 'c1', output: '4' },
          {
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'It is 4.' }],
            prompt_token_ids: [1, 2, 3, 4, 5, 6, 7],
            generation_token_ids: [8, 9],
            generation_log_probs: [-1, null],
          },
        ],
      },
      reward: 1,
      _ng_task_index: 3,
      _ng_rollout_index: 1,
    };
    const t = parseTraceText(JSON.stringify(line));
    expect(t.format).toBe('nemo-gym');
    const [r] = t.rollouts;
    expect(r.rolloutId).toBe('3-1');
    expect(r.calls.length).toBe(2);
    const [a, b] = r.calls;
    expect(a.response?.message.reasoning_content).toBe('add them');
    expect(a.response?.message.tool_calls?.[0].function.arguments).toBe('{"x":"2+2"}');
    expect(a.response?.finishReason).toBe('tool_calls');
    expect(b.request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(b.request.messages[2].content).toBe('4');
    expect(ids(b.promptTokenIds)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(lps(b.responseLogProbs)?.[0]).toBe(-1);
    expect(Number.isNaN(b.responseLogProbs?.[1])).toBe(true);
    expect(t.counters.nonfinite_logprobs).toBe(1);
  });

  it('round-trips through our JSONL with every id and log-prob', () => {
    const t = parseTraceText(frameworkSample('nemo-gym-coding'));
    expect(t.format).toBe('nemo-gym');
    const back = roundTrip(t.rollouts);
    expect(back).toEqual(t.rollouts);
    expect(tokens(back)).toEqual(tokens([...ours('coding-scripted'), ...ours('coding-random')]));
  });

  it('shows text that a re-render would not turn into the recorded ids in the retokenization view', () => {
    const src = ours('search-scripted').slice(0, 1);
    const lines = toNemoGymLines(src);
    const faithful = parseTraceText(lines[0]);
    const v0 = retokenizationView(qwen3, faithful, 0, 0);
    expect(v0.unavailable).toBeNull();
    expect(v0.report?.equal).toBe(true);
    // the user's question edited in the text, the recorded ids left as they were
    const edited = lines[0].replace('In which year', 'In what year');
    expect(edited).not.toBe(lines[0]);
    const t = parseTraceText(edited);
    expect(tokens(t.rollouts)).toEqual(tokens(faithful.rollouts));
    const v = retokenizationView(qwen3, t, 0, 0);
    expect(v.report?.equal).toBe(false);
    expect(v.report?.part).toBe('prompt');
    expect(v.segments.some((s) => !s.equal && s.retokenizedText.includes('what'))).toBe(true);
  });
});

describe('verl rollout_data_dir dumps', () => {
  it('are text only: without a tokenizer the calls keep their text and have no ids', () => {
    const t = parseTraceText(frameworkSample('verl-dump-instruction'));
    expect(t.format).toBe('verl-dump');
    expect(t.rollouts.length).toBe(12);
    expect(t.counters.text_only_calls).toBe(12);
    for (const r of t.rollouts) {
      expect(r.calls[0].promptTokenIds).toBeUndefined();
      expect(retokenizedMark(r)).toBeNull();
    }
  });

  it('with a named tokenizer get its ids, are marked retokenized, and group samples of one prompt', () => {
    const src = ours('instruction-scripted');
    const t = parseTraceText(frameworkSample('verl-dump-instruction'), { tokenizer: qwen3 });
    expect(t.counters.retokenized_calls).toBe(12);
    t.rollouts.forEach((r, i) => {
      const mark = retokenizedMark(r);
      expect(mark?.tokenizer).toBe('qwen3');
      expect(mark?.from).toBe('verl-dump');
      expect(r.finalReward).toBe(src[i].finalReward);
      const c = r.calls[0];
      expect(ids(c.promptTokenIds)).toEqual(Array.from(qwen3.encode(c.request.messages[0].content ?? '')));
      expect(c.responseLogProbs).toBeUndefined();
    });
    const groups = (rs: Rollout[]) => rs.map((r) => rs.filter((x) => x.dataId === r.dataId).length);
    expect(groups(t.rollouts)).toEqual(groups(src));
    // the view says the ids are the tokenizer's and which numbers that affects
    const v = retokenizationView(qwen3, t, 0, 0);
    expect(v.unavailable).toContain('qwen3 made them at import');
    expect(v.retokenizedAtImport?.affects.join(' ')).toContain('importance ratios');
    const back = roundTrip(t.rollouts);
    expect(back).toEqual(t.rollouts);
    expect(retokenizedMark(back[0])?.tokenizer).toBe('qwen3');
  });

  it('reads booleans as 1/0 scores and keeps the reward function’s extra keys', () => {
    const t = parseTraceText(
      '{"input": "q", "output": "a", "gts": "4", "score": true, "step": 7, "acc": 1.0}\n' +
        '{"input": "q", "output": "b", "score": 0.5, "step": 7}\n',
    );
    expect(t.rollouts.map((r) => r.finalReward)).toEqual([1, 0.5]);
    expect(t.rollouts.map((r) => r.rolloutId)).toEqual(['step7-0', 'step7-1']);
    expect(new Set(t.rollouts.map((r) => r.dataId)).size).toBe(1);
    expect(t.rollouts[0].metadata.verl).toEqual({ gts: '4', acc: 1 });
  });
});

describe('OpenAI request logs', () => {
  it('Chat Completions with vLLM ids: ids and log-probs as recorded, tools kept', () => {
    const src = ours('search-scripted');
    const t = parseTraceText(frameworkSample('openai-log-chat-search'));
    expect(t.format).toBe('openai-log');
    expect(tokens(t.rollouts)).toEqual(tokens(src));
    expect(t.rollouts[0].calls[0].request.tools?.[0].function.name).toBe('search');
    const back = roundTrip(t.rollouts);
    expect(tokens(back)).toEqual(tokens(src));
  });

  it('Responses without ids: the chat template over the messages reproduces the engine ids here', () => {
    const src = ours('search-scripted');
    const t = parseTraceText(frameworkSample('openai-log-responses-search'), { tokenizer: qwen3 });
    expect(t.format).toBe('openai-log');
    expect(t.issues).toEqual([]);
    expect(t.rollouts.every((r) => retokenizedMark(r)?.from === 'openai-log')).toBe(true);
    // the scripted engine samples what the template renders, so the retokenized ids equal the recorded ones
    const srcIds = tokens(src).map((c) => ({ ...c, logProbs: null }));
    expect(tokens(t.rollouts)).toEqual(srcIds);
    expect(tokens(roundTrip(t.rollouts))).toEqual(srcIds);
  });

  it('a request without messages or input, and a failed response', () => {
    const t = parseTraceText(
      '{"request": {"model": "m"}, "response": {"id": "x", "choices": []}}\n' +
        '{"request": {"messages": [{"role": "user", "content": "hi"}]}, "response": {"id": "e", "error": {"message": "overloaded"}}}\n',
    );
    expect(t.issues[0]).toMatchObject({ where: 'line 1', field: 'request' });
    expect(t.rollouts.length).toBe(1);
    expect(t.rollouts[0].calls[0].error).toBe('overloaded');
  });
});

describe('SkyRL dumps', () => {
  it('tokenized with a named tokenizer, grouped by prompt, stop reasons kept', () => {
    const src = ours('instruction-scripted');
    const t = parseTraceText(frameworkSample('skyrl-dump-instruction'), { tokenizer: qwen3 });
    expect(t.format).toBe('skyrl-dump');
    // decoded with special tokens: re-encoding gives the recorded prompt ids back
    t.rollouts.forEach((r, i) => {
      expect(ids(r.calls[0].promptTokenIds)).toEqual(ids(src[i].calls[0].promptTokenIds));
      expect(r.calls[0].response?.finishReason).toBe(src[i].calls[0].response?.finishReason);
      expect(retokenizedMark(r)?.from).toBe('skyrl-dump');
    });
    expect(roundTrip(t.rollouts)).toEqual(t.rollouts);
  });
});

describe('bad input in framework files', () => {
  const good = () => toNemoGymLines(ours('search-scripted').slice(0, 3));

  it('a malformed line costs only itself, reported with its line number', () => {
    const lines = good();
    lines.splice(1, 0, '{"responses_create_params": {"input": [], "respo');
    const t = parseTraceText(lines.join('\n'));
    expect(t.format).toBe('nemo-gym');
    expect(t.rollouts.length).toBe(3);
    expect(t.issues).toHaveLength(1);
    expect(t.issues[0].where).toBe('line 2');
    expect(t.issues[0].message).toMatch(/not valid JSON/);
  });

  it('ids and log-probs of different lengths name the item and both lengths', () => {
    const lines = good();
    const o = JSON.parse(lines[2]);
    const item = o.response.output.find((x: Record<string, unknown>) => x.generation_token_ids);
    item.generation_log_probs = item.generation_log_probs.slice(1);
    lines[2] = JSON.stringify(o);
    const t = parseTraceText(lines.join('\n'));
    expect(t.rollouts.length).toBe(2);
    expect(t.issues[0].where).toBe('line 3');
    expect(t.issues[0].field).toMatch(/^response\.output\[\d+\]\.generation_log_probs$/);
    expect(t.issues[0].message).toBe(
      `has ${item.generation_token_ids.length - 1} values but generation_token_ids has ${item.generation_token_ids.length}`,
    );
  });

  it('missing fields and wrong types are named', () => {
    const t = parseTraceText(
      [
        '{"_ng_task_index": 0, "reward": 1}',
        '{"responses_create_params": {"input": "hi"}, "response": {"output": [{"type": "message", "role": "assistant", "content": "x", "generation_token_ids": [1]}]}}',
        '{"responses_create_params": {"input": "hi"}, "response": {"output": [{"type": "computer_call"}]}, "reward": 0}',
        '{"responses_create_params": {"input": "hi"}, "response": {"output": []}, "reward": "high"}',
        '{"input": "q", "output": 3, "score": 1, "step": 0}',
      ].join('\n'),
    );
    expect(t.rollouts).toEqual([]);
    expect(t.issues.map(formatIssue)).toEqual([
      'line 1: response must be an object, got nothing (missing)',
      'line 2: response.output[0].prompt_token_ids is missing but generation_token_ids is present',
      'line 3: response.output[0].type "computer_call" items are not supported (reasoning, message, function_call, function_call_output)',
      'line 4: reward must be a finite number, a boolean or null, got a string ("high")',
      'line 5 is a verl rollout dump line ({"input", "output", "score", "step", …}), but this file holds NeMo Gym rollouts (4 of 5 records); skipped',
    ]);
  });
});
