/**
 * The view state that a link must reproduce, serialised into the URL hash as query parameters
 * (`#tab=advantages&adv=grpo…`). Each field declares its default and how to parse it; unknown or malformed
 * parameters fall back to the default, so an old or hand-edited link still opens.
 */
export type Codec<T> = { parse: (raw: string) => T | undefined; format: (v: T) => string };

export const codecs = {
  string: { parse: (r: string) => r, format: (v: string) => v } satisfies Codec<string>,
  int: {
    parse: (r: string) => (/^-?\d+$/.test(r) ? Number(r) : undefined),
    format: (v: number) => String(v),
  } satisfies Codec<number>,
  number: {
    parse: (r: string) => (r.trim() !== '' && Number.isFinite(Number(r)) ? Number(r) : undefined),
    format: (v: number) => String(v),
  } satisfies Codec<number>,
  bool: {
    parse: (r: string) => (r === '1' || r === 'true' ? true : r === '0' || r === 'false' ? false : undefined),
    format: (v: boolean) => (v ? '1' : '0'),
  } satisfies Codec<boolean>,
  oneOf<T extends string>(values: readonly T[]): Codec<T> {
    return {
      parse: (r) => ((values as readonly string[]).includes(r) ? (r as T) : undefined),
      format: (v) => v,
    };
  },
};

export type Schema<S> = { [K in keyof S]: { key: string; codec: Codec<S[K]>; default: S[K] } };

/** Reads a state from a hash string (with or without the leading '#'). */
export function decodeHash<S>(schema: Schema<S>, hash: string): S {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const out = {} as S;
  for (const field of Object.keys(schema) as (keyof S)[]) {
    const { key, codec, default: def } = schema[field];
    const raw = params.get(key);
    const v = raw === null ? undefined : codec.parse(raw);
    out[field] = v === undefined ? def : v;
  }
  return out;
}

/** Writes a state as a hash string; fields at their default are left out so links stay short. */
export function encodeHash<S>(schema: Schema<S>, state: S): string {
  const params = new URLSearchParams();
  for (const field of Object.keys(schema) as (keyof S)[]) {
    const { key, codec, default: def } = schema[field];
    const v = state[field];
    if (v !== def) params.set(key, codec.format(v));
  }
  const s = params.toString();
  return s ? `#${s}` : '';
}
