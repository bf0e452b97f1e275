/**
 * The Scheduling tab: pick a scenario, switch the mode drawn; the step time and utilisation shown are the
 * simulator's (computed here in Node with the same inputs), the simulated step is drawn on the Timeline view's
 * component with stale calls marked, and the state is in the URL.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runScheduling } from '../../src/ui/sched/simView';
import { launch, screenshot } from './browser';

describe('Scheduling tab in Chromium', () => {
  let browser: Browser;
  const baseUrl = inject('baseUrl');
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('picks a scenario, switches mode, and shows what the simulator says', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}#tab=scheduling`);
    // pick the published 128-GPU scenario, then the agent one
    await page.getByTestId('sched-scenario').selectOption('verl-fully-async-7b-128');
    await expect.poll(() => page.url()).toContain('sim=verl-fully-async-7b-128');
    const big = runScheduling('verl-fully-async-7b-128', '');
    await expect
      .poll(async () => Number(await page.getByTestId('sched-shown').getAttribute('data-step-s')), {
        timeout: 120_000,
      })
      .toBeCloseTo(big.results[1].summary.mean_step_s, 6);
    await page.getByTestId('sched-scenario').selectOption('agentic-8gpu');
    // the default scenario: the URL leaves it out
    await expect.poll(() => page.url()).not.toContain('sim=');
    // the simulation runs in a worker: the view marks itself busy until the answer for its inputs is in
    const settled = () =>
      expect
        .poll(() => page.getByTestId('sched').getAttribute('data-busy'), { timeout: 120_000 })
        .toBe('false');
    await settled();
    const want = runScheduling('agentic-8gpu', '');
    const shown = page.getByTestId('sched-shown');
    const readShown = async () => ({
      mode: await shown.getAttribute('data-mode'),
      step: Number(await shown.getAttribute('data-step-s')),
    });
    // the default drawn mode is the scenario's last: fully_async
    const first = await readShown();
    const fa = want.results.find((r) => r.summary.mode === 'fully_async');
    expect(first.mode).toBe('fully_async');
    expect(first.step).toBeCloseTo(fa?.summary.mean_step_s ?? Number.NaN, 6);
    // every mode's row: step time and pool utilisation as simulated
    const rows = page.getByTestId('sched-row');
    expect(await rows.count()).toBe(want.modes.length);
    for (const r of want.results) {
      const row = page.locator(`[data-testid="sched-row"][data-mode="${r.summary.mode}"]`);
      expect(Number(await row.getAttribute('data-step-s'))).toBeCloseTo(r.summary.mean_step_s, 6);
      expect(Number(await row.getAttribute('data-pool-util'))).toBeCloseTo(r.summary.utilisation.pool, 6);
    }
    // the timeline: stale calls of the async step marked
    await expect
      .poll(() => page.locator('[data-testid="timeline-call"][data-stale="true"]').count())
      .toBeGreaterThan(0);
    // switch to sync: a longer step, lower pool utilisation, no stale calls
    await page.getByTestId('sched-mode').selectOption('sync');
    await expect.poll(async () => (await readShown()).mode).toBe('sync');
    const sync = want.results.find((r) => r.summary.mode === 'sync');
    const second = await readShown();
    expect(second.step).toBeCloseTo(sync?.summary.mean_step_s ?? Number.NaN, 6);
    expect(second.step).toBeGreaterThan(first.step);
    expect(sync?.summary.utilisation.pool).toBeLessThan(fa?.summary.utilisation.pool ?? 0);
    expect(await page.locator('[data-testid="timeline-call"][data-stale="true"]').count()).toBe(0);
    await expect.poll(() => page.url()).toContain('smode=sync');
    // a slider changes the inputs; the URL keeps them, and a reload shows the same
    await page.getByTestId('sched-slider-cluster.gpus').fill('16');
    await expect.poll(() => page.url()).toContain('sset=');
    await settled();
    const with16 = runScheduling('agentic-8gpu', 'cluster.gpus=16');
    const s16 = with16.results.find((r) => r.summary.mode === 'sync');
    expect((await readShown()).step).toBeCloseTo(s16?.summary.mean_step_s ?? Number.NaN, 6);
    const url = page.url();
    const again = await browser.newPage();
    await again.goto(url);
    await expect
      .poll(async () => Number(await again.getByTestId('sched-shown').getAttribute('data-step-s')), {
        timeout: 120_000,
      })
      .toBeCloseTo(s16?.summary.mean_step_s ?? Number.NaN, 6);
    await screenshot(page, 'scheduling');
    expect(errors).toEqual([]);
    await again.close();
    await page.close();
    // the browser simulates up to 200,000 trajectories per mode in its worker, Node the same again here
  }, 300_000);
});
