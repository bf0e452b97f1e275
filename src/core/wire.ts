/**
 * The wire-validation kit every boundary uses (worker messages, trainer events, the gateway's protocol, files read
 * back): a JSON object check and field readers whose errors name the field (`<where>.<key> must be …`), so every
 * validator reports bad input the same way.
 */

export type WireRecord = Record<string, unknown>;

/** A JSON object (not null, not an array). */
export function isRecord(v: unknown): v is WireRecord {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` as an object, or an error saying `<where> must be an object`. */
export function record(v: unknown, where: string): WireRecord {
  if (!isRecord(v)) throw new Error(`${where} must be an object`);
  return v;
}

export function str(o: WireRecord, k: string, where: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw new Error(`${where}.${k} must be a string`);
  return v;
}

/** A finite number. */
export function num(o: WireRecord, k: string, where: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${where}.${k} must be a finite number`);
  return v;
}

export function numOrNull(o: WireRecord, k: string, where: string): number | null {
  return o[k] === null ? null : num(o, k, where);
}

/** One of the given strings; the error lists them. */
export function oneOf<T extends string>(o: WireRecord, k: string, where: string, values: readonly T[]): T {
  const v = o[k];
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v))
    throw new Error(`${where}.${k} must be one of ${values.join(', ')}, got ${JSON.stringify(v)}`);
  return v as T;
}

export function list(o: WireRecord, k: string, where: string): unknown[] {
  const v = o[k];
  if (!Array.isArray(v)) throw new Error(`${where}.${k} must be a list`);
  return v;
}
