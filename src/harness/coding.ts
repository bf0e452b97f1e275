/**
 * Coding: the model writes a program in Tally (see tinylang.ts) inside a ``` block; the harness runs the task's
 * tests in the sandboxed interpreter and sends the results (or the error) back as the next user message, until
 * every test passes or the turns run out. Reward: CODING_REWARD's (the fraction of tests the last program passed).
 * Levels grade the program's size (lines of the reference solution) and the number of tests.
 */
import { mulberry32 } from '../core/random';
import type { ChatMessage } from '../core/trace/types';
import type { ChatClient } from './client';
import { hash32 } from './engines';
import {
  answerText,
  Conversation,
  checkLevel,
  type Harness,
  type HarnessOptions,
  type HarnessOutcome,
  type Split,
  type TaskBase,
} from './harness';
import { runTally } from './tinylang';

/** The reward definition (Harness.reward). */
export const CODING_REWARD =
  "partial credit: the fraction of the task's tests the last program passed (an error or a timeout fails a test); the continuous pass rate code RL uses (verl reward_score/prime_code with continuous=True, PRIME; AceCoder's test-case pass rate), where a binary all-pass reward gives a small policy no signal";

export interface CodingTest {
  inputs: Record<string, number>;
  expected: string[];
}

export interface CodingTask extends TaskBase {
  kind: string;
  statement: string;
  tests: CodingTest[];
  /** whether the expert's first attempt has a bug it then fixes from the feedback (multi-turn demonstrations) */
  expertStumbles: boolean;
}

interface Problem {
  kind: string;
  statement: string;
  inputs: (rand: () => number) => Record<string, number>;
  solve: (x: Record<string, number>) => number[];
  correct: string;
  buggy: string;
}

const int = (rand: () => number, lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));

const PROBLEMS: Problem[] = [
  {
    kind: 'sum-to-n',
    statement: 'Print the sum 1 + 2 + … + n for the input n.',
    inputs: (r) => ({ n: int(r, 1, 40) }),
    solve: ({ n }) => [(n * (n + 1)) / 2],
    correct: 'let s = 0\nlet i = 1\nwhile i <= n\n  s = s + i\n  i = i + 1\nend\nprint s',
    buggy: 'let s = 0\nlet i = 1\nwhile i < n\n  s = s + i\n  i = i + 1\nend\nprint s',
  },
  {
    kind: 'factorial',
    statement: 'Print n! (the factorial of n; 0! = 1) for the input n.',
    inputs: (r) => ({ n: int(r, 0, 12) }),
    solve: ({ n }) => {
      let f = 1;
      for (let i = 2; i <= n; i++) f *= i;
      return [f];
    },
    correct: 'let f = 1\nlet i = 2\nwhile i <= n\n  f = f * i\n  i = i + 1\nend\nprint f',
    buggy: 'let f = 0\nlet i = 1\nwhile i <= n\n  f = f * i\n  i = i + 1\nend\nprint f',
  },
  {
    kind: 'fibonacci',
    statement: 'Print the n-th Fibonacci number F(n), with F(0) = 0 and F(1) = 1, for the input n.',
    inputs: (r) => ({ n: int(r, 0, 30) }),
    solve: ({ n }) => {
      let a = 0;
      let b = 1;
      for (let i = 0; i < n; i++) [a, b] = [b, a + b];
      return [a];
    },
    correct:
      'let a = 0\nlet b = 1\nlet i = 0\nwhile i < n\n  let t = a + b\n  a = b\n  b = t\n  i = i + 1\nend\nprint a',
    buggy:
      'let a = 0\nlet b = 1\nlet i = 0\nwhile i < n\n  let t = a + b\n  a = b\n  b = t\n  i = i + 1\nend\nprint b',
  },
  {
    kind: 'countdown',
    statement: 'Print the numbers n, n-1, …, 1, one per line, for the input n.',
    inputs: (r) => ({ n: int(r, 1, 7) }),
    solve: ({ n }) => Array.from({ length: n }, (_, i) => n - i),
    correct: 'let i = n\nwhile i > 0\n  print i\n  i = i - 1\nend',
    buggy: 'let i = n\nwhile i >= 0\n  print i\n  i = i - 1\nend',
  },
  {
    kind: 'gcd',
    statement: 'Print the greatest common divisor of the inputs a and b.',
    inputs: (r) => ({ a: int(r, 1, 200), b: int(r, 1, 200) }),
    solve: ({ a, b }) => {
      let x = a;
      let y = b;
      while (y !== 0) [x, y] = [y, x % y];
      return [x];
    },
    correct: 'let x = a\nlet y = b\nwhile y != 0\n  let t = x % y\n  x = y\n  y = t\nend\nprint x',
    buggy: 'let x = a\nlet y = b\nwhile y != 0\n  let t = x % y\n  x = y\n  y = t\nend\nprint y',
  },
  {
    kind: 'is-prime',
    statement: 'Print 1 if the input n is prime, else 0.',
    inputs: (r) => ({ n: int(r, 2, 90) }),
    solve: ({ n }) => {
      for (let d = 2; d * d <= n; d++) if (n % d === 0) return [0];
      return [1];
    },
    correct:
      'let p = 1\nlet d = 2\nwhile d * d <= n\n  if n % d == 0\n    p = 0\n  end\n  d = d + 1\nend\nprint p',
    buggy:
      'let p = 1\nlet d = 2\nwhile d * d < n\n  if n % d == 0\n    p = 0\n  end\n  d = d + 1\nend\nprint p',
  },
  {
    kind: 'digit-sum',
    statement: 'Print the sum of the decimal digits of the input n.',
    inputs: (r) => ({ n: int(r, 0, 99999) }),
    solve: ({ n }) => [
      String(n)
        .split('')
        .reduce((s, c) => s + Number(c), 0),
    ],
    correct: 'let s = 0\nlet m = n\nwhile m > 0\n  s = s + m % 10\n  m = m / 10\nend\nprint s',
    buggy: 'let s = 0\nlet m = n\nwhile m > 9\n  s = s + m % 10\n  m = m / 10\nend\nprint s',
  },
  {
    kind: 'max-of-three',
    statement: 'Print the largest of the inputs a, b and c.',
    inputs: (r) => ({ a: int(r, -50, 50), b: int(r, -50, 50), c: int(r, -50, 50) }),
    solve: ({ a, b, c }) => [Math.max(a, b, c)],
    correct: 'let m = a\nif b > m\n  m = b\nend\nif c > m\n  m = c\nend\nprint m',
    buggy: 'let m = a\nif b > m\n  m = b\nend\nprint m',
  },
];

