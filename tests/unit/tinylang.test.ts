import { describe, expect, it } from 'vitest';
import { extractProgram, runCodingTests } from '../../src/harness/coding';
import { getHarness } from '../../src/harness/registry';
import { runTally } from '../../src/harness/tinylang';

describe('Tally interpreter', () => {
  it('runs variables, arithmetic, if/else and while', () => {
    const src =
      '# fizz-ish\nlet i = 1\nwhile i <= 6\n  if i % 3 == 0 and not (i == 6)\n    print -i\n  else\n    print i * 10 / 4\n  end\n  i = i + 1\nend';
    expect(runTally(src, {})).toMatchObject({ output: ['2', '5', '-3', '10', '12', '15'] });
    expect(runTally('print 7 / -2\nprint 7 % 3\nprint 1 < 2 or 0', {}).output).toEqual(['-3', '1', '1']);
    expect(runTally('print n + 1', { n: 41 }).output).toEqual(['42']);
  });

  it('reports errors with line numbers and keeps output printed before them', () => {
    expect(runTally('print 1\nprint y', {})).toMatchObject({
      output: ['1'],
      error: "line 2: unknown variable 'y'",
    });
    expect(runTally('x = 1', {}).error).toBe("line 1: assignment to undeclared variable 'x' (use let)");
    expect(runTally('print 1 / 0', {}).error).toBe('line 1: division by zero');
    expect(runTally('if 1\nprint 2', {}).error).toBe("line 1: 'if' is never closed with 'end'");
    expect(runTally('end', {}).error).toMatch(/'end' without/);
    expect(runTally('print (1 + 2', {}).error).toBe("line 1: missing ')'");
    expect(runTally('print 1 $ 2', {}).error).toBe("line 1: unexpected character '$'");
    expect(runTally('launch rockets', {}).error).toBe("line 1: unknown statement 'launch'");
    expect(runTally('let let = 2', {}).error).toBe("line 1: 'let' is a keyword");
    expect(runTally('let x = 99999999\nwhile 1\n  x = x * x\nend', {}).error).toMatch(/integer overflow/);
  });

  it('stops non-terminating programs by step and time budgets', () => {
    expect(runTally('while 1\nend', {}, { maxSteps: 1000 }).error).toBe(
      'line 1: stopped after 1000 steps (infinite loop?)',
    );
    const slow = runTally('let i = 0\nwhile 1\n  i = i + 1\nend', {}, { maxSteps: 1e12, maxMs: 30 });
    expect(slow.error).toMatch(/stopped after 30 ms/);
    expect(runTally('while 1\n  print 1\nend', {}, { maxOutputLines: 5 }).error).toMatch(
      /more than 5 output lines/,
    );
  });

  it("the coding harness scores each task's expert programs: correct passes all tests", () => {
    const h = getHarness('coding');
    for (const task of h.makeTasks('val', 1, 16)) {
      const text = h.expert(task, [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: '' },
        { role: 'user', content: '0/4 tests passed.' },
      ]);
      const program = extractProgram(text);
      expect(program).not.toBeNull();
      expect(runCodingTests(task as never, program as string).passed).toBe(4);
    }
  });
});
