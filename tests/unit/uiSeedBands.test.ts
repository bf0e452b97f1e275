import { describe, expect, it } from 'vitest';
import { chartRows, type MetricSeries } from '../../src/ui/charts/MetricChart';
import { seedBand } from '../../src/ui/charts/seedBands';

const series = (id: string, values: (number | null)[]): MetricSeries => ({
  id,
  name: id,
  color: '#000',
  points: values.map((value, i) => ({ step: i + 1, value })),
});

describe('seed bands', () => {
  it('are the mean and the 95% t interval of the members at each step (hand-computed)', () => {
    // step 1: values 1, 2, 3 → mean 2, sd 1, half width t_{0.975,2} · 1/√3 = 4.30265273 / 1.7320508 = 2.48414
    // step 2: 2 and 4 (the third seed has no value) → mean 3, sd √2, half width 12.7062047 · √2/√2 = 12.7062
    // step 3: only one seed → its value, no width
    const band = seedBand({ id: 'g', name: 'g', color: '#123' }, [
      series('a', [1, 2, null]),
      series('b', [2, 4, null]),
      series('c', [3, null, 7]),
    ]);
    expect(band.members).toEqual(['a', 'b', 'c']);
    expect(band.points.map((p) => [p.step, p.n])).toEqual([
      [1, 3],
      [2, 2],
      [3, 1],
    ]);
    expect(band.points[0].mean).toBe(2);
    expect(band.points[0].lo).toBeCloseTo(2 - 2.48414, 4);
    expect(band.points[0].hi).toBeCloseTo(2 + 2.48414, 4);
    expect(band.points[1].lo).toBeCloseTo(3 - 12.7062047, 5);
    expect(band.points[1].hi).toBeCloseTo(3 + 12.7062047, 5);
    expect(band.points[2]).toEqual({ step: 3, mean: 7, lo: 7, hi: 7, n: 1 });
  });

  it('enter the chart rows as a mean and a [lo, hi] range per step', () => {
    const members = [series('a', [1, 3]), series('b', [3, 5])];
    const band = seedBand({ id: 'g', name: 'g', color: '#123' }, members);
    const rows = chartRows(members, 0, [band]);
    expect(rows.map((r) => r.m0)).toEqual([2, 4]);
    const [lo, hi] = rows[0].b0 as [number, number];
    expect(lo).toBeCloseTo(2 - 12.7062047, 5);
    expect(hi).toBeCloseTo(2 + 12.7062047, 5);
    expect(rows[0].r0).toBe(1);
  });
});