/** A problem's level by the size of its reference solution: ≤ 7 lines, 8 lines, ≥ 9 lines. */
export function programLevel(p: { correct: string }): 1 | 2 | 3 {
  const lines = p.correct.split('\n').length;
  return lines <= 7 ? 1 : lines === 8 ? 2 : 3;
}

/** Tests per task: 4 in the mixed stream; with a level, 2 × level (more tests, fewer lucky passes). */
export const testsAtLevel = (level: number | null) => (level === null ? 4 : 2 * level);

function makeTask(split: Split, seed: number, i: number, level: number | null): CodingTask {
  const rand = mulberry32(hash32(`coding:${split}:${seed}:${i}${level === null ? '' : `:level${level}`}`));
  const pool = level === null ? PROBLEMS : PROBLEMS.filter((p) => programLevel(p) === level);
  const p = pool[Math.floor(rand() * pool.length)];
  const tests: CodingTest[] = [];
  // Validation tests come from a disjoint input stream; the problems themselves are shared.
  for (let t = 0; t < testsAtLevel(level); t++) {
    const inputs = p.inputs(rand);
    tests.push({ inputs, expected: p.solve(inputs).map(String) });
  }
  const vars = Object.keys(tests[0].inputs).join(', ');
  return {
    id: `coding-${split}-${seed}-${i}${level === null ? '' : `-l${level}`}`,
    split,
    kind: p.kind,
    statement: `${p.statement} The input variable${vars.includes(',') ? 's' : ''} ${vars} ${vars.includes(',') ? 'are' : 'is'} already set.`,
    tests,
    expertStumbles: rand() < 0.5,
  };
}

const MANUAL = `Write programs in Tally, a tiny language. One statement per line:
  let x = EXPR        (declare; later assign with x = EXPR)
  print EXPR          (one output line)
  if EXPR / else / end
  while EXPR / end
Integers only; operators + - * / (truncating) % < <= > >= == != and or not; # starts a comment.
Put the whole program in one \`\`\` block. The harness runs the tests and tells you the results.`;

export interface TestReport {
  passed: number;
  total: number;
  feedback: string;
}

