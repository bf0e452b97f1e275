import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch, screenshot } from './browser';

describe('app shell in Chromium', () => {
  let browser: Browser;
  const baseUrl = inject('baseUrl');
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('shows the WebGPU status line and the six tabs', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const res = await page.goto(baseUrl);
    expect(res?.headers()['cross-origin-opener-policy']).toBe('same-origin');
    expect(res?.headers()['cross-origin-embedder-policy']).toBe('require-corp');
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    const status = page.getByTestId('gpu-status');
    await expect.poll(() => status.getAttribute('data-available'), { timeout: 30_000 }).toBe('true');
    const text = await status.textContent();
    // Debian Chromium's WebGPU runs on its bundled SwiftShader.
    expect(text).toMatch(/^WebGPU: \S+ \/ \S+/);
    expect(text).toMatch(/software fallback|hardware/);
    expect(text).toMatch(/storage binding \d+ (MiB|KiB)/);
    const tabs = page.getByRole('tab');
    expect(await tabs.allTextContents()).toEqual([
      'Trace',
      'Advantages',
      'Train',
      'Remote',
      'Models',
      'Scheduling',
    ]);
    await screenshot(page, 'shell');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('reproduces the selected tab from a copied URL', async () => {
    const page = await browser.newPage();
    await page.goto(baseUrl);
    await page.getByRole('tab', { name: 'Train' }).click();
    await expect.poll(() => page.url()).toContain('tab=train');
    const copied = page.url();
    const second = await browser.newPage();
    await second.goto(copied);
    await expect
      .poll(() => second.getByRole('tab', { name: 'Train' }).getAttribute('aria-selected'))
      .toBe('true');
    expect(await second.getByRole('tabpanel').getByRole('heading', { level: 2 }).first().textContent()).toBe(
      'Run config',
    );
    // Arrow keys move between tabs and update the URL too.
    await second.getByRole('tab', { name: 'Train' }).press('ArrowRight');
    await expect.poll(() => second.url()).toContain('tab=remote');
    await page.close();
    await second.close();
  });

  it('says so when WebGPU is unavailable', async () => {
    const noGpu = await launch({ webgpu: false });
    try {
      const page = await noGpu.newPage();
      await page.goto(baseUrl);
      const status = page.getByTestId('gpu-status');
      await expect.poll(() => status.getAttribute('data-available'), { timeout: 30_000 }).toBe('false');
      expect(await status.textContent()).toBe('WebGPU unavailable: running on the CPU engine');
    } finally {
      await noGpu.close();
    }
  });
});
