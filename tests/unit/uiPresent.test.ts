import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import katex from 'katex';
import { describe, expect, it } from 'vitest';
import { listAdvEstimators } from '../../src/core/algos/advantage';
import { listLossModes } from '../../src/core/algos/lossModes';
import { DEFAULT_TRAINER_OPTIONS } from '../../src/core/pipeline/options';
import {
  DEFAULT_WEIGHT_SIGN,
  getWeightSign,
  signed,
  signedArray,
  signedSides,
  WEIGHT_SIGNS,
} from '../../src/core/pipeline/sign';
import { sharedPrefixLength } from '../../src/ui/components/IdText';
import { stackedTex } from '../../src/ui/components/Tex';
import { rolloutRows, toCsv } from '../../src/ui/lab/exportView';
import { compute, newBuildCache, parseTrace } from '../../src/ui/lab/pipeline';
import { changedOptions, describeChanges, groupRewards, zeroWeightsReason } from '../../src/ui/lab/present';

const sample = (f: string) =>
  parseTrace(readFileSync(join('public', 'samples', f), 'utf8'), f, () => {}).trace;

describe('the weight sign convention', () => {
  it('shows the push −∂L/∂logπ by default and ∂L/∂logπ as the other choice', () => {
    expect(DEFAULT_WEIGHT_SIGN).toBe('push');
    expect(WEIGHT_SIGNS.map((s) => s.name)).toEqual(['push', 'grad']);
    const push = getWeightSign('push');
    const grad = getWeightSign('grad');
    expect(push.reinforced).toBe('positive');
    expect(grad.reinforced).toBe('negative');
    expect(signed(-0.25, push)).toBe(0.25);
    expect(signed(-0.25, grad)).toBe(-0.25);
    expect(Object.is(signed(0, push), 0)).toBe(true); // never −0
    expect(Array.from(signedArray(Float32Array.from([1, -2, 0]), push))).toEqual([-1, 2, 0]);
    const a = Float64Array.from([3]);
    expect(signedArray(a, grad)).toBe(a);
    // the sides swap: the negative ∂L/∂logπ (reinforced) is the positive push
    expect(signedSides(-3, 1, push)).toEqual({ negative: -1, positive: 3 });
    expect(signedSides(-3, 1, grad)).toEqual({ negative: -3, positive: 1 });
    expect(() => getWeightSign('up')).toThrow(/unknown weight sign 'up' \(known: push, grad\)/);
  });
});

describe('formulas', () => {
  it('every estimator and loss mode has TeX that typesets, in one line and stacked', () => {
    const texs = [
      ...listAdvEstimators().map((e) => [e.name, e.tex] as const),
      ...listLossModes().map((m) => [m.name, m.tex] as const),
      ...WEIGHT_SIGNS.map((s) => [s.name, s.tex] as const),
    ];
    expect(texs.length).toBeGreaterThan(10);
    for (const [name, tex] of texs) {
      expect(tex, name).toBeTruthy();
      for (const t of [tex ?? '', stackedTex(tex ?? '')])
        expect(() => katex.renderToString(t, { throwOnError: true, output: 'mathml' }), name).not.toThrow();
    }
    expect(stackedTex('a,\\quad b')).toBe('\\begin{gathered}a\\\\b\\end{gathered}');
    expect(stackedTex('a + b')).toBe('a + b');
    // the plain-text formulas read as math, not code
    for (const m of listLossModes()) expect(m.formula, m.name).not.toContain('??');
  });
});

describe('ids in narrow columns', () => {
  it('share a prefix cut at a separator, so numbers are never split', () => {
    expect(
      sharedPrefixLength(['coding-train-s42-0', 'coding-train-s42-0@random', 'coding-train-s42-11']),
    ).toBe('coding-train-s42-'.length);
    expect(sharedPrefixLength(['s42-10', 's42-11'])).toBe(4);
    expect(sharedPrefixLength(['abc', 'abd'])).toBe(0);
    expect(sharedPrefixLength(['only-one'])).toBe(0);
  });
});

describe('what the page says about a result', () => {
  it('names what changed between two results, with core’s labels', () => {
    const c = changedOptions(DEFAULT_TRAINER_OPTIONS, {
      ...DEFAULT_TRAINER_OPTIONS,
      policyLossMode: 'vanilla',
      ppoMiniBatchSize: 4,
    });
    expect(describeChanges(c)).toBe('mini-batch rows null → 4, policy loss per_rollout_mean → vanilla');
  });

  it('explains all-zero weights by groups whose rollouts got one reward, and only then', () => {
    const allEqual = sample('search-scripted.jsonl');
    const res = compute(allEqual, DEFAULT_TRAINER_OPTIONS, undefined, newBuildCache());
    const groups = groupRewards(allEqual, res, 0);
    expect(groups.size).toBeGreaterThan(1);
    for (const g of groups.values()) expect(g.equal).toBe(true);
    expect(zeroWeightsReason(allEqual, res, DEFAULT_TRAINER_OPTIONS)).toMatch(
      /^every weight is 0: in each of the \d+ groups all rollouts got the same reward \(1\), so grpo/,
    );
    const mixed = sample('coding-random.jsonl');
    const scripted = sample('coding-scripted.jsonl');
    const both = {
      ...scripted,
      rollouts: [
        ...scripted.rollouts,
        ...mixed.rollouts.map((r) => ({ ...r, rolloutId: `${r.rolloutId}@r` })),
      ],
    };
    const res2 = compute(both, DEFAULT_TRAINER_OPTIONS, undefined, newBuildCache());
    expect(zeroWeightsReason(both, res2, DEFAULT_TRAINER_OPTIONS)).toBeNull();
  });

  it('exports per-rollout numbers in the sign on screen, as RFC 4180 CSV', () => {
    expect(
      toCsv(
        ['a', 'b'],
        [
          ['x,y', 'say "hi"'],
          [null, 1.5],
          ['line\nbreak', true],
        ],
      ),
    ).toBe('a,b\n"x,y","say ""hi"""\n,1.5\n"line\nbreak",true\n');
    const trace = sample('coding-scripted.jsonl');
    const res = compute(trace, DEFAULT_TRAINER_OPTIONS, undefined, newBuildCache());
    for (const sign of WEIGHT_SIGNS) {
      const t = rolloutRows({ trace, res, options: DEFAULT_TRAINER_OPTIONS, sign, source: 'x' });
      expect(t.header[6]).toContain(sign.symbol);
      for (const [i, row] of t.rows.entries()) expect(row[6]).toBe(signed(res.rolloutWeight[i], sign));
    }
  });
});

describe('lab help', () => {
  it('describes every command in one line', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/lab.ts', 'help'], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const src = readFileSync(join('src', 'cli', 'lab.ts'), 'utf8');
    const names = [...src.matchAll(/^ {2}'?([a-z-]+)'?: async \(\) =>/gm)].map((m) => m[1]);
    expect(names.length).toBeGreaterThanOrEqual(8);
    for (const n of names) {
      const line = r.stdout.split('\n').find((l) => l.trim().startsWith(`${n} `));
      expect(line, n).toBeDefined();
      // a name, then a description of several words
      expect((line ?? '').trim().slice(n.length).trim().split(/\s+/).length, n).toBeGreaterThan(3);
    }
    expect(r.stdout).toContain('analyze');
    expect(r.stdout).toMatch(/analyze\s+what the trainer \(Agent Lightning 1\.0\.x \+ verl 0\.8\.0\) does/);
  });
});
