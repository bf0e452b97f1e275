import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { formFromConfig, formKey, trainTabDefaults } from '../../src/ui/train/formConfig';
import { launch, screenshot } from './browser';

// The Train tab end to end in Chromium: the policy on WebGPU (SwiftShader here), harness agents in Web
// Workers, the trainer in its own worker. A short run from the shipped SFT checkpoint (tiny preset) shows
// metrics for ≥ 3 steps in the charts; a click on a point opens that step's kept batch in the Trace view with
// the trainer's log-probs; the run survives a reload (listed, interrupted, resumable from its checkpoint) and
// resumes; a copied link opens the same config.

const CONFIG: Record<string, string> = {
  'lab.backend': 'webgpu',
  'lab.train_tasks': '8',
  'lab.val_tasks': '2',
  'lab.workers': '2',
  'data.train_batch_size': '2',
  'data.max_response_length': '48',
  'actor_rollout_ref.rollout.n': '2',
  'actor_rollout_ref.actor.ppo_mini_batch_size': '1',
  'trainer.total_training_steps': '8',
  'trainer.test_freq': '8',
  'lab.seed': '7',
};
const hash = `#tab=train&${Object.entries(CONFIG)
  .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
  .join('&')}`;

/** Every form field's value, by config path. */
async function formValues(page: Page): Promise<Record<string, string>> {
  return page.evaluate(() => {
    const out: Record<string, string> = {};
    for (const el of document.querySelectorAll<HTMLInputElement | HTMLSelectElement>(
      '[data-testid^="cfg-"]',
    )) {
      if (!(el instanceof HTMLInputElement || el instanceof HTMLSelectElement)) continue;
      const key = (el.dataset.testid as string).slice(4);
      out[key] = el instanceof HTMLInputElement && el.type === 'checkbox' ? String(el.checked) : el.value;
    }
    return out;
  });
}

const chart = (page: Page, metric: string) =>
  page.locator(`[data-testid=metric-chart][data-metric="${metric}"]`);

async function pointsOf(page: Page, metric: string): Promise<number> {
  const c = chart(page, metric);
  if ((await c.count()) === 0) return 0;
  return Number(await c.getAttribute('data-points'));
}

