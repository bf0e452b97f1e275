/**
 * The view state that a link must reproduce, serialised into the URL hash as query parameters
 * (`#tab=advantages&adv=grpo…`). Each field declares its default and how to parse it; unknown or malformed
 * parameters fall back to the default, so an old or hand-edited link still opens — and `decodeHashChecked` says
 * which ones, so the page can name them instead of falling back silently.
 */
export type Codec<T> = {
  parse: (raw: string) => T | undefined;
  format: (v: T) => string;
  /** what a valid value looks like, for the note on a malformed one */
  expects?: string;
};

export const codecs = {
  string: { parse: (r: string) => r, format: (v: string) => v } satisfies Codec<string>,
  int: {
    parse: (r: string) => (/^-?\d+$/.test(r) ? Number(r) : undefined),
    format: (v: number) => String(v),
    expects: 'an integer',
  } satisfies Codec<number>,
  number: {
    parse: (r: string) => (r.trim() !== '' && Number.isFinite(Number(r)) ? Number(r) : undefined),
    format: (v: number) => String(v),
    expects: 'a number',
  } satisfies Codec<number>,
  bool: {
    parse: (r: string) => (r === '1' || r === 'true' ? true : r === '0' || r === 'false' ? false : undefined),
    format: (v: boolean) => (v ? '1' : '0'),
    expects: '1 or 0',
  } satisfies Codec<boolean>,
  oneOf<T extends string>(values: readonly T[]): Codec<T> {
    return {
      parse: (r) => ((values as readonly string[]).includes(r) ? (r as T) : undefined),
      format: (v) => v,
      expects: `one of ${values.join(', ')}`,
    };
  },
};

export type Schema<S> = { [K in keyof S]: { key: string; codec: Codec<S[K]>; default: S[K] } };

/** A parameter of a link that the page could not use as given. */
export interface HashProblem {
  /** the parameter's key in the hash */
  key: string;
  raw: string;
  /** what was wrong and what the page shows instead */
  message: string;
}

/** Reads a state from a hash string (with or without the leading '#'). */
export function decodeHash<S>(schema: Schema<S>, hash: string): S {
  return decodeHashChecked(schema, hash).state;
}

/**
 * Reads a state from a hash string and lists every parameter that was not used as given: keys no field has,
 * values the field's codec does not accept (those fields take their defaults).
 */
export function decodeHashChecked<S>(schema: Schema<S>, hash: string): { state: S; problems: HashProblem[] } {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const out = {} as S;
  const problems: HashProblem[] = [];
  const known = new Set<string>();
  for (const field of Object.keys(schema) as (keyof S)[]) {
    const { key, codec, default: def } = schema[field];
    known.add(key);
    const raw = params.get(key);
    const v = raw === null ? undefined : codec.parse(raw);
    if (raw !== null && v === undefined)
      problems.push({
        key,
        raw,
        message: `${codec.expects ? `expects ${codec.expects}` : 'is not a valid value'}; showing ${
          codec.format(def) === '' ? 'the default' : codec.format(def)
        }`,
      });
    out[field] = v === undefined ? def : v;
  }
  for (const [key, raw] of params)
    if (!known.has(key)) problems.push({ key, raw, message: 'is not a setting of this page; ignored' });
  return { state: out, problems };
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
