import { describe, expect, it } from 'vitest';
import { codecs, decodeHash, encodeHash, type Schema } from '../../src/ui/urlState';

interface S {
  tab: 'a' | 'b' | 'c';
  n: number;
  on: boolean;
  clip: number;
}
const schema: Schema<S> = {
  tab: { key: 'tab', codec: codecs.oneOf(['a', 'b', 'c'] as const), default: 'a' },
  n: { key: 'n', codec: codecs.int, default: 3 },
  on: { key: 'on', codec: codecs.bool, default: false },
  clip: { key: 'clip', codec: codecs.number, default: 0.2 },
};

describe('URL hash state', () => {
  it('round-trips a non-default state', () => {
    const s: S = { tab: 'c', n: 17, on: true, clip: 0.28 };
    const hash = encodeHash(schema, s);
    expect(hash).toBe('#tab=c&n=17&on=1&clip=0.28');
    expect(decodeHash(schema, hash)).toEqual(s);
  });
  it('leaves defaults out of the hash', () => {
    expect(encodeHash<S>(schema, { tab: 'a', n: 3, on: false, clip: 0.2 })).toBe('');
    expect(encodeHash<S>(schema, { tab: 'a', n: 4, on: false, clip: 0.2 })).toBe('#n=4');
  });
  it('falls back to defaults for malformed or unknown values', () => {
    expect(decodeHash(schema, '#tab=zzz&n=1.5&on=maybe&clip=abc&other=1')).toEqual({
      tab: 'a',
      n: 3,
      on: false,
      clip: 0.2,
    });
  });
});
