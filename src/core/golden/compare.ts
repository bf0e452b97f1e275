/**
 * Compares a runner's output with a golden `expected` value: numbers pass when |got − exp| ≤ abs + rel·|exp|,
 * except under the keys a family declares integer-valued (ids, masks, counts), which match exactly. Whether a
 * number is an integer is decided by its field, never by its value: JSON writes the float 121310744.0 as
 * 121310744, and it still gets the tolerance. "nan"/"inf"/"-inf" strings stand for non-finite numbers, strings
 * and booleans match exactly, arrays match element-wise (typed arrays allowed), objects key by key in both
 * directions, null matches null/undefined only.
 */
import type { Tolerance } from './types';

export interface Difference {
  path: string;
  got: string;
  expected: string;
}

export interface Comparison {
  ok: boolean;
  /** the first `limit` differences */
  differences: Difference[];
  nDifferences: number;
}

const NONFINITE: Record<string, number> = {
  nan: Number.NaN,
  inf: Number.POSITIVE_INFINITY,
  '-inf': Number.NEGATIVE_INFINITY,
};

function show(v: unknown): string {
  if (typeof v === 'number') return Number.isNaN(v) ? 'nan' : String(v);
  if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${(v as unknown as ArrayLike<number>).length})`;
  if (Array.isArray(v)) return `array(${v.length})`;
  if (v === undefined) return 'missing';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function asNumber(v: unknown): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v in NONFINITE) return NONFINITE[v];
  return null;
}

export function numbersClose(got: number, exp: number, tol: Tolerance): boolean {
  if (Number.isNaN(exp)) return Number.isNaN(got);
  if (!Number.isFinite(exp)) return got === exp;
  if (!Number.isFinite(got)) return false;
  return Math.abs(got - exp) <= tol.abs + tol.rel * Math.abs(exp);
}

export interface CompareOptions {
  /** object keys whose numbers (at any depth below) are integers and compare exactly */
  exactKeys?: ReadonlySet<string>;
  /** how many differences to keep in full */
  limit?: number;
}

export function compareValues(
  got: unknown,
  expected: unknown,
  tol: Tolerance,
  options: CompareOptions | number = {},
): Comparison {
  const opts = typeof options === 'number' ? { limit: options } : options;
  const limit = opts.limit ?? 5;
  const exactKeys = opts.exactKeys ?? new Set<string>();
  const diffs: Difference[] = [];
  let n = 0;
  const add = (path: string, g: unknown, e: unknown) => {
    n++;
    if (diffs.length < limit) diffs.push({ path: path || '(root)', got: show(g), expected: show(e) });
  };
  const walk = (g: unknown, e: unknown, path: string, exact = false): void => {
    if (e === null) {
      if (g !== null) add(path, g, e);
      return;
    }
    const en = asNumber(e);
    if (en !== null) {
      const gn = asNumber(g);
      if (gn === null) {
        add(path, g, e);
        return;
      }
      if (exact ? gn !== en && !(Number.isNaN(gn) && Number.isNaN(en)) : !numbersClose(gn, en, tol))
        add(path, g, e);
      return;
    }
    if (typeof e === 'string' || typeof e === 'boolean') {
      if (g !== e) add(path, g, e);
      return;
    }
    if (Array.isArray(e)) {
      const isArr = Array.isArray(g) || (ArrayBuffer.isView(g) && !(g instanceof DataView));
      if (!isArr) {
        add(path, g, e);
        return;
      }
      const ga = g as ArrayLike<unknown>;
      if (ga.length !== e.length) {
        add(`${path}.length`, ga.length, e.length);
        return;
      }
      for (let i = 0; i < e.length; i++) walk(ga[i], e[i], `${path}[${i}]`, exact);
      return;
    }
    if (typeof e === 'object') {
      if (typeof g !== 'object' || g === null || Array.isArray(g)) {
        add(path, g, e);
        return;
      }
      const go = g as Record<string, unknown>;
      const eo = e as Record<string, unknown>;
      for (const k of Object.keys(eo))
        walk(go[k], eo[k], path ? `${path}.${k}` : k, exact || exactKeys.has(k));
      for (const k of Object.keys(go))
        if (!(k in eo) && go[k] !== undefined) add(path ? `${path}.${k}` : k, go[k], undefined);
      return;
    }
    add(path, g, e);
  };
  walk(got, expected, '');
  return { ok: n === 0, differences: diffs, nDifferences: n };
}
