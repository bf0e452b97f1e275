import { describe, expect, it } from 'vitest';
import {
  divergingScale,
  finiteExtent,
  fmt,
  maskScale,
  sequentialScale,
} from '../../src/ui/tokens/colorScale';
import { chipCells, chipLabel, layoutLines, MAX_CHIP_CHARS } from '../../src/ui/tokens/layout';

describe('token chip layout', () => {
  it('makes whitespace visible and cuts long texts', () => {
    expect(chipLabel(' Hello')).toBe('·Hello');
    expect(chipLabel('a\n')).toBe('a↵');
    expect(chipLabel('')).toBe('∅');
    const long = chipLabel('x'.repeat(100));
    expect(Array.from(long)).toHaveLength(MAX_CHIP_CHARS);
    expect(long.endsWith('…')).toBe(true);
  });

  it('fills lines up to the width and breaks after newline tokens', () => {
    // widths 3,3,3,3 in lines of 7 cells → [0,1] [2,3]
    expect([...layoutLines([3, 3, 3, 3], [false, false, false, false], 7)]).toEqual([0, 2]);
    // a newline token ends its line even when there is room
    expect([...layoutLines([2, 2, 2], [true, false, false], 80)]).toEqual([0, 1]);
    // consecutive newline tokens each get their own line
    expect([...layoutLines([2, 2, 2], [true, true, false], 80)]).toEqual([0, 1, 2]);
    // a chip wider than a line gets a line of its own
    expect([...layoutLines([2, 50, 2], [false, false, false], 10)]).toEqual([0, 1, 2]);
    expect(layoutLines([], [], 10)).toHaveLength(0);
    expect(chipCells('ab')).toBeGreaterThan(2);
  });
});

describe('colour scales', () => {
  it('diverging scale is symmetric around zero and white at zero', () => {
    const s = divergingScale([-0.5, 2]);
    expect(s.lo).toBe(-2);
    expect(s.hi).toBe(2);
    expect(s.color(0)).toBe('rgb(247,247,247)');
    expect(s.color(2)).toBe('rgb(178,24,43)');
    expect(s.color(-2)).toBe('rgb(33,102,172)');
    expect(s.color(Number.NaN)).toMatch(/^#/);
    expect(s.stops).toHaveLength(9);
  });
  it('extent skips masked and non-finite values', () => {
    expect(finiteExtent([1, Number.NaN, -3, 7], [1, 1, 1, 0])).toEqual([-3, 1]);
    expect(finiteExtent([])).toEqual([0, 0]);
  });
  it('sequential scale clamps and reverses', () => {
    const s = sequentialScale([-4, 0], true);
    // surprising tokens (low log-prob) get the strongest colour; values past the domain are clamped
    expect(s.color(0)).toBe('rgb(255,247,236)');
    expect(s.color(-4)).toBe('rgb(127,0,0)');
    expect(s.color(-100)).toBe('rgb(127,0,0)');
    expect(maskScale().color(1)).not.toBe(maskScale().color(0));
  });
  it('formats numbers compactly with a real minus sign', () => {
    expect(fmt(-0.125)).toBe('−0.1250');
    expect(fmt(0)).toBe('0');
    expect(fmt(Number.NaN)).toBe('—');
    expect(fmt(1.5e-5)).toBe('1.500e−5');
  });
});