describe('the Train tab in Chromium', () => {
  let browser: Browser;
  let context: BrowserContext;
  const baseUrl = inject('baseUrl');
  const errors: string[] = [];
  beforeAll(async () => {
    browser = await launch();
    context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: new URL(baseUrl).origin,
    });
  });
  afterAll(async () => {
    await browser?.close();
    expect(errors).toEqual([]);
  });

  it('trains live, opens a step from a chart point, survives a reload and resumes, and a link gives the config', async () => {
    const t0 = Date.now();
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}${hash}`);
    await page.getByTestId('train-tab').waitFor();
    // the form reads the config from the URL
    const form = await formValues(page);
    for (const [k, v] of Object.entries(CONFIG)) expect(form[k], k).toBe(v);
    expect(form['actor_rollout_ref.model.path']).toBe('sft');
    const defaults = formFromConfig(trainTabDefaults());
    const changed = Object.entries(CONFIG).filter(([k, v]) => defaults[formKey(k)] !== v).length;
    expect(await page.getByTestId('cfg-changed').textContent()).toContain(`${changed} changes`);
    await screenshot(page, 'train-idle');

    // a copied link opens the same config in a fresh page
    await page.getByTestId('train-copy-link').click();
    await expect.poll(() => page.getByTestId('train-copy-link').textContent()).toBe('Link copied');
    const link = await page.evaluate(() => navigator.clipboard.readText());
    const other = await context.newPage();
    other.on('pageerror', (e) => errors.push(e.message));
    await other.goto(link);
    await other.getByTestId('train-tab').waitFor();
    expect(await formValues(other)).toEqual(await formValues(page));
    await other.close();

    // Start: metrics for ≥ 3 steps in the charts
    const started = Date.now();
    await page.getByTestId('train-start').click();
    await page.getByTestId('train-live').waitFor();
    await expect
      .poll(() => pointsOf(page, 'critic/score/mean'), { timeout: 150_000, interval: 500 })
      .toBeGreaterThanOrEqual(1);
    const firstPointS = (Date.now() - started) / 1000;
    await expect
      .poll(() => pointsOf(page, 'critic/score/mean'), { timeout: 200_000, interval: 500 })
      .toBeGreaterThanOrEqual(3);
    const threeStepsS = (Date.now() - started) / 1000;
    // the engine the trainer got is the one asked for (WebGPU on SwiftShader)
    const row = page.locator('[data-testid=train-run-row]').first();
    expect(await row.textContent()).toContain('webgpu');
    await page.getByTestId('train-pause').click();
    await expect.poll(() => row.getAttribute('data-status')).toBe('paused');
    for (const m of [
      'actor/pg_loss',
      'actor/entropy',
      'actor/grad_norm',
      'response_length/mean',
      'timing_s/step',
    ])
      expect(await pointsOf(page, m), m).toBeGreaterThanOrEqual(3);
    expect(await pointsOf(page, 'val/reward')).toBeGreaterThanOrEqual(1); // validation before training
    await screenshot(page, 'train-running');
    const runId = (await row.getAttribute('data-run')) as string;

    // a point → that step's kept batch in the Trace view, with the trainer's log-probs; from the keyboard: the
    // chart is one tab stop, Home / → move between its points, the caption shows the focused value, Enter opens
    const score = chart(page, 'critic/score/mean');
    expect(await score.locator('[data-testid=chart-point][tabindex="0"]').count()).toBe(1);
    await score.locator('[data-testid=chart-point][tabindex="0"]').focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    const focusedStep = await page.evaluate(() => document.activeElement?.getAttribute('data-step'));
    expect(focusedStep).toBe('2');
    expect(await score.getByTestId('chart-readout').textContent()).toMatch(/step 2: /);
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.getByRole('tab', { name: 'Trace' }).getAttribute('aria-selected'), { timeout: 30_000 })
      .toBe('true');
    await expect
      .poll(() => page.getByTestId('import-summary').textContent(), { timeout: 60_000 })
      .toMatch(/step 2.*4 rollouts/);
    const ids = await page
      .locator('[data-testid^="rollout-row-"]')
      .evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    expect(ids).toHaveLength(4);
    const colorBy = page.locator('#color-by');
    expect(await colorBy.inputValue()).toBe('trainerLogprob');
    for (const k of ['trainerLogprob', 'entropy', 'gap'])
      expect(await colorBy.locator(`option[value=${k}]`).isDisabled(), k).toBe(false);
    await page.locator('[data-testid=call-tokens] .tok').first().hover();
    const cell = page
      .getByTestId('token-tooltip')
      .locator('tr', { hasText: 'log-prob (trainer)' })
      .locator('td');
    const trainerLp = Number(((await cell.textContent()) ?? '').replace(/\u2212/g, '-'));
    // a log-prob the trainer computed for the sampled token (finite, ≤ 0)
    expect(Number.isFinite(trainerLp), (await cell.textContent()) ?? '').toBe(true);
    expect(trainerLp).toBeLessThanOrEqual(0);
    await screenshot(page, 'train-trace-step');

    // reload: the run is listed, interrupted, resumable from its last checkpoint
    await page.reload();
    await page.getByRole('tab', { name: 'Train' }).click();
    const again = page.locator(`[data-testid=train-run-row][data-run="${runId}"]`);
    await expect.poll(() => again.getAttribute('data-status'), { timeout: 30_000 }).toBe('interrupted');
    const resume = again.getByTestId('train-run-resume');
    const label = (await resume.textContent()) ?? '';
    const from = Number(/Resume from step (\d+)/.exec(label)?.[1]);
    expect(from).toBeGreaterThanOrEqual(3);
    await expect.poll(() => pointsOf(page, 'critic/score/mean'), { timeout: 30_000 }).toBe(from);
    await resume.click();
    await expect
      .poll(() => pointsOf(page, 'critic/score/mean'), { timeout: 150_000, interval: 500 })
      .toBe(from + 1);
    await page.getByTestId('train-stop').click();
    await expect.poll(() => again.getAttribute('data-status'), { timeout: 60_000 }).toBe('stopped');
    // a step that was already under way when Stop was clicked still finishes (and is kept)
    const done = await pointsOf(page, 'critic/score/mean');
    expect(done).toBeGreaterThanOrEqual(from + 1);
    // the timeline of the resumed step: trainer phases and worker lanes
    await page.getByTestId('train-view-timeline').click();
    await page.getByTestId('train-step-select').selectOption(String(from + 1));
    const tl = page.getByTestId('timeline').first();
    await tl.waitFor();
    expect(await tl.locator('[data-testid=timeline-phase][data-phase=update_actor]').count()).toBeGreaterThan(
      0,
    );
    expect(await tl.locator('[data-testid=timeline-rollout]').count()).toBeGreaterThanOrEqual(4);
    await screenshot(page, 'train-timeline');

    // export the run as one zip and import it back: a second run with the same metrics
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      again.getByRole('button', { name: 'Export' }).click(),
    ]);
    const zip = join(mkdtempSync(join(tmpdir(), 'train-e2e-')), 'run.zip');
    await download.saveAs(zip);
    await page.getByTestId('train-import').setInputFiles(zip);
    await expect.poll(() => page.locator('[data-testid=train-run-row]').count(), { timeout: 30_000 }).toBe(2);
    const imported = page.locator(`[data-testid=train-run-row]:not([data-run="${runId}"])`);
    expect(await imported.getAttribute('data-status')).toBe('stopped');
    await page.getByTestId('train-view-dashboard').click();
    await expect.poll(() => pointsOf(page, 'critic/score/mean')).toBe(done);
    rmSync(dirname(zip), { recursive: true, force: true });
    console.log(
      `train e2e: first chart point ${firstPointS.toFixed(1)} s after Start, 3 steps in ${threeStepsS.toFixed(1)} s, whole test ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
  }, 600_000);
});
