import { describe, expect, it } from 'vitest';
import { niceStep, tickLabels, valueAxis, withMinus } from '../../src/ui/charts/axis';
import { chartRows } from '../../src/ui/charts/MetricChart';

const MINUS = '\u2212';

describe('metric chart value axis', () => {
  it('labels negative ticks with a true minus sign and never writes −0', () => {
    const axis = valueAxis([-0.3, -0.1, 0.05]);
    expect(axis).not.toBeNull();
    if (!axis) return;
    expect(axis.ticks[0]).toBeLessThanOrEqual(-0.3);
    for (const [i, t] of axis.ticks.entries()) {
      const label = axis.labels[i];
      expect(label.includes('-')).toBe(false);
      expect(label.startsWith(MINUS)).toBe(t < 0);
      expect(Number(label.replace(MINUS, '-'))).toBeCloseTo(t, 12);
    }
    expect(withMinus('-0.000')).toBe('0.000');
    expect(withMinus('-2.5e-7')).toBe(`${MINUS}2.5e${MINUS}7`);
  });

  it('covers every finite value on nice steps, neighbouring labels distinct, width for the longest label', () => {
    for (const vs of [
      [-1.5, 2.3],
      [0.0012, 0.0031, 0.0019],
      [120000, 180000],
      [-1e-7, 2e-7],
      [3, Number.NaN, 7, null, Number.POSITIVE_INFINITY],
    ]) {
      const axis = valueAxis(vs);
      if (!axis) throw new Error('no axis');
      const finite = vs.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
      expect(axis.domain[0]).toBeLessThanOrEqual(Math.min(...finite));
      expect(axis.domain[1]).toBeGreaterThanOrEqual(Math.max(...finite));
      const step = axis.ticks[1] - axis.ticks[0];
      for (let i = 1; i < axis.ticks.length; i++)
        expect(axis.ticks[i] - axis.ticks[i - 1]).toBeCloseTo(step, 12);
      expect(new Set(axis.labels).size).toBe(axis.labels.length);
      const longest = Math.max(...axis.labels.map((l) => l.length));
      expect(axis.width).toBeGreaterThan(longest * 6);
    }
    expect(valueAxis([-0.0123, -0.0456])?.width).toBeGreaterThan(valueAxis([1, 2])?.width ?? 0);
  });

  it('draws a constant series flat: the value in the middle of the domain, also with float rounding noise', () => {
    for (const [vs, c] of [
      [[0.5, 0.5, 0.5], 0.5],
      [[0.1, 0.1 + 2e-17, 0.30000000000000004 - 0.2], 0.1],
      [[-0.0123], -0.0123],
      [[0, 0], 0],
      [[42], 42],
    ] as [number[], number][]) {
      const axis = valueAxis(vs);
      if (!axis) throw new Error('no axis');
      const [lo, hi] = axis.domain;
      expect(hi - lo).toBeGreaterThan(Math.abs(c) * 0.1);
      expect((lo + hi) / 2).toBeCloseTo(c, 12);
      for (const t of axis.ticks) {
        expect(t).toBeGreaterThanOrEqual(lo - 1e-12);
        expect(t).toBeLessThanOrEqual(hi + 1e-12);
      }
      expect(axis.ticks.length).toBeGreaterThanOrEqual(2);
    }
    // a real (if small) change is not flattened
    const moving = valueAxis([1, 1.001]);
    expect(moving?.domain[0]).toBeGreaterThanOrEqual(0.99);
    expect(moving?.domain[1]).toBeLessThanOrEqual(1.01);
  });

  it('no finite value: no axis; bad arguments: clear errors', () => {
    expect(valueAxis([null, undefined, Number.NaN])).toBeNull();
    expect(() => valueAxis([1], 1)).toThrow(/tick count must be an integer ≥ 2, got 1/);
    expect(() => niceStep(0)).toThrow(/axis step must be a positive number, got 0/);
    expect([0.07, 0.15, 0.22, 0.4, 3, 12].map(niceStep)).toEqual([0.1, 0.2, 0.25, 0.5, 5, 20]);
    expect(tickLabels([0, 0.25, 0.5], 0.25)).toEqual(['0.00', '0.25', '0.50']);
  });

  it('the chart rows carry raw and smoothed values the axis is computed from', () => {
    const rows = chartRows(
      [
        {
          id: 'a',
          name: 'a',
          color: '#000',
          points: [
            { step: 2, value: -1 },
            { step: 1, value: 3 },
          ],
        },
        { id: 'b', name: 'b', color: '#111', points: [{ step: 1, value: null }] },
      ],
      0,
    );
    expect(rows).toEqual([
      { step: 1, r0: 3, s0: 3, r1: null, s1: null },
      { step: 2, r0: -1, s0: -1 },
    ]);
  });
});
