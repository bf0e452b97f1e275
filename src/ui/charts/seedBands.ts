/**
 * A group of runs that differ only in their seed (a preset's variant run on several seeds) as one band: per step
 * the mean of the members' values and its two-sided 95% Student t interval (core/stats.ts) over the members
 * that have a value there (one member: the value itself, no width).
 */
import { tInterval } from '../../core/stats';
import type { MetricSeries } from './MetricChart';

export interface BandPoint {
  step: number;
  mean: number;
  lo: number;
  hi: number;
  /** members with a finite value at this step */
  n: number;
}

export interface SeedBand {
  id: string;
  name: string;
  color: string;
  /** the member series' ids */
  members: string[];
  points: BandPoint[];
}

/** The band of one group of member series (steps in order; steps where no member has a value are left out). */
export function seedBand(
  group: { id: string; name: string; color: string },
  members: readonly MetricSeries[],
): SeedBand {
  const bySteps = new Map<number, number[]>();
  for (const m of members)
    for (const p of m.points)
      if (typeof p.value === 'number' && Number.isFinite(p.value)) {
        const l = bySteps.get(p.step) ?? [];
        l.push(p.value);
        bySteps.set(p.step, l);
      }
  const points = [...bySteps.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([step, vals]): BandPoint => {
      if (vals.length === 1) return { step, mean: vals[0], lo: vals[0], hi: vals[0], n: 1 };
      const ci = tInterval(vals);
      return { step, mean: ci.mean, lo: ci.lo, hi: ci.hi, n: vals.length };
    });
  return { ...group, members: members.map((m) => m.id), points };
}
