import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { command } from '../../../src/cli/commands/golden';
import { compareValues } from '../../../src/core/golden/compare';
import { GoldenFormatError, parseGoldenFile, parseGoldenText } from '../../../src/core/golden/parse';
import { listFamilies } from '../../../src/core/golden/registry';
import { runGoldenFile } from '../../../src/core/golden/runner';
import type { GoldenFile } from '../../../src/core/golden/types';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/**
 * The project's own vectors, made by python/golden/make.sh from the PyPI packages (committed; a clone needs nothing
 * beside it). Other files of the same schema are checked with `npm run lab -- golden FILE…`.
 */
const goldenDir = resolve(repoRoot, 'tests/golden');
/** The same families written by verl 0.9.0 (python/golden/make.sh --stack verl-0.9.0): the verl-0.9.0 stack. */
const verl09Dir = resolve(goldenDir, 'verl-0.9.0');

function load(name: string, dir = goldenDir): GoldenFile {
  const path = join(dir, name);
  return parseGoldenText(readFileSync(path, 'utf8'), path);
}

describe('golden vectors', () => {
  const dirs = [goldenDir, verl09Dir];
  const listed: { dir: string; files: string[]; error: string }[] = dirs.map((dir) => {
    try {
      return { dir, files: readdirSync(dir).filter((f) => f.endsWith('.json')), error: '' };
    } catch (e) {
      return { dir, files: [], error: `cannot list ${dir}: ${(e as Error).message}` };
    }
  });
  it('finds the golden folders, with a file for every registered family', () => {
    for (const l of listed) {
      expect(l.error).toBe('');
      expect(l.files.length).toBeGreaterThan(0);
    }
    for (const l of listed) {
      const families = l.files.map((f) => load(f, l.dir).family).sort();
      expect(families, l.dir).toEqual(listFamilies());
    }
    // each folder runs against the stack of the verl that wrote it
    expect(listed[0].files.map((f) => load(f).stack)).toEqual(
      listed[0].files.map(() => 'agentlightning-1.0+verl-0.8.0'),
    );
    expect(listed[1].files.map((f) => load(f, verl09Dir).stack)).toEqual(
      listed[1].files.map(() => 'verl-0.9.0'),
    );
  });
  for (const { dir, files } of listed)
    for (const name of files) {
      it(`${dir === goldenDir ? 'tests/golden' : 'tests/golden/verl-0.9.0'}/${name} passes`, () => {
        const file = load(name, dir);
        const res = runGoldenFile(file);
        const failures = res.cases
          .filter((c) => !c.ok)
          .map(
            (c) =>
              `${c.name}: ${c.error ?? ''} ${c.differences.map((d) => `${d.path} got ${d.got} exp ${d.expected}`).join('; ')}`,
          );
        expect(failures).toEqual([]);
        expect(res.passed).toBe(file.cases.length);
      });
    }

  it('a file fails under the other stack exactly on the cases verl 0.9.0 changed', () => {
    const file = load('advantage.json', verl09Dir);
    const res = runGoldenFile({ ...file, stack: 'agentlightning-1.0+verl-0.8.0' });
    const failed = res.cases.filter((c) => !c.ok).map((c) => c.name);
    // REINFORCE++ on rows with mask-0 holes; every other estimator is the same in both releases
    expect(failed.length).toBeGreaterThan(4);
    for (const n of failed) expect(n).toMatch(/^rpp_/);
    expect(failed).toContain('rpp_gamma0.9_multi_turn_observations');
    const policy = load('policy_loss.json', verl09Dir);
    const onOld = runGoldenFile({ ...policy, stack: 'agentlightning-1.0+verl-0.8.0' });
    const raisedOnOld = onOld.cases.filter((c) => !c.ok).map((c) => c.name);
    // dro and token-sum do not exist before 0.9.0 (the β = 0 case raises ValueError either way)
    expect(raisedOnOld).toEqual(
      policy.cases
        .map((c) => c.name)
        .filter(
          (n) =>
            (n.startsWith('dro_') && n !== 'dro_beta_zero_raises') || n === 'vanilla_token-sum_far_ratios',
        ),
    );
  });

  it('a perturbed expected value fails with its path', () => {
    const file = load('advantage.json');
    const c = structuredClone(file.cases[0]);
    const exp = c.expected as { advantages: number[][] };
    exp.advantages[0][0] = (exp.advantages[0][0] as number) + 1e-3;
    const res = runGoldenFile({ ...file, cases: [c] });
    expect(res.failed).toBe(1);
    expect(res.cases[0].differences[0].path).toBe('advantages[0][0]');
  });

  it('the bf16 cases need bf16 emulation: computing them in float32 fails', () => {
    for (const [name, family] of [
      ['agl_rollout_level_advantage.json', 'rollout level'],
      ['advantage.json', 'estimators'],
    ]) {
      const file = load(name);
      const bf = file.cases.filter(
        (c) => c.params.reward_dtype === 'bfloat16' && !(c.expected as { raises?: string }).raises,
      );
      expect(bf.length, family).toBeGreaterThan(5);
      const asF32 = bf.map((c) => ({
        ...c,
        params: { ...c.params, reward_dtype: 'float32' },
        expected: { ...(c.expected as object), advantages_dtype: 'float32' },
      }));
      const res = runGoldenFile({ ...file, cases: asF32 });
      const failed = res.cases.filter((c) =>
        c.differences.some((d) => /^(normalized_)?advantages\[/.test(d.path)),
      );
      // every case whose rewards bf16 cannot hold exactly differs; a few (all-equal groups, zero rewards) do not
      expect(failed.length, family).toBeGreaterThan(0.7 * bf.length);
    }
    const step = load('agl_train_step.json');
    const asF32 = step.cases
      .filter((c) => c.name === 'grpo_trajectory_rollout_level')
      .map((c) => ({ ...c, params: { ...c.params, reward_dtype: 'float32' } }));
    expect(asF32).toHaveLength(1);
    expect(runGoldenFile({ ...step, cases: asF32 }).failed).toBe(1);
  });

  it('an exception case fails when the error class differs or nothing is raised', () => {
    const file = load('kl_penalty.json');
    const raising = file.cases.find((c) => (c.expected as { raises?: string }).raises);
    const normal = file.cases.find((c) => !(c.expected as { raises?: string }).raises);
    if (!raising || !normal) throw new Error('kl_penalty.json lost its cases');
    const wrongClass = { ...raising, expected: { raises: 'ValueError', message: '' } };
    const noRaise = { ...normal, expected: { raises: 'RuntimeError', message: '' } };
    const res = runGoldenFile({ ...file, cases: [raising, wrongClass, noRaise] });
    expect(res.cases.map((c) => c.ok)).toEqual([true, false, false]);
    expect(res.cases[2].error).toMatch(/nothing raised/);
  });

  it('an unknown family fails every case with a clear message', () => {
    const res = runGoldenFile({
      family: 'no_such_family',
      source: '',
      tolerance: { abs: 0, rel: 0 },
      cases: [{ name: 'x', params: {}, input: {}, expected: {} }],
    });
    expect(res.unknownFamily).toBe(true);
    expect(res.failed).toBe(1);
    expect(res.cases[0].error).toMatch(/no runner for golden family 'no_such_family'/);
  });
});

describe('golden comparer', () => {
  const tol = { abs: 1e-5, rel: 1e-4 };
  it('applies abs + rel tolerance and non-finite strings', () => {
    expect(compareValues(1.00005, 1, tol).ok).toBe(true);
    expect(compareValues(1.0002, 1, tol).ok).toBe(false);
    expect(compareValues([Number.NaN, Number.POSITIVE_INFINITY], ['nan', 'inf'], tol).ok).toBe(true);
    expect(compareValues([1], ['nan'], tol).ok).toBe(false);
    expect(compareValues(Float32Array.of(0.5), [0.5], tol).ok).toBe(true);
  });
  it('integers by field, not by value: an integral float gets the tolerance, a declared integer field does not', () => {
    // 121310744.0 and 121310752.0 are adjacent float32 values (8 apart); JSON writes both without '.0'
    expect(compareValues({ loss: 121310744 }, { loss: 121310752 }, tol).ok).toBe(true);
    expect(compareValues({ ids: [151000, 7] }, { ids: [151001, 7] }, tol).ok).toBe(true);
    const exactKeys = new Set(['ids']);
    expect(compareValues({ ids: [151000, 7] }, { ids: [151001, 7] }, tol, { exactKeys }).ok).toBe(false);
    expect(compareValues({ ids: [[151000]] }, { ids: [[151000]] }, tol, { exactKeys }).ok).toBe(true);
    expect(compareValues({ n: { k: 4 } }, { n: { k: 3 } }, tol, { exactKeys: new Set(['n']) }).ok).toBe(
      false,
    );
  });
  it('strings, booleans exact; null, missing and extra keys reported', () => {
    expect(compareValues(3, 3, { abs: 0, rel: 0 }).ok).toBe(true);
    expect(compareValues(4, 3, { abs: 0.5, rel: 0 }).ok).toBe(false);
    expect(compareValues('bfloat16', 'float32', tol).ok).toBe(false);
    expect(compareValues(true, false, tol).ok).toBe(false);
    expect(compareValues(null, null, tol).ok).toBe(true);
    expect(compareValues(0, null, tol).ok).toBe(false);
    const r = compareValues({ a: 1, extra: 2 }, { a: 1, b: [1, 2] }, tol);
    expect(r.differences.map((d) => d.path).sort()).toEqual(['b', 'extra']);
    expect(compareValues([1, 2], [1, 2, 3], tol).differences[0].path).toBe('.length');
  });
  it('reports at most a few differences but counts them all', () => {
    const r = compareValues(new Array(20).fill(0), new Array(20).fill(1), tol, 3);
    expect(r.differences.length).toBe(3);
    expect(r.nDifferences).toBe(20);
  });
});

describe('golden file parsing', () => {
  it('rejects malformed files with a clear message', () => {
    expect(() => parseGoldenText('{', 'x.json')).toThrow(/x.json: not valid JSON/);
    expect(() => parseGoldenFile({ family: 'a', tolerance: { abs: 1 }, cases: [] }, 'f')).toThrow(
      /tolerance/,
    );
    expect(() =>
      parseGoldenFile({ family: 'a', tolerance: { abs: 0, rel: 0 }, cases: [{ name: 'c' }] }, 'f'),
    ).toThrow(GoldenFormatError);
    expect(() => parseGoldenFile([], 'f')).toThrow(/top level/);
  });
});

describe('lab golden command', () => {
  afterEach(() => vi.restoreAllMocks());
  it('prints differences and the closing line; exit 1 on failure, 0 on success', async () => {
    const logs: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((s: string) => logs.push(s));
    const file = load('agg_loss.json');
    expect(file.cases[0].expected).not.toHaveProperty('raises');
    const dir = mkdtempSync(join(tmpdir(), 'golden-'));
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ ...file, cases: file.cases.slice(0, 2) }));
    const bad = join(dir, 'bad.json');
    const c = structuredClone(file.cases[0]);
    (c.expected as { loss: number }).loss = 12345;
    writeFileSync(bad, JSON.stringify({ ...file, cases: [c] }));
    expect(await command.run([good])).toBe(0);
    expect(logs.at(-1)).toBe('golden: 2 passed, 0 failed');
    logs.length = 0;
    expect(await command.run([good, bad])).toBe(1);
    expect(logs.some((l) => l.startsWith(`FAIL agg_loss/${c.name}`))).toBe(true);
    expect(logs.some((l) => /loss: got .*expected 12345/.test(l))).toBe(true);
    expect(logs.at(-1)).toBe('golden: 2 passed, 1 failed');
  });
});
