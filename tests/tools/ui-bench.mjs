#!/usr/bin/env node
// Measures how fast the page answers a loss-mode toggle: builds the app, serves it, loads a trace (the first
// bundled sample, or the JSONL file given as argument) and times, in the page, from the select's change event to
// the frame that shows the new per-rollout weights (the panel names the loss mode of the result it shows).
// Also reports the longest main-thread task seen meanwhile. With a file, each figure is printed against the target
// and the figure measured before for its size class (bench:core's batch, or a trace over 300 MiB).
// Usage: npm run bench:ui [-- trace.jsonl]
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { chromium } from 'playwright-core';
import { build, preview } from 'vite';
import { chromiumArgs, chromiumPath } from './chromium.mjs';

const file = process.argv[2];

// What the page is held to on a big trace, and what it measured before the work on it (one 2-core machine, median
// of 10 toggles): bench:core's 8.53M-token batch (68 MB of JSONL), and a trace of about 600 MiB.
const TARGETS = {
  batch: { label: '8.53M-token batch', importMs: 1000, toggleMs: 100, taskMs: 50 },
  big: { label: '600 MiB trace', importMs: null, toggleMs: 200, taskMs: null },
};
const BEFORE = {
  batch: { importMs: '1,760', toggleMs: '120–126', taskMs: '50–59' },
  big: { importMs: null, toggleMs: '1,490', taskMs: '521' },
};
const sizeClass = file ? (statSync(file).size > 300 * 2 ** 20 ? 'big' : 'batch') : null;
/** ' (target ≤ T ms; before: B ms)' for one figure of the file's size class, or '' */
function against(key, ms) {
  if (!sizeClass) return '';
  const t = TARGETS[sizeClass][key];
  const b = BEFORE[sizeClass][key];
  if (t === null && b === null) return '';
  const verdict = t === null ? '' : ms <= t ? ' met' : ' NOT met';
  return ` (${TARGETS[sizeClass].label}: target ${t === null ? '—' : `≤ ${t} ms`}${verdict}; before: ${b ?? '—'} ms)`;
}
await build({ logLevel: 'warn' });
const server = await preview({ preview: { host: '127.0.0.1', port: 0 }, logLevel: 'warn' });
// policy_loss.loss_mode vanilla: the aggregation control chooses the loss mode
const url = `http://127.0.0.1:${server.httpServer.address().port}/#tab=advantages&pl=vanilla`;
const browser = await chromium.launch({
  executablePath: chromiumPath(),
  args: chromiumArgs(),
  headless: true,
});
try {
  // start-up: from navigation to the first sample's token chips on screen
  const first = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const s0 = Date.now();
  await first.goto(url.replace('#tab=advantages&pl=vanilla', ''));
  await first.getByTestId('call-tokens').locator('.tok').first().waitFor({ timeout: 60_000 });
  console.log(`start-up to first token chips: ${Date.now() - s0} ms`);
  await first.close();
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(url);
  await page.getByTestId('import-summary').waitFor({ timeout: 60_000 });
  if (file) {
    const t0 = Date.now();
    // A path lets Chromium read the file itself (playwright refuses in-memory buffers over 50 MB).
    await page.getByTestId('trace-file').setInputFiles(file);
    // The summary names the file once it is imported (the file-link note names it too, so the wait is scoped).
    await page
      .getByTestId('import-summary')
      .getByText(basename(file), { exact: true })
      .waitFor({ timeout: 120_000 });
    await page.locator('[data-testid^="rollout-weight-"]').first().waitFor({ timeout: 120_000 });
    const importMs = Date.now() - t0;
    console.log(
      `import + first compute of ${basename(file)}: ${importMs} ms${against('importMs', importMs)}`,
    );
  }
  await page.locator('[data-testid^="rollout-weight-"]').first().waitFor({ timeout: 60_000 });
  const summary = await page.getByTestId('import-summary').textContent();
  const tokens = await page.getByTestId('adv-main').getAttribute('data-tokens');
  console.log(`${summary} · ${tokens} response tokens`);
  const result = await page.evaluate(async () => {
    const longTasks = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) longTasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: false });
    const select = [...document.querySelectorAll('label')].find((l) => l.textContent === 'Loss aggregation');
    const el = document.getElementById(select.htmlFor);
    const modes = [...el.options].map((o) => o.value);
    const shown = () => document.querySelector('[data-testid="adv-main"]')?.getAttribute('data-result-loss');
    const times = [];
    for (let k = 0; k < modes.length * 2; k++) {
      const mode = modes[(k + 1) % modes.length];
      const t0 = performance.now();
      const setter = Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set;
      setter.call(el, mode);
      el.dispatchEvent(new Event('change', { bubbles: true }));
      let frames = 0;
      for (;;) {
        await new Promise((r) => requestAnimationFrame(r));
        frames++;
        if (shown() === mode) break;
        if (performance.now() - t0 > 30_000) break;
      }
      times.push({ mode, ms: performance.now() - t0, frames });
    }
    return { times, longest: Math.max(0, ...longTasks) };
  });
  for (const t of result.times) console.log(`toggle → ${t.mode}: ${t.ms.toFixed(1)} ms (${t.frames} frames)`);
  const ms = result.times.map((t) => t.ms).sort((a, b) => a - b);
  const med = ms[Math.floor(ms.length / 2)];
  console.log(`median toggle ${med.toFixed(1)} ms${against('toggleMs', med)}`);
  console.log(`longest main-thread task ${result.longest.toFixed(0)} ms${against('taskMs', result.longest)}`);
} finally {
  await browser.close();
  await server.close();
}
