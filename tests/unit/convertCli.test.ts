import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command as convert } from '../../src/cli/commands/convert';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { parseTraceText } from '../../src/core/trace/io';

const events = [
  {
    event_type: 'model_request',
    rollout_id: 'r1',
    attempt_id: '0',
    timestamp: 1.5,
    data: {
      prompt_token_ids: [1, 2],
      response_token_ids: [3],
      response_log_probs: [-0.5],
      server: { model: 'm', version: 1 },
    },
  },
  { event_type: 'reward', rollout_id: 'r1', attempt_id: '0', timestamp: 2, data: { value: 1 } },
  {
    event_type: 'model_request',
    rollout_id: 'r2',
    attempt_id: '0',
    timestamp: 3,
    data: { prompt_token_ids: [1, 'x'], response_token_ids: [3] },
  },
];

let dir: string;
let errors: string[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lab-convert-'));
  errors = [];
  vi.spyOn(console, 'error').mockImplementation((m: string) => void errors.push(m));
  vi.spyOn(console, 'log').mockImplementation(() => {});
});
afterEach(() => vi.restoreAllMocks());

describe('lab convert', () => {
  it('converts AGL events → JSONL → AGL events, reporting the bad rollout', async () => {
    const inPath = join(dir, 'events.json');
    writeFileSync(inPath, JSON.stringify(events));
    const jsonl = join(dir, 'trace.jsonl');
    expect(await convert.run([inPath, jsonl])).toBe(0);
    expect(errors.join('\n')).toContain(
      'events[2]: data.prompt_token_ids[1] must be a token id (integer ≥ 0), got a string ("x"); rollout r2 is kept without this event and marked incomplete',
    );
    const fromJsonl = parseTraceText(readFileSync(jsonl, 'utf8'));
    expect(fromJsonl.format).toBe('jsonl');
    expect(fromJsonl.rollouts.map((r) => r.rolloutId)).toEqual(['r1', 'r2']);
    expect(fromJsonl.rollouts[1].incomplete).toEqual([
      {
        where: 'events[2]',
        message: 'data.prompt_token_ids[1] must be a token id (integer ≥ 0), got a string ("x")',
      },
    ]);
    const complete = join(dir, 'complete.jsonl');
    expect(await convert.run([inPath, complete, '--exclude-incomplete'])).toBe(0);
    expect(parseTraceText(readFileSync(complete, 'utf8')).rollouts.map((r) => r.rolloutId)).toEqual(['r1']);
    const back = join(dir, 'back.json');
    expect(await convert.run([jsonl, back, '--to', 'agl-events'])).toBe(0);
    const again = parseTraceText(readFileSync(back, 'utf8'));
    expect(again.format).toBe('agl-events');
    expect(again.rollouts).toEqual(fromJsonl.rollouts);
  });

  it('gives usage errors for bad flags and files', async () => {
    const inPath = join(dir, 'events.json');
    writeFileSync(inPath, JSON.stringify(events));
    await expect(convert.run([inPath])).rejects.toThrow(UsageError);
    await expect(convert.run([inPath, join(dir, 'o'), '--to', 'csv'])).rejects.toThrow(
      /--to must be one of jsonl, agl-events/,
    );
    await expect(convert.run([inPath, join(dir, 'o'), '--from', 'xml'])).rejects.toThrow(
      /--from must be one of/,
    );
    await expect(convert.run([inPath, join(dir, 'o'), '--bogus'])).rejects.toThrow(/unknown flag --bogus/);
    await expect(convert.run([join(dir, 'missing.json'), join(dir, 'o')])).rejects.toThrow(/does not exist/);
    await expect(convert.run([inPath, join(dir, 'no/such/dir/o')])).rejects.toThrow(/output folder/);
    await expect(convert.run([inPath, inPath])).rejects.toThrow(/same file/);
  });

  it('fails (exit 1) on an unknown format or when no record is valid', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"hello": 1}');
    expect(await convert.run([bad, join(dir, 'o')])).toBe(1);
    expect(errors.at(-1)).toContain('unknown trace format: an object with keys "hello"');
    const none = join(dir, 'none.jsonl');
    writeFileSync(none, '{"rollout_id": "a", "calls": 3}\n');
    expect(await convert.run([none, join(dir, 'o')])).toBe(1);
    expect(errors.join('\n')).toContain('line 1: calls must be an array, got a number');
    // --from naming the wrong format: a clear format error, not a stack trace
    const ev = join(dir, 'ev.json');
    writeFileSync(ev, JSON.stringify(events));
    expect(await convert.run([ev, join(dir, 'o'), '--from', 'completed-rollouts'])).toBe(1);
    expect(errors.at(-1)).toContain(
      'not a completed-rollouts document: document must be an object, got an array',
    );
    await expect(convert.run([ev, dir])).rejects.toThrow(/is a folder, not a file/);
  });
});

describe('loadTokenizer', () => {
  it('loads the bundled Qwen3 tokenizer and rejects bad paths clearly', () => {
    const q = loadTokenizer('qwen3');
    expect(Array.from(q.encode(' Hello'))).toEqual([21927]);
    expect(() => loadTokenizer(join(dir, 'nope'))).toThrow(/no such folder/);
    writeFileSync(join(dir, 'tokenizer.json'), '{}');
    expect(() => loadTokenizer(dir)).toThrow(/tokenizer_config.json is missing/);
  });
});
