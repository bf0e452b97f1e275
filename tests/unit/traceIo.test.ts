import { describe, expect, it } from 'vitest';
import {
  detectFormat,
  parseJsonlTrace,
  parseTraceText,
  readAglEvents,
  TraceFormatError,
  TraceReader,
  toAglEventsBundle,
  toJsonlTrace,
} from '../../src/core/trace/io';
import { formatIssue, type Rollout } from '../../src/core/trace/types';

function sampleRollout(id: string, extra: Partial<Rollout> = {}): Rollout {
  return {
    rolloutId: id,
    dataId: 'task-7',
    isTrain: true,
    state: 'succeeded',
    calls: [
      {
        request: {
          model: 'policy',
          messages: [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'What is 2+2? Use the tool.' },
          ],
          tools: [
            {
              type: 'function',
              function: { name: 'calc', description: 'adds', parameters: { type: 'object' } },
            },
          ],
          sampling: { temperature: 1, max_tokens: 64 },
        },
        response: {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'calc', arguments: '{"a": 2, "b": 2}' } },
            ],
          },
          finishReason: 'tool_calls',
        },
        promptTokenIds: Int32Array.from([151644, 8948, 198, 2610]),
        responseTokenIds: Int32Array.from([151657, 198, 4913]),
        // float32 values, one absent (NaN)
        responseLogProbs: Float32Array.from([-0.125, Number.NaN, -2.7097175121307373]),
        engine: { engine: 'vllm', model: 'policy', policyVersion: 3 },
        timings: { startMs: 1000, endMs: 1250.5 },
        httpStatus: 200,
      },
      {
        request: {
          messages: [
            { role: 'user', content: 'What is 2+2? Use the tool.' },
            { role: 'tool', content: '4', tool_call_id: 'c1' },
          ],
          sampling: {},
        },
        response: null,
        httpStatus: 500,
        error: 'upstream timeout',
      },
    ],
    rewards: [{ value: 0.5, callIndex: 0, timestampMs: 2000 }, { value: 1 }],
    finalReward: 1,
    step: 2,
    sampleIdxInStep: 5,
    metadata: { harness: 'toy', tags: ['a'] },
    ...extra,
  };
}

