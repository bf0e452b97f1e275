import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tInterval } from '../../src/core/stats';
import { sftCheckpointPath } from '../../src/train/models';
import { getPreset, presetBaseConfig, presetRobustness } from '../../src/train/presets';
import { launch, screenshot } from './browser';

// A preset from its link in Chromium: `?preset=length-bias&steps=1&seed=3` opens the Train tab with the preset
// chosen; Run queues its variants as runs of the tab (each run's trainer in its own worker); the dashboard
// overlays them, charts the preset's own metrics (preset/* from each kept step trace, computed in the trainer
// worker) and shows the preset's explanation and measured robustness beside the charts. With `&seeds=2` the
// variants run on two seeds as one group, in parallel trainer workers (here a browser reporting 3 cores: 2 at
// once), and each chart draws every variant's mean ± 95% interval across the two seeds.

const SLUG = 'length-bias';
const preset = getPreset(SLUG);

/** The robustness text the page must show: derived from the evidence table for the checkpoint it serves. */
function expectedRobustness(slug: string): string {
  const p = getPreset(slug);
  const cfg = presetBaseConfig(p);
  const file = new URL(`../../public/${sftCheckpointPath(cfg.lab.harness)}`, import.meta.url);
  const sha = createHash('sha256').update(readFileSync(file)).digest('hex');
  return presetRobustness(p, sha).replace(/`/g, '');
}

const pointsOfRun = (page: Page, metric: string, runId: string) =>
  page
    .locator(
      `[data-testid=metric-chart][data-metric="${metric}"] [data-testid=chart-point][data-run="${runId}"]`,
    )
    .count();

/** A chart's band points at one step: each band's member count, mean and interval, as the page draws them. */
const bandPoints = (chart: Locator, step: number) =>
  chart.locator(`[data-testid=chart-band-point][data-step="${step}"]`).evaluateAll((els) =>
    els.map((e) => ({
      band: e.getAttribute('data-band') ?? '',
      n: Number(e.getAttribute('data-n')),
      mean: Number(e.getAttribute('data-mean')),
      lo: Number(e.getAttribute('data-lo')),
      hi: Number(e.getAttribute('data-hi')),
    })),
  );

describe('a preset in the Train tab', () => {
  let browser: Browser;
  const baseUrl = inject('baseUrl');
  const errors: string[] = [];
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    expect(errors).toEqual([]);
  });

  it('opens from its link, runs its variants on one seed and overlays them with its metrics and text', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}?preset=${SLUG}&steps=1&seed=3`);
    await page.getByTestId('train-tab').waitFor();
    expect(await page.locator('#preset-select').inputValue()).toBe(SLUG);
    expect(await page.getByTestId('preset-seed').inputValue()).toBe('3');
    // the seed field is part of the link and of what Run starts
    await page.getByTestId('preset-seed').fill('4');
    await expect.poll(() => new URL(page.url()).searchParams.get('seed')).toBe('4');
    await page.getByRole('button', { name: `Run ${preset.variants.length} runs on seed 4` }).waitFor();
    await page.getByTestId('preset-seed').fill('3');
    await page.getByRole('button', { name: `Run ${preset.variants.length} runs on seed 3` }).click();
    const started = Date.now();
    const rows = page.locator('[data-testid=train-run-row]');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(preset.variants.length);
    await expect
      .poll(() => page.locator('[data-testid=train-run-row][data-status=done]').count(), {
        timeout: 150_000,
        interval: 500,
      })
      .toBe(preset.variants.length);
    const allDoneS = (Date.now() - started) / 1000;
    const ids = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-run') as string));
    // each variant is one run of the tab, named by preset and variant, all on the link's seed
    const names = await rows.evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    for (const v of preset.variants)
      expect(
        names.some((n) => n.includes(`${SLUG} · ${v.name} · seed 3`)),
        v.name,
      ).toBe(true);
    // overlaid: every run in the legend and with ≥ 1 step in the charts, the preset's own metric included
    expect(await page.locator('.legend-runs li').count()).toBe(preset.variants.length);
    for (const id of ids) {
      await expect
        .poll(() => pointsOfRun(page, 'critic/score/mean', id), { timeout: 10_000 })
        .toBeGreaterThanOrEqual(1);
      await expect
        .poll(() => pointsOfRun(page, 'preset/token_weight/length_exponent', id), { timeout: 10_000 })
        .toBeGreaterThanOrEqual(1);
    }
    // the preset's metrics lead the dashboard
    const first = await page.locator('[data-testid=metric-chart]').first().getAttribute('data-metric');
    expect(preset.metrics).toContain(first);
    // the length exponent is a property of the loss: ≈ −1 under GRPO, ≈ 0 under Dr. GRPO
    const exponent = async (variant: string) => {
      const id = ids[names.findIndex((n) => n.includes(`${SLUG} · ${variant} ·`))];
      return Number(
        await page
          .locator(
            `[data-testid=metric-chart][data-metric="preset/token_weight/length_exponent"] [data-testid=chart-point][data-run="${id}"]`,
          )
          .first()
          .getAttribute('data-value'),
      );
    };
    expect(await exponent('grpo')).toBeCloseTo(-1, 1);
    expect(Math.abs(await exponent('dr-grpo'))).toBeLessThan(0.05);
    // beside the charts: the preset's explanation and its measured robustness
    const notes = page.getByTestId('preset-notes');
    // (its markdown rendered: the `code` spans are code elements, their backticks gone)
    const explanation = notes.getByTestId('preset-explanation');
    expect(await explanation.textContent()).toBe(preset.explanation.replace(/`/g, ''));
    expect(await explanation.locator('code').first().textContent()).toBe('seq-mean-token-mean');
    // the robustness text: the structural statement and the claims' verdicts from the evidence table, for the
    // checkpoint this page serves (hashed in the page)
    await expect
      .poll(() => notes.getByTestId('preset-robustness').textContent(), { timeout: 10_000 })
      .toBe(`How robust (measured): ${expectedRobustness(SLUG)}`);
    expect(await page.getByTestId('preset-compare').locator('tbody tr').count()).toBe(preset.metrics.length);
    // the link still names the preset
    expect(new URL(page.url()).searchParams.get('preset')).toBe(SLUG);
    await screenshot(page, 'train-preset');
    // after a reload the runs keep their preset metrics (preset_metrics.jsonl in each run's folder) and notes
    await page.reload();
    await page.getByTestId('preset-notes').waitFor({ timeout: 30_000 });
    for (const id of ids)
      await expect
        .poll(() => pointsOfRun(page, 'preset/token_weight/length_exponent', id), { timeout: 30_000 })
        .toBe(1);
    console.log(
      `preset e2e: ${preset.variants.length} runs of ${SLUG} (1 step each) done ${allDoneS.toFixed(1)} s after Run`,
    );
    await context.close();
  }, 240_000);

  it('runs a preset as a group of two seeds in two workers at once and charts each variant as mean ± interval of both seeds', async () => {
    const slug = 'staleness';
    const group = getPreset(slug);
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    // the page sees a 3-core machine: cores − 1 = 2 trainer workers for the group (this machine may have 2)
    await context.addInitScript(() =>
      Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 3, configurable: true }),
    );
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}?preset=${slug}&steps=2&seed=5&seeds=2`);
    await page.getByTestId('train-tab').waitFor();
    expect(await page.getByTestId('preset-seeds').inputValue()).toBe('2');
    const n = group.variants.length;
    await page.getByRole('button', { name: `Run ${n} × 2 runs on seeds 5–6` }).click();
    const rows = page.locator('[data-testid=train-run-row]');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(2 * n);
    // the live panel states the rule, and two runs train at the same time, each in its own worker
    const parallel = page.getByTestId('train-parallel');
    await expect.poll(() => parallel.getAttribute('data-workers'), { timeout: 30_000 }).toBe('2');
    expect(await parallel.textContent()).toContain('2 runs train at once (3 cores − 1 for the page = 2;');
    expect(await parallel.textContent()).toContain(`${2 * n} runs in the group`);
    const liveRuns = page.locator('[data-testid=train-live-run]');
    await expect.poll(() => liveRuns.count(), { timeout: 30_000 }).toBe(2);
    const together = await liveRuns.evaluateAll((els) =>
      els.map((e) => e.getAttribute('data-run') as string),
    );
    expect(new Set(together).size).toBe(2);
    await screenshot(page, 'train-preset-parallel');
    // never more than two at once while the group trains
    let most = 0;
    await expect
      .poll(
        async () => {
          most = Math.max(most, await liveRuns.count());
          return page.locator('[data-testid=train-run-row][data-status=done]').count();
        },
        { timeout: 360_000, interval: 500 },
      )
      .toBe(2 * n);
    expect(most).toBe(2);
    const ids = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-run') as string));
    const names = await rows.evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    const metric = 'critic/score/mean';
    const chart = page.locator(`[data-testid=metric-chart][data-metric="${metric}"]`);
    await expect.poll(() => chart.getAttribute('data-bands'), { timeout: 10_000 }).toBe(String(n));
    // the charts redraw in the background (deferred): wait until every band holds both seeds
    for (const step of [1, 2])
      await expect
        .poll(async () => (await bandPoints(chart, step)).map((p) => p.n), { timeout: 30_000 })
        .toEqual(Array(n).fill(2));
    // the bands are drawn: one shaded range area per variant
    expect(await chart.locator('.recharts-area-area').count()).toBe(n);
    for (const v of group.variants) {
      const runOf = (seed: number) =>
        ids[names.findIndex((x) => x.includes(`${slug} · ${v.name} · seed ${seed}`))];
      const members = [runOf(5), runOf(6)];
      expect(members.every(Boolean), v.name).toBe(true);
      for (const step of [1, 2]) {
        // both seeds' own values at this step, as the chart plots them
        const values: number[] = [];
        for (const id of members)
          values.push(
            Number(
              await chart
                .locator(`[data-testid=chart-point][data-run="${id}"][data-step="${step}"]`)
                .getAttribute('data-value'),
            ),
          );
        const points = await bandPoints(chart, step);
        const mine = points.find((p) => p.band.endsWith(`:${v.name}`));
        expect(mine, `${v.name} step ${step}`).toBeDefined();
        const ci = tInterval(values);
        expect(mine?.n).toBe(2);
        expect(mine?.mean).toBeCloseTo(ci.mean, 9);
        expect(mine?.lo).toBeCloseTo(ci.lo, 9);
        expect(mine?.hi).toBeCloseTo(ci.hi, 9);
      }
    }
    await screenshot(page, 'train-preset-seed-group');
    await context.close();
  }, 480_000);

  it('Stop stops every worker of a group and its queue', async () => {
    const slug = 'staleness';
    const n = getPreset(slug).variants.length;
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    await context.addInitScript(() =>
      Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 3, configurable: true }),
    );
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}?preset=${slug}&steps=2&seed=9&seeds=2`);
    await page.getByTestId('train-tab').waitFor();
    await page.getByRole('button', { name: `Run ${n} × 2 runs on seeds 9–10` }).click();
    const rows = page.locator('[data-testid=train-run-row]');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(2 * n);
    await expect
      .poll(() => page.locator('[data-testid=train-live-run]').count(), { timeout: 60_000 })
      .toBe(2);
    await page.getByTestId('train-stop').click();
    const status = () => rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
    // both workers end at their next phase boundary (or before their loop starts); the queue never starts
    await expect.poll(status, { timeout: 180_000, interval: 500 }).toEqual(Array(2 * n).fill('stopped'));
    expect(await page.getByTestId('train-live').count()).toBe(0);
    await context.close();
  }, 300_000);

  it('a group member that fails is marked failed alone; the others finish and the bands use their values', async () => {
    const slug = 'staleness';
    const group = getPreset(slug);
    const n = group.variants.length;
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    await context.addInitScript(() => {
      Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => 3, configurable: true });
      // the first trainer worker's start message is spoiled: its worker refuses it (the protocol's validator)
      const post = Worker.prototype.postMessage;
      let spoiled = false;
      Worker.prototype.postMessage = function (this: Worker, m: unknown, ...rest: unknown[]) {
        const msg = m as { type?: unknown; runId?: unknown } | null;
        if (!spoiled && msg?.type === 'start' && typeof msg.runId === 'string') {
          spoiled = true;
          return post.call(this, { ...msg, resume: 'yes' }, ...(rest as [StructuredSerializeOptions]));
        }
        return post.call(this, m, ...(rest as [StructuredSerializeOptions]));
      };
    });
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}?preset=${slug}&steps=1&seed=7&seeds=2`);
    await page.getByTestId('train-tab').waitFor();
    await page.getByRole('button', { name: `Run ${n} × 2 runs on seeds 7–8` }).click();
    const rows = page.locator('[data-testid=train-run-row]');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(2 * n);
    const status = () => rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
    await expect
      .poll(async () => (await status()).filter((s) => s === 'done' || s === 'failed').length, {
        timeout: 300_000,
        interval: 500,
      })
      .toBe(2 * n);
    const first = group.variants[0].name;
    const failed = page.locator('[data-testid=train-run-row][data-status=failed]');
    expect(await failed.count()).toBe(1);
    const failedText = (await failed.textContent()) ?? '';
    expect(failedText).toContain(`${slug} · ${first} · seed 7`);
    expect(failedText).toContain('trainer worker: start.resume must be true or false');
    expect((await status()).filter((s) => s === 'done')).toHaveLength(2 * n - 1);
    const ids = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-run') as string));
    const names = await rows.evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    const runOf = (variant: string, seed: number) =>
      ids[names.findIndex((x) => x.includes(`${slug} · ${variant} · seed ${seed}`))];
    const chart = page.locator('[data-testid=metric-chart][data-metric="critic/score/mean"]');
    await expect.poll(() => chart.getAttribute('data-bands'), { timeout: 10_000 }).toBe(String(n));
    const pointValue = async (id: string) =>
      Number(
        await chart
          .locator(`[data-testid=chart-point][data-run="${id}"][data-step="1"]`)
          .getAttribute('data-value'),
      );
    expect(await chart.locator(`[data-testid=chart-point][data-run="${runOf(first, 7)}"]`).count()).toBe(0);
    // the charts redraw in the background (deferred): wait until every band has the members it will have
    await expect
      .poll(async () => (await bandPoints(chart, 1)).map((p) => p.n).sort(), { timeout: 30_000 })
      .toEqual([1, ...Array(n - 1).fill(2)]);
    const points = await bandPoints(chart, 1);
    for (const v of group.variants) {
      const mine = points.find((p) => p.band.endsWith(`:${v.name}`));
      expect(mine, v.name).toBeDefined();
      if (v.name === first) {
        // only seed 8 has a value: the band is that value, no width
        const only = await pointValue(runOf(first, 8));
        expect(mine).toMatchObject({ n: 1, mean: only, lo: only, hi: only });
      } else {
        const ci = tInterval([await pointValue(runOf(v.name, 7)), await pointValue(runOf(v.name, 8))]);
        expect(mine?.n).toBe(2);
        expect(mine?.mean).toBeCloseTo(ci.mean, 9);
        expect(mine?.lo).toBeCloseTo(ci.lo, 9);
        expect(mine?.hi).toBeCloseTo(ci.hi, 9);
      }
    }
    await screenshot(page, 'train-preset-member-failed');
    await context.close();
  }, 420_000);
});
