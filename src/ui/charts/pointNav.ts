/**
 * Keyboard movement between a metric chart's points (one tab stop per chart, a roving focus): ← / → the previous /
 * next step of the same series, Home / End its first / last step, ↑ / ↓ the previous / next series that has points,
 * at its step nearest the current one (the earlier on a tie). Pure: the chart hands in each series' steps.
 */

/** A point of a chart: the series' index and the step. */
export interface PointRef {
  series: number;
  step: number;
}

const KEYS = ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End'] as const;

/** Whether the chart moves its focus on this key (the others are left to the page). */
export function isNavKey(key: string): boolean {
  return (KEYS as readonly string[]).includes(key);
}

function sorted(steps: readonly number[]): number[] {
  return [...steps].sort((a, b) => a - b);
}

function nearest(steps: readonly number[], step: number): number {
  let best = steps[0];
  for (const s of steps) if (Math.abs(s - step) < Math.abs(best - step)) best = s;
  return best;
}

/**
 * The point a key moves to from `at`, given each series' steps (with a finite value); `at` itself at an edge; null
 * for a key that does not move (or a point not in the chart).
 */
export function nextPoint(steps: readonly (readonly number[])[], at: PointRef, key: string): PointRef | null {
  if (!isNavKey(key)) return null;
  const own = steps[at.series];
  if (!own?.includes(at.step)) return null;
  const mine = sorted(own);
  const i = mine.indexOf(at.step);
  switch (key) {
    case 'ArrowLeft':
      return { series: at.series, step: mine[Math.max(0, i - 1)] };
    case 'ArrowRight':
      return { series: at.series, step: mine[Math.min(mine.length - 1, i + 1)] };
    case 'Home':
      return { series: at.series, step: mine[0] };
    case 'End':
      return { series: at.series, step: mine[mine.length - 1] };
    default: {
      const dir = key === 'ArrowDown' ? 1 : -1;
      for (let s = at.series + dir; s >= 0 && s < steps.length; s += dir)
        if (steps[s].length > 0) return { series: s, step: nearest(sorted(steps[s]), at.step) };
      return at;
    }
  }
}

/** The chart's tab stop: `preferred` when it is a point of the chart, else the last step of the first series. */
export function initialPoint(
  steps: readonly (readonly number[])[],
  preferred: PointRef | null,
): PointRef | null {
  if (preferred && steps[preferred.series]?.includes(preferred.step)) return preferred;
  const s = steps.findIndex((st) => st.length > 0);
  return s < 0 ? null : { series: s, step: Math.max(...steps[s]) };
}
