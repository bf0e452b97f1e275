import { describe, expect, it } from 'vitest';
import { parseArgs, UsageError } from '../../src/cli/args';

const spec = {
  level: { type: 'string' as const },
  seed: { type: 'number' as const },
  json: { type: 'bool' as const },
  behaviour: { type: 'string' as const, multiple: true },
};

describe('parseArgs', () => {
  it('parses flags, values and positionals', () => {
    const p = parseArgs(
      ['a.jsonl', '--level', 'trajectory', '--seed=3', '--json', '--behaviour', 'x', '--behaviour', 'y'],
      spec,
    );
    expect(p.positionals).toEqual(['a.jsonl']);
    expect(p.flags).toEqual({ level: 'trajectory', seed: 3, json: true, behaviour: ['x', 'y'] });
  });
  it('rejects unknown flags, missing values and bad numbers', () => {
    expect(() => parseArgs(['--nope'], spec)).toThrow(new UsageError('unknown flag --nope'));
    expect(() => parseArgs(['--level'], spec)).toThrow(/--level needs a value/);
    expect(() => parseArgs(['--seed', 'x'], spec)).toThrow(/--seed expects a number, got 'x'/);
    expect(() => parseArgs(['--json=1'], spec)).toThrow(/takes no value/);
    expect(() => parseArgs(['--seed', '1', '--seed', '2'], spec)).toThrow(/given twice/);
  });
});
