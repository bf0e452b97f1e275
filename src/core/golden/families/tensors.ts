/** Reading golden inputs: nested [B,T] lists become CSR rows (offsets r·T) and flat typed arrays. */
import type { ResponseRows } from '../../batch/types';
import type { Json } from '../types';

export class GoldenInputError extends Error {}

const NONFINITE: Record<string, number> = {
  nan: Number.NaN,
  inf: Number.POSITIVE_INFINITY,
  '-inf': Number.NEGATIVE_INFINITY,
};

export function num(v: Json | undefined, what: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v in NONFINITE) return NONFINITE[v];
  throw new GoldenInputError(`${what}: expected a number, got ${JSON.stringify(v)}`);
}

export function matrix(v: Json | undefined, what: string): { B: number; T: number; data: Float32Array } {
  if (!Array.isArray(v)) throw new GoldenInputError(`${what}: expected a [B,T] list`);
  const B = v.length;
  const T = B > 0 && Array.isArray(v[0]) ? (v[0] as Json[]).length : 0;
  const data = new Float32Array(B * T);
  for (let r = 0; r < B; r++) {
    const row = v[r];
    if (!Array.isArray(row) || row.length !== T)
      throw new GoldenInputError(
        `${what}[${r}]: expected ${T} values, got ${Array.isArray(row) ? row.length : 'no list'}`,
      );
    for (let t = 0; t < T; t++) data[r * T + t] = num(row[t], `${what}[${r}][${t}]`);
  }
  return { B, T, data };
}

export function rowsFromMask(v: Json | undefined, what: string): ResponseRows & { T: number } {
  const m = matrix(v, what);
  const offsets = new Int32Array(m.B + 1);
  for (let r = 0; r <= m.B; r++) offsets[r] = r * m.T;
  const mask = new Uint8Array(m.data.length);
  for (let i = 0; i < mask.length; i++) {
    const x = m.data[i];
    if (x !== 0 && x !== 1) throw new GoldenInputError(`${what}: mask values must be 0/1, got ${x}`);
    mask[i] = x;
  }
  return { nRows: m.B, offsets, mask, T: m.T };
}

export function sameShape(
  rows: ResponseRows & { T: number },
  v: Json | undefined,
  what: string,
): Float32Array {
  const m = matrix(v, what);
  if (m.B !== rows.nRows || m.T !== rows.T)
    throw new GoldenInputError(`${what}: shape [${m.B},${m.T}] but the mask is [${rows.nRows},${rows.T}]`);
  return m.data;
}

export function strings(v: Json | undefined, what: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' && typeof x !== 'number'))
    throw new GoldenInputError(`${what}: expected a list of ids`);
  return (v as (string | number)[]).map(String);
}

export function vector(v: Json | undefined, what: string): Float32Array {
  if (!Array.isArray(v)) throw new GoldenInputError(`${what}: expected a list`);
  return Float32Array.from(v.map((x, i) => num(x, `${what}[${i}]`)));
}

/** Flat [B·T] → nested rows of plain numbers, for comparison with `expected`. */
export function nested(a: ArrayLike<number>, B: number, T: number): number[][] {
  const out: number[][] = [];
  for (let r = 0; r < B; r++) out.push(Array.from({ length: T }, (_, t) => a[r * T + t]));
  return out;
}

export function optNum(v: Json | undefined): number | null {
  return v === null || v === undefined ? null : (v as number);
}
