import { describe, expect, it } from 'vitest';
import { alignIds, type Segment } from '../../src/core/tokenize/align';

/** Rebuilds both sequences from the segments: every id must be covered exactly once, in order. */
function check(a: number[], b: number[], segs: Segment[]) {
  const ra: number[] = [];
  const rb: number[] = [];
  let pa = 0;
  let pb = 0;
  for (const s of segs) {
    expect(s.a0).toBe(pa);
    expect(s.b0).toBe(pb);
    if (s.equal) expect(a.slice(s.a0, s.a1)).toEqual(b.slice(s.b0, s.b1));
    ra.push(...a.slice(s.a0, s.a1));
    rb.push(...b.slice(s.b0, s.b1));
    pa = s.a1;
    pb = s.b1;
  }
  expect(ra).toEqual(a);
  expect(rb).toEqual(b);
}

/** Length of the longest common subsequence (dynamic programming): what an optimal alignment keeps equal. */
function lcs(a: number[], b: number[]): number {
  let prev = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    const cur = new Int32Array(b.length + 1);
    for (let j = 1; j <= b.length; j++)
      cur[j] = a[i - 1] === b[j - 1] ? prev[j - 1] + 1 : Math.max(prev[j], cur[j - 1]);
    prev = cur;
  }
  return prev[b.length];
}

const equalIds = (segs: Segment[]) => segs.filter((s) => s.equal).reduce((n, s) => n + s.a1 - s.a0, 0);

describe('id alignment (Myers, core/tokenize/align.ts)', () => {
  it('finds a BPE re-merge as one local hunk', () => {
    // engine sampled " Hel"+"lo" (15806, 385); retokenized as " Hello" (21927)
    const a = [1, 2, 3, 15806, 385, 4, 5];
    const b = [1, 2, 3, 21927, 4, 5];
    const segs = alignIds(a, b);
    check(a, b, segs);
    expect(segs.filter((s) => !s.equal)).toEqual([{ equal: false, a0: 3, a1: 5, b0: 3, b1: 4 }]);
  });
  it('finds several separate differences', () => {
    const a = [9, 1, 2, 3, 4, 5, 6, 7, 8, 10];
    const b = [1, 2, 30, 4, 5, 6, 70, 71, 8];
    const segs = alignIds(a, b);
    check(a, b, segs);
    const hunks = segs.filter((s) => !s.equal);
    expect(hunks.length).toBe(4);
    const equalIds = segs.filter((s) => s.equal).reduce((n, s) => n + s.a1 - s.a0, 0);
    expect(equalIds).toBe(6); // 1 2 · 4 5 6 · 8: the longest common subsequence
  });
  it('handles equal, empty and fully different inputs', () => {
    expect(alignIds([1, 2], [1, 2])).toEqual([{ equal: true, a0: 0, a1: 2, b0: 0, b1: 2 }]);
    expect(alignIds([], [])).toEqual([]);
    const segs = alignIds([1, 2, 3], [4, 5]);
    check([1, 2, 3], [4, 5], segs);
    expect(segs).toEqual([{ equal: false, a0: 0, a1: 3, b0: 0, b1: 2 }]);
  });
  it('gives up to one hunk past the edit budget and still covers everything', () => {
    const a = Array.from({ length: 50 }, (_, i) => i);
    const b = Array.from({ length: 50 }, (_, i) => (i % 2 ? i : 1000 + i));
    const segs = alignIds(a, b, 3);
    check(a, b, segs);
    // 25 substitutions need 50 edits: past a budget of 3 the middle is one hunk
    expect(segs.filter((s) => !s.equal)).toHaveLength(1);
    // within budget the same inputs align optimally
    expect(equalIds(alignIds(a, b))).toBe(lcs(a, b));
  });
  it('keeps a single difference local in a long sequence (not one big hunk)', () => {
    const a = Array.from({ length: 400 }, (_, i) => (i * 7919) % 1000);
    const b = a.slice();
    b.splice(200, 1, 5000, 5001); // one id re-encoded as two
    const segs = alignIds(a, b);
    check(a, b, segs);
    expect(segs.filter((s) => !s.equal)).toEqual([{ equal: false, a0: 200, a1: 201, b0: 200, b1: 202 }]);
  });
  it('is optimal: keeps as many ids equal as the longest common subsequence, on random edit scripts', () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    for (let trial = 0; trial < 40; trial++) {
      const a = Array.from({ length: 60 }, () => Math.floor(rnd() * 8));
      const b = a.filter(() => rnd() > 0.1).map((x) => (rnd() < 0.1 ? x + 100 : x));
      if (rnd() < 0.5) b.splice(Math.floor(rnd() * b.length), 0, 200, 201);
      const segs = alignIds(a, b);
      check(a, b, segs);
      expect(equalIds(segs)).toBe(lcs(a, b));
      // segments alternate: no two equal runs or two hunks side by side
      for (let k = 1; k < segs.length; k++) expect(segs[k].equal).not.toBe(segs[k - 1].equal);
    }
  });
});
