import { createElement } from 'react';
import { flushSync } from 'react-dom';
import { createRoot } from 'react-dom/client';
import { describe, expect, it } from 'vitest';
import { MetricChart } from '../../src/ui/charts/MetricChart';

const tick = () => new Promise((r) => setTimeout(r, 50));

describe('metric chart points from the keyboard (Chromium)', () => {
  it('one tab stop; Home / → move focus between points; the caption shows the value; Enter opens the step', async () => {
    const host = document.createElement('div');
    host.style.width = '500px';
    document.body.append(host);
    const opened: string[] = [];
    const root = createRoot(host);
    flushSync(() =>
      root.render(
        createElement(MetricChart, {
          metric: 'm',
          smoothing: 0,
          series: [
            {
              id: 'a',
              name: 'run a',
              color: '#000',
              points: [1, 2, 3, 4].map((step) => ({ step, value: -step / 10 })),
            },
          ],
          onPoint: (id, step) => opened.push(`${id}:${step}`),
        }),
      ),
    );
    for (let i = 0; i < 40 && host.querySelectorAll('[data-testid=chart-point]').length < 4; i++)
      await tick();
    const stops = host.querySelectorAll<SVGElement>('[data-testid=chart-point][tabindex="0"]');
    expect(stops.length).toBe(1);
    expect(stops[0].getAttribute('data-step')).toBe('4');
    stops[0].focus();
    await tick();
    const key = async (k: string) => {
      (document.activeElement as Element).dispatchEvent(
        new KeyboardEvent('keydown', { key: k, bubbles: true }),
      );
      await tick();
    };
    expect(document.activeElement?.getAttribute('data-step')).toBe('4');
    await key('Home');
    expect(document.activeElement?.getAttribute('data-step')).toBe('1');
    await key('ArrowRight');
    expect(document.activeElement?.getAttribute('data-step')).toBe('2');
    expect(host.querySelector('[data-testid=chart-readout]')?.textContent).toBe('run a, step 2: −0.200000');
    await key('Enter');
    expect(opened).toEqual(['a:2']);
    root.unmount();
    host.remove();
  });
});
