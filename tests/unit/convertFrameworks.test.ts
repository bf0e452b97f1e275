import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { command as convert } from '../../src/cli/commands/convert';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { parseTraceText, retokenizedMark } from '../../src/core/trace/io';
import type { Rollout } from '../../src/core/trace/types';

const root = join(import.meta.dirname, '..', '..');
const samples = join(root, 'public', 'samples', 'frameworks');

let dir: string;
let errors: string[];
let logs: string[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lab-convert-fw-'));
  errors = [];
  logs = [];
  vi.spyOn(console, 'error').mockImplementation((m: string) => void errors.push(m));
  vi.spyOn(console, 'log').mockImplementation((m: string) => void logs.push(m));
});
afterEach(() => vi.restoreAllMocks());

/** Every call's ids and log-probs (NaN kept as NaN), in order. */
function tokens(rs: Rollout[]) {
  return rs.flatMap((r) =>
    r.calls.map((c) => [
      c.promptTokenIds ? Array.from(c.promptTokenIds) : null,
      c.responseTokenIds ? Array.from(c.responseTokenIds) : null,
      c.responseLogProbs ? Array.from(c.responseLogProbs) : null,
    ]),
  );
}

const CASES = [
  { file: 'nemo-gym-search.jsonl', format: 'nemo-gym', tokenizer: false, logProbs: true },
  { file: 'nemo-gym-coding.jsonl', format: 'nemo-gym', tokenizer: false, logProbs: true },
  { file: 'openai-log-chat-search.jsonl', format: 'openai-log', tokenizer: false, logProbs: true },
  { file: 'openai-log-responses-search.jsonl', format: 'openai-log', tokenizer: true, logProbs: false },
  { file: 'verl-dump-instruction.jsonl', format: 'verl-dump', tokenizer: true, logProbs: false },
  { file: 'skyrl-dump-instruction.jsonl', format: 'skyrl-dump', tokenizer: true, logProbs: false },
] as const;

describe('lab convert from other frameworks', () => {
  for (const c of CASES)
    it(`${c.file} → our JSONL → import keeps every id and log-prob`, async () => {
      const src = join(samples, c.file);
      const out = join(dir, 'out.jsonl');
      const args = [src, out, ...(c.tokenizer ? ['--tokenizer', 'qwen3'] : [])];
      expect(await convert.run(args)).toBe(0);
      expect(logs.join('\n')).toContain(`(${c.format} → jsonl)`);
      const direct = parseTraceText(readFileSync(src, 'utf8'), {
        tokenizer: c.tokenizer ? loadTokenizer('qwen3') : undefined,
      });
      const back = parseTraceText(readFileSync(out, 'utf8'));
      expect(back.format).toBe('jsonl');
      expect(back.issues).toEqual([]);
      expect(back.rollouts).toEqual(direct.rollouts);
      const t = tokens(back.rollouts);
      expect(t.length).toBeGreaterThan(0);
      expect(t.every(([p, r]) => p !== null && r !== null)).toBe(true);
      expect(t.every(([, , lp]) => (lp !== null) === c.logProbs)).toBe(true);
      expect(tokens(back.rollouts)).toEqual(tokens(direct.rollouts));
      expect(back.rollouts.every((r) => (retokenizedMark(r) !== null) === c.tokenizer)).toBe(true);
    });

  it('writes a text-only file without ids when no tokenizer is given, and says so', async () => {
    const out = join(dir, 'out.jsonl');
    expect(await convert.run([join(samples, 'verl-dump-instruction.jsonl'), out])).toBe(0);
    expect(errors.join('\n')).toMatch(/12 calls are text only .*--tokenizer gives them ids/);
    const back = parseTraceText(readFileSync(out, 'utf8'));
    expect(back.rollouts).toHaveLength(12);
    expect(back.rollouts.every((r) => r.calls[0].promptTokenIds === undefined)).toBe(true);
  });

  it('reports a malformed line, a length mismatch and a missing field by line, and writes the rest', async () => {
    const lines = readFileSync(join(samples, 'nemo-gym-search.jsonl'), 'utf8').trim().split('\n');
    const o = JSON.parse(lines[3]);
    const item = o.response.output.find((x: Record<string, unknown>) => x.generation_token_ids);
    item.generation_log_probs.push(-1);
    lines[3] = JSON.stringify(o);
    lines[5] = lines[5].slice(0, 100);
    const p = JSON.parse(lines[6]);
    delete p.response;
    lines[6] = JSON.stringify(p);
    const src = join(dir, 'bad.jsonl');
    writeFileSync(src, `${lines.join('\n')}\n`);
    const out = join(dir, 'out.jsonl');
    expect(await convert.run([src, out])).toBe(0);
    const n = item.generation_token_ids.length;
    expect(errors).toEqual([
      expect.stringMatching(
        new RegExp(
          `: skipped: line 4: response\\.output\\[\\d+\\]\\.generation_log_probs has ${n + 1} values but generation_token_ids has ${n}$`,
        ),
      ),
      expect.stringMatching(/: skipped: line 6 is not valid JSON/),
      expect.stringMatching(/: skipped: line 7: response must be an object, got nothing \(missing\)$/),
    ]);
    expect(logs.join('\n')).toMatch(/converted 5 rollouts \(nemo-gym → jsonl\), skipped 3 records/);
    const back = parseTraceText(readFileSync(out, 'utf8'));
    const whole = parseTraceText(readFileSync(join(samples, 'nemo-gym-search.jsonl'), 'utf8'));
    // nothing read before or after a bad line is lost
    expect(back.rollouts).toEqual(whole.rollouts.filter((_, i) => i !== 3 && i !== 5 && i !== 6));
  });

  it('rejects an unknown tokenizer as a usage error', async () => {
    await expect(
      convert.run([
        join(samples, 'verl-dump-instruction.jsonl'),
        join(dir, 'o.jsonl'),
        '--tokenizer',
        join(dir, 'none'),
      ]),
    ).rejects.toThrow(/--tokenizer: .*no such folder/);
  });
});
