import { describe, expect, it } from 'vitest';
import { initialPoint, isNavKey, nextPoint } from '../../src/ui/charts/pointNav';

// three series: steps out of order, one series without points, one with other steps
const steps = [[3, 1, 2, 5], [], [2, 4, 6]];

describe('keyboard movement between chart points', () => {
  it('left / right walk the series by step and stop at its ends; Home / End jump to them', () => {
    expect(nextPoint(steps, { series: 0, step: 2 }, 'ArrowRight')).toEqual({ series: 0, step: 3 });
    expect(nextPoint(steps, { series: 0, step: 3 }, 'ArrowRight')).toEqual({ series: 0, step: 5 });
    expect(nextPoint(steps, { series: 0, step: 5 }, 'ArrowRight')).toEqual({ series: 0, step: 5 });
    expect(nextPoint(steps, { series: 0, step: 2 }, 'ArrowLeft')).toEqual({ series: 0, step: 1 });
    expect(nextPoint(steps, { series: 0, step: 1 }, 'ArrowLeft')).toEqual({ series: 0, step: 1 });
    expect(nextPoint(steps, { series: 0, step: 3 }, 'Home')).toEqual({ series: 0, step: 1 });
    expect(nextPoint(steps, { series: 0, step: 3 }, 'End')).toEqual({ series: 0, step: 5 });
  });

  it('up / down change series, skipping one without points, to the nearest step (earlier on a tie)', () => {
    expect(nextPoint(steps, { series: 0, step: 5 }, 'ArrowDown')).toEqual({ series: 2, step: 4 });
    expect(nextPoint(steps, { series: 0, step: 3 }, 'ArrowDown')).toEqual({ series: 2, step: 2 });
    expect(nextPoint(steps, { series: 2, step: 6 }, 'ArrowUp')).toEqual({ series: 0, step: 5 });
    expect(nextPoint(steps, { series: 2, step: 4 }, 'ArrowUp')).toEqual({ series: 0, step: 3 });
    expect(nextPoint(steps, { series: 2, step: 4 }, 'ArrowDown')).toEqual({ series: 2, step: 4 });
    expect(nextPoint(steps, { series: 0, step: 1 }, 'ArrowUp')).toEqual({ series: 0, step: 1 });
  });

  it('other keys and points not in the chart do not move', () => {
    for (const key of ['Enter', ' ', 'Tab', 'a']) {
      expect(isNavKey(key)).toBe(false);
      expect(nextPoint(steps, { series: 0, step: 2 }, key)).toBeNull();
    }
    expect(nextPoint(steps, { series: 0, step: 4 }, 'ArrowRight')).toBeNull();
    expect(nextPoint(steps, { series: 1, step: 1 }, 'ArrowRight')).toBeNull();
    expect(nextPoint(steps, { series: 7, step: 1 }, 'ArrowRight')).toBeNull();
  });

  it('the tab stop is the preferred point when the chart has it, else the first series with points, last step', () => {
    expect(initialPoint(steps, { series: 2, step: 4 })).toEqual({ series: 2, step: 4 });
    expect(initialPoint(steps, { series: 2, step: 5 })).toEqual({ series: 0, step: 5 });
    expect(initialPoint(steps, null)).toEqual({ series: 0, step: 5 });
    expect(initialPoint([[], [7, 8]], null)).toEqual({ series: 1, step: 8 });
    expect(initialPoint([[], []], null)).toBeNull();
  });
});
