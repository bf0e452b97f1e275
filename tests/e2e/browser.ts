import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { chromiumArgs, chromiumPath } from '../tools/chromium.mjs';

/** Launches Debian's Chromium; `webgpu: false` leaves out --enable-unsafe-webgpu, so no adapter is exposed. */
export async function launch(opts: { webgpu?: boolean } = {}): Promise<Browser> {
  const args = chromiumArgs().filter((a) => opts.webgpu !== false || a !== '--enable-unsafe-webgpu');
  return chromium.launch({ executablePath: chromiumPath(), args, headless: true });
}

/** Saves a full-page screenshot under test-results/e2e/ (a test artifact, ignored by git). */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = join('test-results', 'e2e');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
