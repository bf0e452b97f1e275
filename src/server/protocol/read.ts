/**
 * Small readers for wire bodies: each takes the index path of what it reads, so an error says where
 * (`runs[2].state must be one of …, got "x"`). Used on both ends of the gateway's REST API and SSE stream.
 */

export class WireError extends Error {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`${path} ${detail}`);
  }
}

export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing (missing)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

export type Obj = Record<string, unknown>;

export function obj(v: unknown, path: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new WireError(path, `must be an object, got ${describeValue(v)}`);
  return v as Obj;
}

export function str(v: unknown, path: string): string {
  if (typeof v !== 'string') throw new WireError(path, `must be a string, got ${describeValue(v)}`);
  return v;
}

export function optStr(v: unknown, path: string): string | null {
  return v === undefined || v === null ? null : str(v, path);
}

export function num(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new WireError(path, `must be a finite number, got ${describeValue(v)}`);
  return v;
}

export function optNum(v: unknown, path: string): number | null {
  return v === undefined || v === null ? null : num(v, path);
}

export function int(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw new WireError(path, `must be an integer, got ${describeValue(v)}`);
  return v;
}

export function optInt(v: unknown, path: string): number | null {
  return v === undefined || v === null ? null : int(v, path);
}

export function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new WireError(path, `must be true or false, got ${describeValue(v)}`);
  return v;
}

export function arr(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new WireError(path, `must be an array, got ${describeValue(v)}`);
  return v;
}

export function oneOf<T extends string>(v: unknown, values: readonly T[], path: string): T {
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v))
    throw new WireError(path, `must be one of ${values.join(', ')}, got ${describeValue(v)}`);
  return v as T;
}

/** An object of finite numbers (metrics): non-numeric entries are an error naming the key. */
export function numberRecord(v: unknown, path: string): Record<string, number> {
  const o = obj(v, path);
  const out: Record<string, number> = {};
  for (const [k, x] of Object.entries(o)) out[k] = num(x, `${path}[${JSON.stringify(k)}]`);
  return out;
}