export function runCodingTests(task: CodingTask, program: string): TestReport {
  let passed = 0;
  const lines: string[] = [];
  task.tests.forEach((t, k) => {
    const r = runTally(program, t.inputs, { maxSteps: 20_000, maxMs: 200 });
    const ok = !r.error && r.output.join('\n') === t.expected.join('\n');
    if (ok) passed++;
    const inputs = Object.entries(t.inputs)
      .map(([n, v]) => `${n} = ${v}`)
      .join(', ');
    if (!ok)
      lines.push(
        `Test ${k + 1} (${inputs}): ${r.error ? `error: ${r.error}` : `expected ${JSON.stringify(t.expected.join('\n'))}, got ${JSON.stringify(r.output.join('\n'))}`}`,
      );
  });
  const head = `${passed}/${task.tests.length} tests passed.`;
  return { passed, total: task.tests.length, feedback: lines.length ? `${head}\n${lines.join('\n')}` : head };
}

/** The last ``` fenced block of the text, or null. */
export function extractProgram(text: string): string | null {
  const blocks = [...text.matchAll(/```[a-zA-Z]*\n([\s\S]*?)```/g)];
  return blocks.length ? blocks[blocks.length - 1][1] : null;
}

export const codingHarness: Harness<CodingTask> = {
  name: 'coding',
  levels: [
    {
      level: 1,
      label: 'short',
      description: 'a reference solution of at most 7 lines (one loop, one accumulator); 2 tests',
    },
    {
      level: 2,
      label: 'medium',
      description: 'a reference solution of 8 lines (two variables, a loop or two branches); 4 tests',
    },
    {
      level: 3,
      label: 'long',
      description:
        'a reference solution of 9 lines or more (a loop with a branch, or three variables); 6 tests',
    },
  ],
  reward: CODING_REWARD,
  makeTasks(split, seed, n, level = null) {
    checkLevel(codingHarness, level);
    return Array.from({ length: n }, (_, i) => makeTask(split, seed, i, level));
  },
  levelOf(task) {
    return programLevel(PROBLEMS.find((p) => p.kind === task.kind) as Problem);
  },

  async run(client: ChatClient, task: CodingTask, opts: HarnessOptions): Promise<HarnessOutcome> {
    const system = (turn: number) => (turn > 0 ? `${MANUAL}\nAttempt ${turn + 1}.` : MANUAL);
    const conv = new Conversation(
      system,
      { role: 'user', content: task.statement },
      opts.behaviours,
      (dropped) => {
        const n = dropped.filter((m) => m.role === 'assistant').length;
        return `Summary: ${n} earlier attempt(s) did not pass every test.`;
      },
    );
    const maxTurns = opts.maxTurns ?? 4;
    let reward = 0;
    for (let turn = 0; turn < maxTurns; turn++) {
      conv.turn = turn;
      const res = await client.complete({ messages: conv.view(), max_tokens: opts.maxTokens ?? 400 });
      const choice = res.choices?.[0];
      const content = choice?.message?.content ?? '';
      conv.add({ role: 'assistant', content });
      const program = extractProgram(answerText(content));
      if (program === null) {
        const cut = choice?.finish_reason === 'length' ? 'Your reply was cut off at the length limit. ' : '';
        conv.add({
          role: 'user',
          content: `${cut}No program found: put your Tally program in a \`\`\` block.`,
        });
        continue;
      }
      const report = runCodingTests(task, program);
      reward = report.passed / report.total;
      if (report.passed === report.total) return { reward, turns: turn + 1, ended: 'all-passed' };
      conv.add({ role: 'user', content: `${report.feedback}\nFix the program.` });
    }
    return { reward, turns: maxTurns, ended: 'max-turns' };
  },

  expert(task: CodingTask, messages: ChatMessage[]) {
    const p = PROBLEMS.find((x) => x.kind === task.kind) as Problem;
    const attempts = messages.filter(
      (m) => m.role === 'user' && /tests passed\./.test(m.content ?? ''),
    ).length;
    const summarized = messages.some((m) => m.role === 'user' && m.content?.startsWith('Summary:'));
    const first = attempts === 0 && !summarized;
    if (first && task.expertStumbles)
      return `<think>\nA loop should do it.\n</think>\n\n\`\`\`\n${p.buggy}\n\`\`\``;
    const why = first
      ? 'A loop should do it.'
      : 'The feedback shows an off-by-one or wrong variable; fixing it.';
    return `<think>\n${why}\n</think>\n\n\`\`\`\n${p.correct}\n\`\`\``;
  },
};
