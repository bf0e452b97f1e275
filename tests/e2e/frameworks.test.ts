/**
 * Other frameworks' files open in the page: a NeMo Gym rollout file shows which rollouts give no gradient and
 * why (its zero-variance groups), and a verl dump, which holds text only, is tokenized on import and its
 * retokenization view says which numbers that affects.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch } from './browser';

const dir = join('public', 'samples', 'frameworks');

async function load(page: Page, name: string): Promise<void> {
  await page
    .getByTestId('trace-file')
    .setInputFiles({ name, mimeType: 'application/json', buffer: readFileSync(join(dir, name)) });
  await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain(name);
}

describe('the page opens other frameworks’ files', () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  beforeAll(async () => {
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${inject('baseUrl')}#tab=trace`);
    await page.getByTestId('import-summary').waitFor({ timeout: 30_000 });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('NeMo Gym: a zero-variance group is listed with its rule, and the selected rollout says why', async () => {
    await load(page, 'nemo-gym-coding.jsonl');
    expect(await page.getByTestId('import-summary').textContent()).toContain('nemo-gym');
    const cell = page.getByTestId('no-rows-3-0');
    await expect.poll(() => cell.getAttribute('data-rule')).toBe('zero_variance_group');
    // a group whose rewards differ is not listed
    expect(await page.getByTestId('no-rows-0-0').count()).toBe(0);
    await page.getByTestId('rollout-row-3-0').click();
    await expect
      .poll(() => page.getByTestId('no-rows-note').textContent())
      .toMatch(/zero variance group at group task-3: all 2 rollouts of the group have reward 1/);
    expect(errors).toEqual([]);
  });

  it('verl: text only, tokenized at import, and the retokenization view lists what that affects', async () => {
    await load(page, 'verl-dump-instruction.jsonl');
    await page.getByTestId('view-switch').getByRole('button', { name: 'Retokenization' }).click();
    await expect
      .poll(() => page.getByTestId('retok-view').textContent())
      .toMatch(/the file recorded no token ids: qwen3 made them at import/);
    expect(await page.getByTestId('retok-affects').textContent()).toMatch(/importance ratios/);
    expect(errors).toEqual([]);
  });
});
