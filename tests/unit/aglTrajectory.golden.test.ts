import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runAglTrajectoryCase } from '../../src/core/golden/aglTrajectory';

// The project's own golden vectors (python/golden/make.sh writes them from the PyPI packages).
const repoRoot = resolve(__dirname, '../..');
const goldenDir = resolve(repoRoot, 'tests/golden');

interface GoldenFile {
  family: string;
  tolerance: { abs: number; rel: number };
  cases: { name: string; params: unknown; input: unknown; expected: Record<string, unknown> }[];
}

const file = JSON.parse(readFileSync(join(goldenDir, 'agl_trajectory.json'), 'utf8')) as GoldenFile;

function special(v: unknown): number | undefined {
  if (v === 'nan') return Number.NaN;
  if (v === 'inf') return Number.POSITIVE_INFINITY;
  if (v === '-inf') return Number.NEGATIVE_INFINITY;
  return undefined;
}

/** Mismatches between got and expected (paths), with the file's abs+rel tolerance; integers exact. */
function compare(
  got: unknown,
  exp: unknown,
  tol: { abs: number; rel: number },
  path: string,
  out: string[],
): void {
  if (out.length > 20) return;
  const sp = special(exp);
  if (sp !== undefined) {
    const g = typeof got === 'number' ? got : special(got);
    if (!(g !== undefined && (Number.isNaN(sp) ? Number.isNaN(g) : g === sp)))
      out.push(`${path}: got ${String(got)}, expected ${String(exp)}`);
    return;
  }
  if (typeof exp === 'number') {
    if (typeof got !== 'number') {
      out.push(`${path}: got ${JSON.stringify(got)}, expected number ${exp}`);
      return;
    }
    const ok = Number.isInteger(exp)
      ? got === exp || Math.abs(got - exp) <= tol.abs
      : Math.abs(got - exp) <= tol.abs + tol.rel * Math.abs(exp);
    if (!ok) out.push(`${path}: got ${got}, expected ${exp}`);
    return;
  }
  if (exp === null || typeof exp !== 'object') {
    if (got !== exp) out.push(`${path}: got ${JSON.stringify(got)}, expected ${JSON.stringify(exp)}`);
    return;
  }
  if (Array.isArray(exp)) {
    if (!Array.isArray(got) || got.length !== exp.length) {
      out.push(
        `${path}: got ${Array.isArray(got) ? `length ${got.length}` : JSON.stringify(got)}, expected length ${exp.length}`,
      );
      return;
    }
    for (let i = 0; i < exp.length; i++) compare(got[i], exp[i], tol, `${path}[${i}]`, out);
    return;
  }
  if (got === null || typeof got !== 'object' || Array.isArray(got)) {
    out.push(`${path}: got ${JSON.stringify(got)}, expected an object`);
    return;
  }
  const g = got as Record<string, unknown>;
  const e = exp as Record<string, unknown>;
  const keys = new Set([...Object.keys(e), ...Object.keys(g)]);
  for (const k of keys) {
    if (!(k in e)) out.push(`${path}.${k}: unexpected key`);
    else if (!(k in g)) out.push(`${path}.${k}: missing`);
    else compare(g[k], e[k], tol, `${path}.${k}`, out);
  }
}

describe(`golden ${file.family} (${file.cases.length} cases)`, () => {
  it('has cases', () => {
    expect(file.family).toBe('agl_trajectory');
    expect(file.cases.length).toBeGreaterThan(0);
  });
  for (const c of file.cases) {
    it(c.name, () => {
      if ('raises' in c.expected) {
        const cls = c.expected.raises as string;
        expect(() => runAglTrajectoryCase(c)).toThrow(new RegExp(`^${cls}: `));
        return;
      }
      const mismatches: string[] = [];
      compare(runAglTrajectoryCase(c), c.expected, file.tolerance, c.name, mismatches);
      expect(mismatches).toEqual([]);
    });
  }
});
