import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command } from '../../src/cli/commands/rollout';
import { parseJsonlTrace, toJsonlTrace } from '../../src/core/trace/io';
import { checkConstraint, countWords } from '../../src/harness/instruction';

describe('lab rollout', () => {
  it('turns bad flags into usage errors', async () => {
    const bad: [string[], RegExp][] = [
      [['--engine', 'scripted', '--out', 'x'], /--harness is required/],
      [['--harness', 'chess', '--engine', 'scripted', '--out', 'x'], /--harness must be one of/],
      [
        ['--harness', 'search', '--engine', 'gpt', '--out', 'x'],
        /--engine must be scripted, random, policy, transformers.js or an http/,
      ],
      [['--harness', 'search', '--engine', 'random'], /--out is required/],
      [
        ['--harness', 'search', '--engine', 'random', '--out', 'x', '--behaviour', 'forget'],
        /unknown 'forget'/,
      ],
      [
        ['--harness', 'search', '--engine', 'random', '--out', 'x', '--workers', '0'],
        /--workers must be an integer ≥ 1/,
      ],
      [['--harness', 'search', '--engine', 'random', '--out', 'x', '--n', '2.5'], /--n must be an integer/],
      [
        ['--harness', 'search', '--engine', 'random', '--out', 'x', '--split', 'test'],
        /--split must be train or val/,
      ],
      [
        ['--harness', 'search', '--engine', 'random', '--out', 'x', '--tokenizer', '/nonexistent'],
        /tokenizer '\/nonexistent': no such folder/,
      ],
      [
        ['--harness', 'search', '--engine', 'random', '--out', 'x', '--checkpoint', 'a.safetensors'],
        /--checkpoint only applies to --engine policy/,
      ],
      [
        [
          '--harness',
          'search',
          '--engine',
          'policy',
          '--out',
          'x',
          '--checkpoint',
          '/nonexistent.safetensors',
        ],
        /checkpoint \/nonexistent.safetensors does not exist/,
      ],
      [['--harness', 'search', '--frobnicate'], /unknown flag --frobnicate/],
      [
        ['--harness', 'search', '--engine', 'random', '--out', 'x', '--timeout-ms', '3000000000'],
        /--timeout-ms must be at most 2147483647/,
      ],
    ];
    for (const [argv, re] of bad) {
      const p = command.run(argv);
      await expect(p).rejects.toBeInstanceOf(UsageError);
      await expect(command.run(argv)).rejects.toThrow(re);
    }
  });

  it('writes JSONL traces that read back with ids, log-probs and rewards intact', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'lab-rollout-')), 't.jsonl');
    const code = await command.run([
      '--harness',
      'search',
      '--engine',
      'random',
      '--n',
      '2',
      '--group-size',
      '2',
      '--workers',
      '2',
      '--seed',
      '3',
      '--out',
      out,
    ]);
    expect(code).toBe(0);
    const text = readFileSync(out, 'utf8');
    const parsed = parseJsonlTrace(text);
    expect(parsed.issues).toEqual([]);
    // lines come in the order rollouts finish; sample_idx_in_step keeps the plan's order
    const rs = [...parsed.rollouts].sort((a, b) => (a.sampleIdxInStep ?? 0) - (b.sampleIdxInStep ?? 0));
    expect(rs.map((r) => r.sampleIdxInStep)).toEqual([0, 1, 2, 3]);
    expect(rs[0].dataId).toBe(rs[1].dataId);
    for (const r of rs) {
      expect(r.state).toBe('succeeded');
      expect(r.finalReward).toBe(0);
      for (const c of r.calls) {
        expect(c.promptTokenIds).toBeInstanceOf(Int32Array);
        expect(c.responseTokenIds?.length).toBeGreaterThan(0);
        expect(c.responseLogProbs?.length).toBe(c.responseTokenIds?.length);
      }
    }
    expect(toJsonlTrace(parsed.rollouts)).toBe(text);
  });
});

describe('instruction constraints', () => {
  it('checks each constraint kind', () => {
    expect(countWords('- one two\n- three')).toBe(3);
    expect(checkConstraint({ kind: 'bullets', n: 2 }, '- a\n- b')).toBe(true);
    expect(checkConstraint({ kind: 'bullets', n: 2 }, '- a\n- b\n- c')).toBe(false);
    expect(checkConstraint({ kind: 'lowercase' }, 'all quiet')).toBe(true);
    expect(checkConstraint({ kind: 'uppercase' }, 'ALL Quiet')).toBe(false);
    expect(checkConstraint({ kind: 'include', word: 'owl' }, 'An Owl.')).toBe(true);
    expect(checkConstraint({ kind: 'include', word: 'owl' }, 'bowling')).toBe(false);
    expect(checkConstraint({ kind: 'ban', word: 'light' }, 'lighthouse')).toBe(true);
    expect(checkConstraint({ kind: 'title' }, '<<t>>\nbody')).toBe(true);
    expect(checkConstraint({ kind: 'ends-with', phrase: 'The end.' }, 'x The end.')).toBe(true);
    expect(checkConstraint({ kind: 'max-words', n: 2 }, 'a b c')).toBe(false);
  });
});