describe('our JSONL trace format', () => {
  it('round-trips the trace model losslessly (typed arrays, NaN log-probs, optional fields)', () => {
    const rollouts = [
      sampleRollout('r1'),
      sampleRollout('r2', { state: 'failed', error: 'crashed', finalReward: null }),
    ];
    const text = toJsonlTrace(rollouts);
    expect(text.split('\n').filter(Boolean)).toHaveLength(2);
    const back = parseJsonlTrace(text);
    expect(back.issues).toEqual([]);
    expect(back.rollouts).toEqual(rollouts);
    expect(back.rollouts[0].calls[0].responseLogProbs).toBeInstanceOf(Float32Array);
    expect(Number.isNaN(back.rollouts[0].calls[0].responseLogProbs![1])).toBe(true);
    expect(back.counters.nonfinite_logprobs).toBe(2);
    expect(toJsonlTrace(back.rollouts)).toBe(text);
  });

  it('reports each bad line with its location and keeps every valid line', () => {
    const good = toJsonlTrace([sampleRollout('ok-1')]).trim();
    const rec = JSON.parse(good);
    const mismatched = structuredClone(rec);
    mismatched.rollout_id = 'bad-len';
    mismatched.calls[0].response_log_probs = [-1, -2];
    const wrongType = structuredClone(rec);
    wrongType.calls[0].prompt_token_ids = [1, 'x', 3];
    const badRole = structuredClone(rec);
    badRole.calls[0].request.messages[1].role = 'robot';
    const noId = structuredClone(rec);
    delete noId.rollout_id;
    const lines = [
      good,
      '{"rollout_id": "trunc", "calls": [',
      JSON.stringify(mismatched),
      '',
      JSON.stringify(wrongType),
      JSON.stringify(badRole),
      JSON.stringify(noId),
      JSON.stringify({ ...rec, rollout_id: 'ok-2' }),
      '42',
    ];
    const batch = parseJsonlTrace(lines.join('\n'));
    expect(batch.rollouts.map((r) => r.rolloutId)).toEqual(['ok-1', 'ok-2']);
    const msgs = batch.issues.map(formatIssue);
    expect(msgs[0]).toMatch(/^line 2 is not valid JSON/);
    expect(msgs.slice(1)).toEqual([
      'line 3: calls[0].response_log_probs has 2 values but response_token_ids has 3',
      'line 5: calls[0].prompt_token_ids[1] must be a token id (integer ≥ 0), got a string ("x")',
      'line 6: calls[0].request.messages[1].role must be system, user, assistant or tool, got "robot"',
      'line 7: rollout_id must be a string, got nothing (missing)',
      'line 9 is neither a rollout record ({"rollout_id", "calls", …}) nor an event ({"event_type", …}) nor a line of a known framework (NeMo Gym, verl, SkyRL, OpenAI log): it is a JSON number',
    ]);
    expect(batch.counters.records_skipped).toBe(6);
  });

  it('reads the same trace when it arrives in arbitrary chunks', () => {
    const text =
      toJsonlTrace([sampleRollout('a'), sampleRollout('b')]) +
      'not json\n' +
      toJsonlTrace([sampleRollout('c')]);
    const whole = parseJsonlTrace(text);
    const reader = new TraceReader();
    for (let i = 0; i < text.length; i += 37) reader.push(text.slice(i, i + 37));
    const chunked = reader.finish();
    expect(chunked.rollouts).toEqual(whole.rollouts);
    expect(chunked.issues).toEqual(whole.issues);
    expect(chunked.issues.map(formatIssue)[0]).toMatch(/^line 3 is not valid JSON/);
    expect(chunked.rollouts.map((r) => r.rolloutId)).toEqual(['a', 'b', 'c']);
  });

  it('gives each call its own ids and log-probs although a record reads them into one buffer', () => {
    const r = sampleRollout('a');
    const second = { ...r.calls[0], promptTokenIds: Int32Array.from([1, 2, 3, 4, 5, 6, 7]) };
    second.responseTokenIds = Int32Array.from([8, 9]);
    second.responseLogProbs = undefined;
    second.mismatchedLogProbs = Float32Array.from([-0.5]);
    const [back] = parseJsonlTrace(toJsonlTrace([{ ...r, calls: [r.calls[0], second] }])).rollouts;
    const [c0, c1] = back.calls;
    expect(Array.from(c0.promptTokenIds!)).toEqual([151644, 8948, 198, 2610]);
    expect(Array.from(c0.responseTokenIds!)).toEqual([151657, 198, 4913]);
    expect(Array.from(c1.promptTokenIds!)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Array.from(c1.responseTokenIds!)).toEqual([8, 9]);
    expect(Array.from(c1.mismatchedLogProbs!)).toEqual([-0.5]);
    // writing through one call's array leaves every other array of the record as it was
    c0.promptTokenIds!.fill(0);
    c0.responseLogProbs!.fill(0);
    expect(Array.from(c0.responseTokenIds!)).toEqual([151657, 198, 4913]);
    expect(Array.from(c1.promptTokenIds!)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(Array.from(c1.mismatchedLogProbs!)).toEqual([-0.5]);
  });

  it('reports progress up to the total', () => {
    const text = toJsonlTrace([sampleRollout('a'), sampleRollout('b')]);
    const seen: [number, number][] = [];
    parseTraceText(text, { onProgress: (d, t) => seen.push([d, t]) });
    expect(seen.at(-1)).toEqual([text.length, text.length]);
  });
});

describe('completed-rollouts JSON (golden agl_trajectory input shape)', () => {
  const doc = {
    rollouts: [
      {
        rollout_id: 'a',
        data_id: 'd',
        step: 0,
        sample_idx_in_step: 1,
        final_reward: null,
        triplets: [
          { prompt_token_ids: [1, 2], response_token_ids: [3, 4, 5], response_log_probs: [-1, -2] },
          { prompt_token_ids: [1, 2, 3, 4, 5], response_token_ids: [6], response_log_probs: ['nan'] },
          { prompt_token_ids: [9], response_token_ids: [7], response_log_probs: null },
        ],
      },
      { rollout_id: 'b', data_id: 'd', step: 0, sample_idx_in_step: 0, final_reward: 'high', triplets: [] },
      { rollout_id: 'c', data_id: 'd', step: 0, sample_idx_in_step: 2, final_reward: 1, triplets: null },
    ],
  };
  it('makes wrong-length log-probs absent (warning + counter), NaN for non-finite, skips bad rollouts', () => {
    const text = JSON.stringify(doc);
    expect(detectFormat(text)).toBe('completed-rollouts');
    const batch = parseTraceText(text);
    expect(batch.rollouts.map((r) => r.rolloutId)).toEqual(['a', 'c']);
    const a = batch.rollouts[0];
    expect(a.calls[0].responseLogProbs).toBeUndefined();
    expect(Array.from(a.calls[0].mismatchedLogProbs!)).toEqual([-1, -2]);
    // and our JSONL keeps that list losslessly
    expect(parseJsonlTrace(toJsonlTrace(batch.rollouts)).rollouts).toEqual(batch.rollouts);
    expect(Number.isNaN(a.calls[1].responseLogProbs![0])).toBe(true);
    expect(a.calls[2].responseLogProbs).toBeUndefined();
    expect(batch.counters).toMatchObject({
      logprobs_wrong_length_calls: 1,
      nonfinite_logprobs: 1,
      records_skipped: 1,
    });
    expect(batch.issues.map(formatIssue)).toEqual([
      "rollouts[0]: triplets[0].response_log_probs has 2 values but response_token_ids has 3; the call's log-probs are treated as absent",
      'rollouts[1]: final_reward must be a finite number or null, got a string ("high")',
    ]);
  });
});

// Shapes follow agentlightning/server/proxy.py `_capture_event` and routes/events.py (full and triplet forms).
const fullEvents = [
  {
    event_type: 'model_request',
    rollout_id: 'ro-1',
    attempt_id: '0',
    timestamp: 1700000000.5,
    data: {
      model: 'Qwen/Qwen3-0.6B',
      model_version: 4,
      request: {
        model: 'Qwen/Qwen3-0.6B',
        messages: [{ role: 'user', content: 'hi' }],
        temperature: 1.0,
        return_token_ids: true,
        logprobs: true,
      },
      response: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        prompt_token_ids: [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198],
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Hello', tool_calls: [] },
            finish_reason: 'stop',
            token_ids: [9707, 151645],
            logprobs: {
              content: [
                { token: 'Hello', logprob: -0.25 },
                { token: '<|im_end|>', logprob: -0.0001 },
              ],
            },
          },
        ],
        usage: { prompt_tokens: 9, completion_tokens: 2 },
      },
      server: { model: 'Qwen/Qwen3-0.6B', endpoint: 'http://vllm:8000/v1', version: 4 },
      latency_ms: 120.0,
      http_status: 200,
      status: 'ok',
      retry_count: 0,
      usage: { prompt_tokens: 9, completion_tokens: 2 },
      finish_reason: 'stop',
    },
  },
  {
    event_type: 'model_request',
    rollout_id: 'ro-1',
    attempt_id: '0',
    timestamp: 1700000001.0,
    data: {
      model: 'Qwen/Qwen3-0.6B',
      model_version: 4,
      request: { messages: [{ role: 'user', content: 'again' }] },
      response: { error: { message: 'Engine overloaded', code: 503 } },
      server: { model: 'Qwen/Qwen3-0.6B', endpoint: 'http://vllm:8000/v1', version: 4 },
      latency_ms: 5.0,
      http_status: 503,
      status: 'error',
      retry_count: 3,
      usage: null,
      finish_reason: null,
    },
  },
  {
    event_type: 'tool_result',
    rollout_id: 'ro-1',
    attempt_id: '0',
    timestamp: 1700000001.2,
    data: { ok: true },
  },
  {
    event_type: 'reward',
    rollout_id: 'ro-1',
    attempt_id: '0',
    timestamp: 1700000002,
    data: { value: 0.75, source: 'agent' },
  },
];

