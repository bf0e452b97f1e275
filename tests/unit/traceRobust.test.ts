/**
 * Each class of bad import input, by example: none crashes an importer, a bad record costs only itself,
 * detection never discards valid lines, what is accepted is written back and read again, partial rollouts are
 * marked, and files are read as streams.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { command as analyze } from '../../src/cli/commands/analyze';
import { command as convert } from '../../src/cli/commands/convert';
import { readTraceFile } from '../../src/cli/traceFile';
import { renameDuplicateIds } from '../../src/core/trace/dedupe';
import { nothingToTrainOn, traceInventory } from '../../src/core/trace/inventory';
import {
  parseTraceText,
  rolloutToJsonlLine,
  TraceReader,
  toAglEventsBundle,
  toJsonlTrace,
} from '../../src/core/trace/io';
import { excludeIncomplete, formatIssue } from '../../src/core/trace/types';

const sample = readFileSync('public/samples/search-scripted.jsonl', 'utf8');
const lines = sample.trim().split('\n');
const base = parseTraceText(sample);

function record(i = 0): Record<string, unknown> {
  return JSON.parse(lines[i]) as Record<string, unknown>;
}

function event(type: string, rid: string, data: Record<string, unknown>, timestamp = 1.5) {
  return { event_type: type, rollout_id: rid, attempt_id: '0', timestamp, data };
}

const triplet = (extra: Record<string, unknown> = {}) => ({
  prompt_token_ids: [1, 2],
  response_token_ids: [3, 4],
  response_log_probs: [-0.5, -0.25],
  ...extra,
});

describe('no input crashes an importer; a bad record costs only itself', () => {
  it('objects where strings belong, toString keys, 10^400, lone surrogates: one issue each', () => {
    const bad = [
      {
        ...record(),
        calls: [
          {
            ...(record().calls as object[])[0],
            request: { messages: [{ role: 'user', content: [{ type: { toString: 1 } }] }] },
          },
        ],
      },
      { ...record(), metadata: { toString: { valueOf: 1 } } },
      {
        ...record(),
        calls: [{ ...(record().calls as object[])[0], request: { messages: [], stop: [{ toString: 1 }] } }],
      },
    ].map((r) => JSON.stringify(r));
    const text = [
      ...bad,
      lines[1],
      `${lines[2].slice(0, -1)}, "metadata": {"x": 1e400}}`,
      '{"rollout_id": "\\ud800", "data_id": "d", "calls": []}',
    ].join('\n');
    const b = parseTraceText(text);
    expect(b.issues.map(formatIssue)).toEqual([
      'line 1: calls[0].request.messages[0].content[0].type must be "text", got an object',
      'line 3: calls[0].request.stop[0] must be a string, got an object',
      'line 5: metadata.x is a number too large for JSON (Infinity); write it as a string',
    ]);
    // the toString key is plain data; the lone surrogate round-trips
    expect(b.rollouts.map((r) => r.rolloutId)).toEqual([
      base.rollouts[0].rolloutId,
      base.rollouts[1].rolloutId,
      '\ud800',
    ]);
    expect(parseTraceText(toJsonlTrace(b.rollouts)).rollouts).toEqual(b.rollouts);
  });

  it('deep nesting in metadata, tool arguments, tool schemas and response errors is refused without recursion', () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const r = record();
    const call = (r.calls as Record<string, unknown>[])[0];
    const t1 = JSON.stringify({ ...r, metadata: { x: 0 } }).replace('"x":0', `"x":${deep}`);
    const msgs = (call.request as { messages: Record<string, unknown>[] }).messages;
    const withArgs = {
      ...r,
      calls: [
        {
          ...call,
          response: {
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: 0 } }],
            },
          },
        },
      ],
    };
    const t2 = JSON.stringify(withArgs).replace('"arguments":0', `"arguments":${deep}`);
    const ev = JSON.stringify(
      event('model_request', 'e1', { request: { messages: msgs }, response: { error: 0, choices: [] } }),
    ).replace('"error":0', `"error":${deep}`);
    const b = parseTraceText([t1, t2, lines[3]].join('\n'));
    expect(b.rollouts).toHaveLength(1);
    expect(b.issues.map((i) => `${i.where}: ${i.field} ${i.message.slice(0, 27)}`)).toEqual([
      'line 1: metadata nests deeper than 64 levels',
      'line 2: calls[0].response.message.tool_calls[0].function.arguments nests deeper than 64 levels',
    ]);
    const e = parseTraceText(`[${ev}]`);
    expect(e.issues[0].field).toBe('data.response.error');
    // what is kept can be sent to a worker and written (both recurse)
    structuredClone(b.rollouts);
    expect(() => toJsonlTrace(b.rollouts)).not.toThrow();
  });

  it('a 300k-id streamed chunk is read without spreading it onto the stack', () => {
    const ids = Array.from({ length: 300_000 }, (_, i) => i % 1000);
    const chunks = [
      { prompt_token_ids: [1, 2], choices: [{ token_ids: ids, delta: { content: 'x' } }] },
      { choices: [{ token_ids: [5], delta: { content: 'y' } }] },
    ];
    const b = parseTraceText(
      JSON.stringify([event('model_request', 'big', { request: { messages: [] }, response: chunks })]),
    );
    expect(b.issues).toEqual([]);
    expect(b.rollouts[0].calls[0].responseTokenIds?.length).toBe(300_001);
    expect(b.rollouts[0].calls[0].response?.message.content).toBe('xy');
  });

  it('a record longer than the limit is skipped and reported, the rest is read', () => {
    const reader = new TraceReader({ maxRecordChars: 2000 });
    const long = JSON.stringify({
      rollout_id: 'long',
      data_id: 'd',
      calls: [],
      metadata: { pad: 'x'.repeat(5000) },
    });
    const short = JSON.stringify({ rollout_id: 'short', data_id: 'd', calls: [] });
    for (const piece of [long.slice(0, 3000), long.slice(3000), `\n${short}\n`]) reader.push(piece);
    const b = reader.finish();
    expect(b.rollouts.map((r) => r.rolloutId)).toEqual(['short']);
    expect(formatIssue(b.issues[0])).toBe('line 1 is longer than 2000 characters; skipped');
  });

  it('log-probs beyond float32 are absent values, not Infinity that JSON cannot write', () => {
    const r = record();
    const call = (r.calls as Record<string, unknown>[])[0];
    const lp = [...(call.response_log_probs as number[])];
    lp[0] = -1e39;
    const b = parseTraceText(
      JSON.stringify({ ...r, calls: [{ ...call, response_log_probs: lp }], rewards: [] }),
    );
    expect(Number.isNaN(b.rollouts[0].calls[0].responseLogProbs?.[0])).toBe(true);
    expect(b.counters.nonfinite_logprobs).toBe(1);
    expect(parseTraceText(toJsonlTrace(b.rollouts)).rollouts).toEqual(b.rollouts);
  });
});

describe('format detection never discards valid lines', () => {
  it('one stray event line before a JSONL file costs only that line', () => {
    const stray = JSON.stringify(event('reward', 'zz', { value: 1 }));
    const b = parseTraceText(`${stray}\n${sample}`);
    expect(b.format).toBe('jsonl');
    expect(b.rollouts).toEqual(base.rollouts);
    expect(b.issues.map(formatIssue)).toEqual([
      `line 1 is an Agent Lightning event ({"event_type", …}), but this file holds rollout records (${lines.length} of ${lines.length + 1} records); skipped`,
    ]);
  });

  it('a few broken first lines, and a first line that is a JSON list, are reported and skipped', () => {
    const b = parseTraceText(`garbage\n{"rollout_id": "x", "calls": [\n[1, 2]\n${sample}`);
    expect(b.format).toBe('jsonl');
    expect(b.rollouts).toEqual(base.rollouts);
    expect(b.issues.map((i) => i.where)).toEqual(['line 1', 'line 2', 'line 3']);
  });

  it('a completed-rollouts file is judged by its entries, not by the first one', () => {
    const entry = (id: string) => ({ rollout_id: id, data_id: 'g', final_reward: 1, triplets: [triplet()] });
    const stray = { rollout: { rollout_id: 'b0' }, events: [] };
    const b = parseTraceText(JSON.stringify({ rollouts: [stray, entry('c1'), entry('c2')] }));
    expect(b.format).toBe('completed-rollouts');
    expect(b.rollouts.map((r) => r.rolloutId)).toEqual(['c1', 'c2']);
    expect(formatIssue(b.issues[0])).toMatch(
      /^rollouts\[0\] is an events-bundle entry .*, but this file holds completed rollouts \(2 of 3 records\); skipped$/,
    );
  });

  it('pretty-printed documents, BOMs and CRLF line ends read as the same trace', () => {
    const bundle = toAglEventsBundle(base.rollouts);
    expect(parseTraceText(`\ufeff${JSON.stringify(bundle, null, 2)}`).rollouts).toEqual(base.rollouts);
    expect(parseTraceText(sample.replace(/\n/g, '\r\n')).rollouts).toEqual(base.rollouts);
  });
});

describe('whatever is accepted is written back and read again', () => {
  it('events with non-integer http_status, model_version or batch_idx, overflowing timestamps, response ids without prompt ids are refused by field', () => {
    const d = { prompt_token_ids: [1], response_token_ids: [2] };
    const events = [
      event('model_request', 'r1', { ...d, http_status: 200.5 }),
      event('model_request', 'r2', { ...d, model_version: 1.5 }),
      event('model_request', 'r3', d, 1e306),
      event('model_request', 'r4', {
        request: { messages: [] },
        response: { choices: [{ token_ids: [3], message: { role: 'assistant', content: 'a' } }] },
      }),
      event('model_request', 'r5', { ...d, http_status: 1e300 }),
    ];
    const bundle = {
      rollouts: [
        {
          rollout: { rollout_id: 'r6', metadata: { batch_idx: 0.5 } },
          events: [event('reward', 'r6', { value: 1 })],
        },
      ],
    };
    const b = parseTraceText(JSON.stringify(events));
    expect(b.issues.map((i) => `${i.where}: ${i.field} ${i.message.split(';')[0]}`)).toEqual([
      'events[0]: data.http_status must be an integer, got 200.5',
      'events[1]: data.model_version must be an integer, got 1.5',
      'events[2]: timestamp is 1e+306, too large for a time in seconds',
      'events[3]: data.response.prompt_token_ids is missing but the response has token ids',
      'events[4]: data.http_status must be an integer of at most 2^53 − 1 in magnitude, got 1e+300',
    ]);
    // the rollouts are kept without those calls, marked, and what is kept writes and reads back
    expect(b.rollouts.every((r) => r.calls.length === 0 && r.incomplete?.length === 1)).toBe(true);
    expect(parseTraceText(toJsonlTrace(b.rollouts)).rollouts).toEqual(b.rollouts);
    const c = parseTraceText(JSON.stringify(bundle));
    expect(formatIssue(c.issues[0])).toBe(
      'rollouts[0]: rollout.metadata.batch_idx must be an integer, got 0.5',
    );
  });

  it('convert writes only what its reader reads back, in both directions', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-robust-'));
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      writeFileSync(join(dir, 'in.jsonl'), sample);
      expect(await convert.run([join(dir, 'in.jsonl'), join(dir, 'b.json'), '--to', 'agl-events'])).toBe(0);
      expect(await convert.run([join(dir, 'b.json'), join(dir, 'back.jsonl')])).toBe(0);
      expect(readFileSync(join(dir, 'back.jsonl'), 'utf8')).toBe(sample);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });
});

describe('partial rollouts are marked', () => {
  it('an unreadable event line marks the rollout it names, or the rollouts around it, and they can be left out', () => {
    const evs = toAglEventsBundle(base.rollouts.slice(0, 3)).rollouts.flatMap((e) => e.events as object[]);
    const text = evs.map((e) => JSON.stringify(e));
    const named = text.findIndex((t) => t.includes(base.rollouts[1].rolloutId));
    text[named] = text[named].slice(0, 120); // cut: the rollout id is still readable
    const between = text.findIndex((t) => t.includes(base.rollouts[2].rolloutId));
    text.splice(between, 0, '{{{ not json');
    const b = parseTraceText(text.join('\n'));
    expect(b.rollouts).toHaveLength(3);
    const [r0, r1, r2] = b.rollouts;
    // the unreadable line lies between the events of r1 and r2: either may miss it
    expect(r0.incomplete).toBeUndefined();
    expect(r1.incomplete?.map((g) => g.where)).toEqual([`line ${named + 1}`, `line ${between + 1}`]);
    expect(r2.incomplete?.map((g) => g.where)).toEqual([`line ${between + 1}`]);
    expect(r1.calls.length).toBe(base.rollouts[1].calls.length - 1);
    expect(b.issues.map(formatIssue)[0]).toMatch(
      /is not valid JSON .*; rollout .* is kept without it and marked incomplete/,
    );
    expect(excludeIncomplete(b).rollouts).toEqual([r0]);
    // the marks are part of the trace: they survive JSONL
    expect(parseTraceText(toJsonlTrace(b.rollouts)).rollouts).toEqual(b.rollouts);
  });

  it('a bad triplet of a completed rollout is left out and the rollout marked', () => {
    const doc = {
      rollouts: [
        {
          rollout_id: 'c',
          data_id: 'g',
          final_reward: 0.5,
          triplets: [triplet(), triplet({ prompt_token_ids: [1, 'x'] })],
        },
      ],
    };
    const b = parseTraceText(JSON.stringify(doc));
    expect(b.rollouts[0].calls).toHaveLength(1);
    expect(b.rollouts[0].incomplete).toEqual([
      {
        where: 'rollouts[0].triplets[1].prompt_token_ids[1]',
        message: 'must be a token id (integer ≥ 0), got a string ("x")',
      },
    ]);
  });
});

describe('duplicate rollout ids and empty results', () => {
  it('duplicate ids are renamed for the page and reported', () => {
    const b = parseTraceText(`${lines[0]}\n${lines[0]}\n${lines[0]}`);
    const d = renameDuplicateIds(b.rollouts);
    const id = base.rollouts[0].rolloutId;
    expect(d.rollouts.map((r) => r.rolloutId)).toEqual([id, `${id}#2`, `${id}#3`]);
    expect(d.issues.map((i) => i.severity)).toEqual(['warning', 'warning']);
  });

  it('a trace with nothing to train on is explained', () => {
    const none = parseTraceText('{"rollout_id": "a", "data_id": "t", "calls": [], "final_reward": 1}');
    expect(nothingToTrainOn(traceInventory(none.rollouts))).toBe(
      'no call can be trained on: none of its 1 rollouts made a call (rewards only)',
    );
    const failed = {
      ...record(),
      calls: (record().calls as object[]).map((c) => ({ ...c, http_status: 500, error: 'x' })),
    };
    expect(nothingToTrainOn(traceInventory(parseTraceText(JSON.stringify(failed)).rollouts))).toMatch(
      /calls failed/,
    );
    expect(nothingToTrainOn(traceInventory(base.rollouts))).toBeNull();
  });
});

describe('lab analyze on traces without trainable rows', () => {
  let errors: string[];
  beforeEach(() => {
    errors = [];
    vi.spyOn(console, 'error').mockImplementation((m: string) => void errors.push(m));
    vi.spyOn(console, 'log').mockImplementation(() => {});
  });
  afterEach(() => vi.restoreAllMocks());

  it('reports rewards-only and all-failed traces in one line with exit 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-empty-'));
    const rewardsOnly = join(dir, 'r.jsonl');
    writeFileSync(rewardsOnly, '{"rollout_id": "a", "data_id": "t", "calls": [], "final_reward": 1}\n');
    expect(await analyze.run([rewardsOnly])).toBe(1);
    expect(errors.at(-1)).toBe(
      `lab analyze: ${rewardsOnly}: 1 rollouts; no call can be trained on: none of its 1 rollouts made a call (rewards only); no training rows`,
    );
    const failed = join(dir, 'f.jsonl');
    const rec = record();
    writeFileSync(
      failed,
      `${JSON.stringify({ ...rec, calls: (rec.calls as object[]).map((c) => ({ ...c, http_status: 502, error: 'engine failed' })) })}\n`,
    );
    expect(await analyze.run([failed])).toBe(1);
    expect(errors.at(-1)).toMatch(/no call can be trained on: \d+ of \d+ calls failed; no training rows$/);
  });
});

describe('files are read as streams', () => {
  it('readTraceFile gives what parseTraceText gives, for every format', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-stream-'));
    const texts = {
      jsonl: sample,
      bundle: JSON.stringify(toAglEventsBundle(base.rollouts)),
      lines: toAglEventsBundle(base.rollouts)
        .rollouts.flatMap((e) => (e.events as object[]).map((x) => JSON.stringify(x)))
        .join('\n'),
    };
    for (const [name, text] of Object.entries(texts)) {
      const path = join(dir, name);
      writeFileSync(path, text);
      const streamed = await readTraceFile(path);
      const whole = parseTraceText(text);
      expect(streamed.rollouts.map(rolloutToJsonlLine)).toEqual(whole.rollouts.map(rolloutToJsonlLine));
      expect(streamed.lines).toBe(whole.lines);
    }
  });
});
