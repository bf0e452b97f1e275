/**
 * The Remote tab in Chromium against a real gateway (serving the built page on its own origin) and a real Ray
 * head: the token link, the cluster line, the template form pre-filled from the Advantages settings in the URL,
 * a submitted agl-cpu run followed live (status, charts, rollouts, log), its rollouts opened in the Trace and
 * Advantages views with core's weights, the runs list after a reload, and Stop.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_WEIGHT_SIGN, getWeightSign, signed } from '../../src/core/pipeline/sign';
import { computeTrainerView } from '../../src/core/pipeline/trainer';
import { readAglEvents } from '../../src/core/trace/io/aglEvents';
import { parseRunSummary } from '../../src/server/protocol/api';
import { launch, screenshot } from '../e2e/browser';
import { GatewayClient, type GatewayProcess, startGateway, until } from './gateway';

let dir: string;
let gw: GatewayProcess;
let client: GatewayClient;
let browser: Browser;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hl-gw-ui-'));
  gw = await startGateway([
    '--port',
    '0',
    '--data-dir',
    dir,
    '--ray-address',
    inject('rayDashboard'),
    '--ray-token-file',
    inject('rayTokenFile'),
    '--static',
    inject('remoteDist'),
  ]);
  client = new GatewayClient(gw.url, gw.token as string);
  browser = await launch();
});

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function openRemote(page: Page, hash = '') {
  await page.goto(`${gw.url}/?token=${gw.token}${hash}`);
  await page.getByRole('tab', { name: 'Remote' }).click();
  await page.getByTestId('cluster-info').waitFor({ timeout: 60_000 });
}

describe('the Remote tab', () => {
  it('connects, submits a run pre-filled from the Advantages settings, follows it and opens its rollouts', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // the explorer's settings in the URL, as a researcher would have them after the Advantages tab
    await openRemote(page, '#adv=rloo&pl=vanilla&agg=seq-mean-token-mean&rla=0');
    expect(page.url()).not.toContain('token=');
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    expect(await page.getByTestId('remote-conn').textContent()).toMatch(
      /^gateway 0\.1\.0 · Ray 2\.60\.0 at http:\/\/127\.0\.0\.1:\d+/,
    );
    expect(await page.getByTestId('cluster-nodes').textContent()).toBe('1');
    expect(Number(await page.getByTestId('cluster-cpus').textContent())).toBeGreaterThan(0);
    expect(await page.getByTestId('cluster-gpus').textContent()).toBe('0');

    const form = page.getByTestId('template-form');
    expect(await form.getByLabel('Advantage estimator').inputValue()).toBe('rloo');
    expect(await form.getByLabel('Loss aggregation').inputValue()).toBe('seq-mean-token-mean');
    expect(await form.getByLabel('Policy loss').inputValue()).toBe('vanilla');
    expect(await form.getByLabel('Rollout-level advantage').isChecked()).toBe(false);
    await form.getByLabel('Steps').fill('2');
    await form.getByLabel('Run name').fill('from the page');
    await screenshot(page, 'remote-form');
    await form.getByRole('button', { name: 'Submit' }).click();

    const view = page.getByTestId('run-view');
    await view.waitFor({ timeout: 30_000 });
    const id = (await view.getAttribute('data-run')) as string;
    const submitted = parseRunSummary(await client.json('GET', `/api/runs/${id}`));
    expect(submitted.name).toBe('from the page');
    expect(submitted.params).toMatchObject({
      adv_estimator: 'rloo',
      loss_agg_mode: 'seq-mean-token-mean',
      policy_loss_mode: 'vanilla',
      enable_rollout_level_advantage: false,
      total_training_steps: 2,
    });
    await until(
      'the run to succeed in the page',
      async () => ['succeeded', 'failed', 'stopped'].includes((await view.getAttribute('data-state')) ?? ''),
      300_000,
    );
    const ended = parseRunSummary(await client.json('GET', `/api/runs/${id}`));
    expect(ended.state, ended.message).toBe('succeeded');
    const chart = page.locator('[data-testid=metric-chart][data-metric="actor/grad_norm"]');
    await until(
      'both steps in the chart',
      async () => (await chart.getAttribute('data-points')) === '2',
      30_000,
    );
    // 2 steps × 4 train rollouts, and the validation after the last step on 4 val tasks
    expect(await page.getByTestId('rollout-count').textContent()).toMatch(/^12 recorded/);
    expect(await page.getByTestId('log-tail').textContent()).toContain('[harness-lab] agl-gateway');
    await screenshot(page, 'remote-run');

    // the rollouts, opened in the Trace view, then their weights in the Advantages view
    await page.getByRole('button', { name: 'Open in Trace and Advantages' }).click();
    await until(
      'the trace tab',
      async () => (await page.getByRole('tab', { name: 'Trace' }).getAttribute('aria-selected')) === 'true',
      10_000,
    );
    await page.getByTestId('import-summary').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('import-summary').textContent()).toMatch(/agl-events/);
    const bundle = await client.json<unknown>('GET', `/api/runs/${id}/rollouts/bundle`);
    const trace = readAglEvents(bundle);
    expect(trace.rollouts.length).toBe(12);
    for (const r of trace.rollouts)
      await page.getByTestId(`rollout-row-${r.rolloutId}`).waitFor({ timeout: 30_000 });
    await screenshot(page, 'remote-trace');

    await page.getByRole('tab', { name: 'Advantages' }).click();
    // the trainer's view under the link's settings (the rest at their defaults, as the page has them)
    const trainerView = computeTrainerView({
      rollouts: trace.rollouts,
      options: {
        advEstimator: 'rloo',
        policyLossMode: 'vanilla',
        lossAggMode: 'seq-mean-token-mean',
        enableRolloutLevelAdvantage: false,
      },
    });
    // the page shows weights in its default convention (the push −∂L/∂logπ); core's are ∂L/∂logπ
    const sign = getWeightSign(DEFAULT_WEIGHT_SIGN);
    for (const [i, r] of trace.rollouts.entries()) {
      const cell = page.getByTestId(`rollout-weight-${r.rolloutId}`).last();
      await cell.waitFor({ timeout: 30_000 });
      expect(Number(await cell.getAttribute('data-value'))).toBeCloseTo(
        signed(trainerView.selected.rolloutSums[i] ?? 0, sign),
        6,
      );
    }

    // a reload finds the run in the list and the same run selected (its id is in the URL)
    await page.reload();
    await page.getByRole('tab', { name: 'Remote' }).click();
    await page.getByTestId('runs').waitFor({ timeout: 60_000 });
    expect(await page.locator(`[data-testid=runs] tr[data-run="${id}"]`).count()).toBe(1);
    await until(
      'the run view after reload',
      async () => (await page.getByTestId('run-view').getAttribute('data-run')) === id,
      30_000,
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('stops a run from its view', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await openRemote(page);
    const form = page.getByTestId('template-form');
    await form.getByLabel('Steps').fill('200');
    await form.getByRole('button', { name: 'Submit' }).click();
    const view = page.getByTestId('run-view');
    await until('running', async () => (await view.getAttribute('data-state')) === 'running', 180_000);
    await view.getByRole('button', { name: 'Stop' }).click();
    await until('stopped', async () => (await view.getAttribute('data-state')) === 'stopped', 120_000);
    await view.getByRole('button', { name: 'Delete' }).waitFor();
    await page.close();
  });

  it('without a valid token it says what is wrong', async () => {
    const page = await browser.newPage();
    await page.goto(`${gw.url}/?token=not-the-token`);
    await page.getByRole('tab', { name: 'Remote' }).click();
    const conn = page.getByTestId('remote-conn');
    await until('an error', async () => (await conn.getAttribute('data-state')) === 'error', 30_000);
    expect(await conn.textContent()).toMatch(/^wrong token/);
    await page.close();
  });
});
