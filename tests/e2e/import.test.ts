/**
 * The page's import path under bad input: duplicate rollout ids stay apart, incomplete rollouts are marked and
 * can be left out, a trace with nothing to train on says so, and the page stays usable after an import fails.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseTraceText, toAglEventsBundle } from '../../src/core/trace/io';
import { launch, screenshot } from './browser';

const sampleJsonl = readFileSync(join('public', 'samples', 'search-scripted.jsonl'), 'utf8');
const lines = sampleJsonl.trim().split('\n');

async function load(page: Page, name: string, text: string): Promise<void> {
  await page
    .getByTestId('trace-file')
    .setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(text) });
}

describe('the page imports bad files and stays usable', () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  beforeAll(async () => {
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(inject('baseUrl'));
    await page.getByTestId('import-summary').waitFor({ timeout: 30_000 });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('keeps rollouts with the same id apart: renamed, reported, selectable one by one', async () => {
    await load(page, 'twice.jsonl', `${lines[0]}\n${lines[0]}\n${lines[1]}\n`);
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('twice.jsonl');
    expect(await page.getByTestId('renamed-rollouts').textContent()).toContain(
      '1 duplicate rollout id renamed',
    );
    const id = JSON.parse(lines[0]).rollout_id as string;
    await page.getByTestId(`rollout-row-${id}#2`).first().click();
    await expect
      .poll(() => page.getByTestId(`rollout-row-${id}#2`).first().getAttribute('aria-selected'))
      .toBe('true');
    expect(await page.getByTestId(`rollout-row-${id}`).first().getAttribute('aria-selected')).toBe('false');
    expect((await page.getByTestId('import-issue').allTextContents()).join('\n')).toContain(
      `shown as "${id}#2"`,
    );
  });

  it('marks the rollouts an unreadable event hurt, and leaves them out on request', async () => {
    const rollouts = parseTraceText(sampleJsonl).rollouts.slice(0, 3);
    const events = toAglEventsBundle(rollouts).rollouts.flatMap((e) =>
      (e.events as object[]).map((x) => JSON.stringify(x)),
    );
    const cut = events.findIndex((t) => t.includes(rollouts[1].rolloutId));
    events[cut] = events[cut].slice(0, 150);
    await load(page, 'events.jsonl', `${events.join('\n')}\n`);
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('events.jsonl');
    expect(await page.getByTestId('import-summary').textContent()).toContain('3 rollouts');
    expect(await page.getByTestId('incomplete-rollouts').textContent()).toContain('1 incomplete rollout');
    expect(await page.locator('[data-incomplete]').count()).toBeGreaterThan(0);
    await page.getByTestId('exclude-incomplete').check();
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('2 rollouts');
    await page.getByTestId('exclude-incomplete').uncheck();
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('3 rollouts');
    await screenshot(page, 'import-incomplete');
  });

  it('says why a trace has nothing to train on', async () => {
    await load(
      page,
      'rewards.jsonl',
      '{"rollout_id": "a", "data_id": "t", "calls": [], "final_reward": 1}\n',
    );
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('rewards.jsonl');
    expect(await page.getByTestId('nothing-to-train').textContent()).toContain(
      'none of its 1 rollouts made a call',
    );
  });

  it('after a file that is no trace at all, the next import works', async () => {
    await load(page, 'junk.bin', 'this is not a trace\n\u0000\u0001');
    await expect.poll(() => page.getByTestId('import-error').textContent()).toContain('unknown trace format');
    await load(page, 'good.jsonl', sampleJsonl);
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('good.jsonl');
    await page.getByTestId('call-tokens').locator('.tok').first().waitFor();
    expect(errors).toEqual([]);
  });
});
