#!/usr/bin/env node
// Measures how fast the page answers a loss-mode toggle: builds the app, serves it, loads a trace (the first
// bundled sample, or the JSONL file given as argument) and times, in the page, from the select's change event to
// the frame that shows the new per-rollout weights (the panel names the loss mode of the result it shows).
// Then the same for advantage-estimator changes (GRPO and the next estimators the trace can feed). Also reports
// the longest main-thread task seen meanwhile. With a file, each figure is printed against the target
// and the figure measured before for its size class (bench:core's batch, or a trace over 300 MiB).
// Usage: npm run bench:ui [-- trace.jsonl]
import { statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename } from 'node:path';
import { chromium } from 'playwright-core';
import { build, preview } from 'vite';
import { chromiumArgs, chromiumPath } from './chromium.mjs';

const file = process.argv[2];

// What the page is held to on a big trace, and what it measured before the work on it (one 2-core machine, median
// of 10 toggles): bench:core's 8.53M-token batch (68 MB of JSONL), and a trace of about 600 MiB.
const TARGETS = {
  batch: { label: '8.53M-token batch', importMs: 1000, toggleMs: 100, estimatorMs: 100, taskMs: 50 },
  big: { label: '600 MiB trace', importMs: null, toggleMs: 200, estimatorMs: 200, taskMs: null },
};
const BEFORE = {
  batch: { importMs: '1,760', toggleMs: '120–126', estimatorMs: null, taskMs: '50–59' },
  big: { importMs: null, toggleMs: '1,490', estimatorMs: null, taskMs: '521' },
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
/** The machine's 1-minute load average (a shared machine's neighbours slow every figure). */
const load = () => loadavg()[0].toFixed(2);
console.log(`load average at start: ${load()}`);
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
    const main = () => document.querySelector('[data-testid="adv-main"]');
    /** Sets the select labelled `label` to each of `values` twice round, timing change → the frame showing it. */
    async function toggles(label, attr, pick) {
      const lab = [...document.querySelectorAll('label')].find((l) => l.textContent === label);
      const el = document.getElementById(lab.htmlFor);
      const values = pick([...el.options].filter((o) => !o.disabled).map((o) => o.value));
      const times = [];
      for (let k = 0; k < values.length * 2; k++) {
        const value = values[(k + 1) % values.length];
        const t0 = performance.now();
        const setter = Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set;
        setter.call(el, value);
        el.dispatchEvent(new Event('change', { bubbles: true }));
        let frames = 0;
        for (;;) {
          await new Promise((r) => requestAnimationFrame(r));
          frames++;
          if (main()?.getAttribute(attr) === value) break;
          if (performance.now() - t0 > 30_000) break;
        }
        times.push({ value, ms: performance.now() - t0, frames });
      }
      return times;
    }
    const loss = await toggles('Loss aggregation', 'data-result-loss', (v) => v);
    const est = await toggles('Advantage estimator', 'data-result-estimator', (v) => [
      'grpo',
      ...v.filter((x) => x !== 'grpo').slice(0, 2),
    ]);
    return { loss, est, longest: Math.max(0, ...longTasks) };
  });
  const median = (xs) => {
    const ms = xs.map((t) => t.ms).sort((a, b) => a - b);
    return ms[Math.floor(ms.length / 2)];
  };
  for (const t of result.loss) console.log(`toggle → ${t.value}: ${t.ms.toFixed(1)} ms (${t.frames} frames)`);
  const med = median(result.loss);
  console.log(`median toggle ${med.toFixed(1)} ms${against('toggleMs', med)}`);
  for (const t of result.est)
    console.log(`estimator → ${t.value}: ${t.ms.toFixed(1)} ms (${t.frames} frames)`);
  const medEst = median(result.est);
  console.log(`median estimator toggle ${medEst.toFixed(1)} ms${against('estimatorMs', medEst)}`);
  console.log(`longest main-thread task ${result.longest.toFixed(0)} ms${against('taskMs', result.longest)}`);
  console.log(`load average at end: ${load()}`);
} finally {
  await browser.close();
  await server.close();
}
