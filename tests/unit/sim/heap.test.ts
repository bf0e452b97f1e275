import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../src/core/random';
import { MinHeap } from '../../../src/core/sim/heap';

/** Pops everything: the (key, id) pairs in pop order. */
const popAll = (h: MinHeap) => {
  const out: [number, number][] = [];
  while (h.size) {
    const k = h.peekKey();
    out.push([k, h.pop()]);
  }
  return out;
};

describe('MinHeap.sort', () => {
  const cases: [string, (rand: () => number, i: number) => number][] = [
    ['integer parts with fractions (the radix path)', (rand) => 1e4 + Math.floor(rand() * 3000) + rand()],
    [
      'many equal integer parts and exact ties',
      (rand) => 5 + Math.floor(rand() * 4) + (rand() < 0.5 ? 0.25 : 0.75),
    ],
    ['a range past the radix (the comparison path)', (rand) => rand() * 1e9],
    ['keys a few ulps apart', (_, i) => 1000 + ((i * 7919) % 97) * Number.EPSILON * 1000],
  ];
  for (const [name, key] of cases)
    it(`orders the entries as pops would: ${name}`, () => {
      const rand = mulberry32(7);
      const a = new MinHeap(4);
      const b = new MinHeap(4);
      for (let i = 0; i < 1500; i++) {
        const k = key(rand, i);
        a.push(k, i);
        b.push(k, i);
      }
      expect(a.sorted).toBe(false);
      a.sort();
      expect(a.sorted).toBe(true);
      const walked: number[] = [];
      for (let i = 0; i < a.size; i++) walked.push(a.keyAt(i));
      const popped = popAll(b);
      // same keys in the same order; an id goes with its key (ties may swap ids of equal keys)
      expect(walked).toEqual(popped.map(([k]) => k));
      const byId = new Map(popped.map(([k, id]) => [id, k]));
      for (let i = 0; i < a.size; i++) expect(byId.get(a.idAt(i))).toBe(a.keyAt(i));
      // a sorted array is a heap: pops still come in key order
      expect(popAll(a).map(([k]) => k)).toEqual(walked);
    });

  it('stays sorted under pushes in key order, and dropSorted removes the smallest', () => {
    const h = new MinHeap(2);
    for (const k of [5, 3, 9, 1]) h.push(k, k);
    h.sort();
    h.push(9, 90);
    h.push(12, 12);
    expect(h.sorted).toBe(true);
    h.dropSorted(2);
    expect([h.size, h.keyAt(0), h.peekKey()]).toEqual([4, 5, 5]);
    h.push(4, 4);
    expect(h.sorted).toBe(false);
    expect(() => h.dropSorted(1)).toThrow(/not sorted/);
    expect(popAll(h).map(([k]) => k)).toEqual([4, 5, 9, 9, 12]);
  });
});

describe('MinHeap.pop', () => {
  /** The textbook pop of a 4-ary heap (sift the last entry down from the root), on plain arrays. */
  const reference = (keys: number[], ids: number[]) => {
    const top = ids[0];
    const key = keys.pop() as number;
    const id = ids.pop() as number;
    const n = keys.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      // four children; the first of the smallest
      let c = 4 * i + 1;
      if (c >= n) break;
      for (let j = c + 1; j < Math.min(4 * i + 5, n); j++) if (keys[j] < keys[c]) c = j;
      if (keys[c] >= key) break;
      keys[i] = keys[c];
      ids[i] = ids[c];
      i = c;
    }
    keys[i] = key;
    ids[i] = id;
    return top;
  };
  it('leaves the same heap as a sift-down from the root, ties included', () => {
    const rand = mulberry32(3);
    const h = new MinHeap(4);
    const keys: number[] = [];
    const ids: number[] = [];
    for (let step = 0; step < 4000; step++) {
      if (h.size === 0 || rand() < 0.52) {
        // few distinct keys: many exact ties
        const k = Math.floor(rand() * 40) / 4;
        h.push(k, step);
        // the push is the heap's own (shared by both): copy its layout
        keys.length = 0;
        ids.length = 0;
        for (let i = 0; i < h.size; i++) {
          keys.push(h.keyAt(i));
          ids.push(h.idAt(i));
        }
      } else {
        expect(h.pop()).toBe(reference(keys, ids));
        const layout: number[][] = [[], []];
        for (let i = 0; i < h.size; i++) {
          layout[0].push(h.keyAt(i));
          layout[1].push(h.idAt(i));
        }
        expect(layout).toEqual([keys, ids]);
      }
    }
  });
});