const tripletEvents = [
  {
    event_type: 'model_request',
    rollout_id: 'ro-2',
    attempt_id: '0',
    timestamp: 1.0,
    data: {
      prompt_token_ids: [1, 2, 3],
      response_token_ids: [4, 5],
      response_log_probs: [-0.5, -1.5],
      server: { model: 'm', version: 2 },
    },
  },
  {
    event_type: 'model_request',
    rollout_id: 'ro-2',
    attempt_id: '0',
    timestamp: 2.0,
    data: {
      prompt_token_ids: [1, 2, 3, 4, 5, 9],
      response_token_ids: [6],
      response_log_probs: null,
      server: { model: 'm', version: 2 },
      http_status: 200,
      status: 'ok',
    },
  },
  { event_type: 'reward', rollout_id: 'ro-2', attempt_id: '0', timestamp: 3.0, data: { value: 1 } },
  {
    event_type: 'reward',
    rollout_id: 'ro-2',
    attempt_id: '0',
    timestamp: 4.0,
    data: { value: 0, reason: 'late' },
  },
];

describe('Agent Lightning gateway events → trace model', () => {
  it('reads the full form: messages, engine ids, log-probs, failed calls, rewards, other events', () => {
    const text = JSON.stringify(fullEvents);
    expect(detectFormat(text)).toBe('agl-events');
    const b = parseTraceText(text);
    expect(b.issues).toEqual([]);
    expect(b.rollouts).toHaveLength(1);
    const r = b.rollouts[0];
    expect(r.rolloutId).toBe('ro-1');
    expect(r.dataId).toBe('ro-1');
    expect(r.finalReward).toBe(0.75);
    expect(r.calls).toHaveLength(2);
    const c = r.calls[0];
    expect(Array.from(c.promptTokenIds!)).toEqual([151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]);
    expect(Array.from(c.responseTokenIds!)).toEqual([9707, 151645]);
    expect(Array.from(c.responseLogProbs!)).toEqual([-0.25, Math.fround(-0.0001)]);
    expect(c.response?.message.content).toBe('Hello');
    expect(c.response?.finishReason).toBe('stop');
    expect(c.request.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(c.request.sampling.temperature).toBe(1);
    expect(c.engine).toEqual({ engine: 'http://vllm:8000/v1', model: 'Qwen/Qwen3-0.6B', policyVersion: 4 });
    expect(c.timings).toEqual({ startMs: 1700000000500 - 120, endMs: 1700000000500 });
    expect(r.calls[1].httpStatus).toBe(503);
    expect(r.calls[1].error).toContain('Engine overloaded');
    expect(r.metadata.agl_other_events).toHaveLength(1);
    expect(b.counters).toMatchObject({ model_request_events: 2, other_events: 1 });
  });

  it('reads the format=triplet form (last reward wins) and as JSON Lines', () => {
    const b = parseTraceText(JSON.stringify(tripletEvents));
    const r = b.rollouts[0];
    expect(r.calls.map((c) => Array.from(c.promptTokenIds!))).toEqual([
      [1, 2, 3],
      [1, 2, 3, 4, 5, 9],
    ]);
    expect(Array.from(r.calls[0].responseLogProbs!)).toEqual([-0.5, -1.5]);
    expect(r.calls[1].responseLogProbs).toBeUndefined();
    expect(r.calls[0].engine?.policyVersion).toBe(2);
    expect(r.finalReward).toBe(0);
    expect(r.rewards.map((w) => w.value)).toEqual([1, 0]);
    const lines = [...fullEvents, ...tripletEvents].map((e) => JSON.stringify(e)).join('\n');
    expect(detectFormat(lines)).toBe('agl-event-lines');
    const both = parseTraceText(lines);
    expect(both.rollouts.map((x) => x.rolloutId)).toEqual(['ro-1', 'ro-2']);
  });

  it('turns non-finite log-probs into NaN and counts them', () => {
    const ev = structuredClone(fullEvents[0]);
    (
      ev.data.response as { choices: { logprobs: { content: { logprob: unknown }[] } }[] }
    ).choices[0].logprobs.content[1].logprob = null;
    const b = readAglEvents([ev]);
    const lp = b.rollouts[0].calls[0].responseLogProbs!;
    expect(lp[0]).toBe(-0.25);
    expect(Number.isNaN(lp[1])).toBe(true);
    expect(b.counters.nonfinite_logprobs).toBe(1);
  });

  it('keeps the rollout of a malformed event without it, marked incomplete, and keeps the others', () => {
    const bad = structuredClone(tripletEvents[0]) as Record<string, unknown>;
    (bad.data as Record<string, unknown>).prompt_token_ids = [1, -2];
    const noType = { rollout_id: 'ro-3', data: {} };
    const b = readAglEvents([...fullEvents, bad, noType, { event_type: 'reward', data: { value: 1 } }]);
    expect(b.rollouts.map((r) => r.rolloutId)).toEqual(['ro-1', 'ro-2', 'ro-3']);
    expect(b.issues.map(formatIssue)).toEqual([
      'events[4]: data.prompt_token_ids[1] must be a token id (integer ≥ 0), got -2; rollout ro-2 is kept without this event and marked incomplete',
      'events[5]: event_type must be a string, got nothing (missing); rollout ro-3 is kept without it and marked incomplete',
      'events[6]: rollout_id must be a string, got nothing (missing); it lies among the events of rollout ro-3, kept and marked incomplete',
    ]);
    const [r1, r2, r3] = b.rollouts;
    expect(r1.incomplete).toBeUndefined();
    expect(r2.calls).toHaveLength(0);
    expect(r2.incomplete).toEqual([
      { where: 'events[4]', message: 'data.prompt_token_ids[1] must be a token id (integer ≥ 0), got -2' },
    ]);
    expect(r3.incomplete?.map((g) => g.where)).toEqual(['events[5]', 'events[6]']);
    // the marks survive JSONL and the events bundle
    expect(parseTraceText(toJsonlTrace(b.rollouts)).rollouts).toEqual(b.rollouts);
    expect(parseTraceText(JSON.stringify(toAglEventsBundle(b.rollouts))).rollouts).toEqual(b.rollouts);
  });

  it('exports a bundle that reads back to the same rollouts (events ⇄ JSONL)', () => {
    const rollouts = [sampleRollout('r1')];
    const bundle = JSON.stringify(toAglEventsBundle(rollouts));
    expect(detectFormat(bundle)).toBe('agl-events');
    const back = parseTraceText(bundle);
    expect(back.issues).toEqual([]);
    const r = back.rollouts[0];
    const o = rollouts[0];
    expect(r.dataId).toBe(o.dataId);
    expect(r.step).toBe(2);
    expect(r.sampleIdxInStep).toBe(5);
    expect(r.finalReward).toBe(1);
    expect(r.calls[0].request.messages).toEqual(o.calls[0].request.messages);
    expect(r.calls[0].request.tools).toEqual(o.calls[0].request.tools);
    expect(r.calls[0].response).toEqual(o.calls[0].response);
    expect(r.calls[0].promptTokenIds).toEqual(o.calls[0].promptTokenIds);
    expect(r.calls[0].responseTokenIds).toEqual(o.calls[0].responseTokenIds);
    expect(r.calls[0].responseLogProbs).toEqual(o.calls[0].responseLogProbs);
    expect(r.calls[0].timings).toEqual(o.calls[0].timings);
    expect(r.calls[1].httpStatus).toBe(500);
    expect(r.calls[1].error).toBe('upstream timeout');
    expect(r.metadata).toEqual(o.metadata);
    // events → JSONL → events gives the same JSONL again
    expect(toJsonlTrace(parseTraceText(JSON.stringify(toAglEventsBundle([r]))).rollouts)).toBe(
      toJsonlTrace([r]),
    );
  });
});

describe('detectFormat', () => {
  it('names unknown formats precisely', () => {
    expect(() => detectFormat('')).toThrow(new TraceFormatError('the trace is empty'));
    expect(() => detectFormat('hello world')).toThrow(/not JSON/);
    expect(() => detectFormat('{"foo": 1}')).toThrow('unknown trace format: an object with keys "foo"');
    expect(() => detectFormat('[1, 2]')).toThrow('unknown trace format: a list whose items are not events');
    expect(() => detectFormat('{"a":1}\n{"b":2}')).toThrow(/line 1 is an object with keys "a"/);
    expect(() => detectFormat('[1, 2')).toThrow('unknown trace format: a list whose items are not events');
    expect(() => detectFormat('\n\n{"x": [1,\n')).toThrow(/not JSON, and no line is a JSON record/);
  });
  it('recognises JSON Lines whose first line is broken, and reports that line', () => {
    const text = '{"rollout_id": "x", "calls": [\n' + toJsonlTrace([sampleRollout('ok')]);
    expect(detectFormat(text)).toBe('jsonl');
    const b = parseTraceText(text);
    expect(b.rollouts.map((r) => r.rolloutId)).toEqual(['ok']);
    expect(formatIssue(b.issues[0])).toMatch(/^line 1 is not valid JSON/);
  });
});
