/**
 * The explorer reads right and looks right: the sign of the weights (the push −∂L/∂logπ by default, ∂L/∂logπ as a
 * choice), the layout at 1024×768 (no overlapping header boxes, nothing cut that tells rows apart), a chart of
 * hundreds of groups, the stale-result cue, the failed-import state, notes on bad links, exports, and the
 * keyboard rules of the trace view.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_TRAINER_OPTIONS, type TrainerOptions } from '../../src/core/pipeline/options';
import { getWeightSign, signed, type WeightSignName } from '../../src/core/pipeline/sign';
import { computeTrainerView } from '../../src/core/pipeline/trainer';
import { toJsonlTrace } from '../../src/core/trace/io';
import type { Rollout } from '../../src/core/trace/types';
import { combineTraces, parseTrace } from '../../src/ui/lab/pipeline';
import { launch, screenshot } from './browser';

const sampleDir = join('public', 'samples');
const index = JSON.parse(readFileSync(join(sampleDir, 'index.json'), 'utf8'));
const first = index.samples[0];
/** the page's default sample, its files read and combined as the page does, and as one JSONL file */
const defaultRollouts: Rollout[] = combineTraces(
  (first.files ?? [first.file]).map((f: string) => ({
    name: f,
    trace: parseTrace(readFileSync(join(sampleDir, f), 'utf8'), f, () => {}).trace,
  })),
).rollouts;
const defaultText = toJsonlTrace(defaultRollouts);
const scriptedLines = readFileSync(join(sampleDir, 'coding-scripted.jsonl'), 'utf8').trim().split('\n');

/** Core's per-rollout total weights in a sign convention. */
function coreWeights(
  rollouts: Rollout[],
  sign: WeightSignName,
  o: Partial<TrainerOptions> = {},
): Map<string, number> {
  const view = computeTrainerView({ rollouts, options: { ...DEFAULT_TRAINER_OPTIONS, ...o } });
  const s = getWeightSign(sign);
  return new Map(rollouts.map((r, i) => [r.rolloutId, signed(view.selected.rolloutSums[i], s)]));
}

/** A trace of `groups` tasks × 2 rollouts made of the sample's records: rewards 1/0, 1/1 or 0/0 by task. */
function manyGroups(groups: number): string {
  const out: string[] = [];
  for (let g = 0; g < groups; g++)
    for (let k = 0; k < 2; k++) {
      const o = JSON.parse(scriptedLines[(g * 2 + k) % scriptedLines.length]);
      const reward = g % 3 === 0 ? 1 - k : g % 3 === 1 ? 1 : 0;
      o.rollout_id = `batch-7-task-${String(g).padStart(3, '0')}-attempt-${k}`;
      o.data_id = `batch-7-task-${String(g).padStart(3, '0')}`;
      o.sample_idx_in_step = g * 2 + k;
      o.final_reward = reward;
      o.rewards = (o.rewards ?? []).map((r: { value: number }) => ({ ...r, value: reward }));
      out.push(JSON.stringify(o));
    }
  return `${out.join('\n')}\n`;
}

/** RFC 4180 rows (quoted fields may hold commas, quotes and newlines). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  if (field || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

async function open(browser: Browser, hash: string, errors: string[], w = 1440, h = 900): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: w, height: h } });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${inject('baseUrl')}${hash}`);
  await page.getByTestId('import-summary').waitFor({ timeout: 30_000 });
  return page;
}

async function load(page: Page, name: string, text: string): Promise<void> {
  await page
    .getByTestId('trace-file')
    .setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(text) });
  await expect
    .poll(() => page.getByTestId('import-summary').textContent(), { timeout: 30_000 })
    .toContain(name);
}

async function shownWeights(page: Page, prefix = 'rollout-weight-'): Promise<Map<string, number>> {
  const cells = await page
    .locator(`[data-testid^="${prefix}"]`)
    .evaluateAll((els) => els.map((e) => [e.getAttribute('data-testid'), e.getAttribute('data-value')]));
  return new Map(cells.map(([id, v]) => [String(id).slice(prefix.length), Number(v)]));
}

function sameWeights(got: Map<string, number>, want: Map<string, number>): string[] {
  const bad: string[] = [];
  for (const [id, w] of got) {
    const e = want.get(id);
    if (e === undefined || Math.abs(e - w) > 1e-9 * Math.max(1, Math.abs(e))) bad.push(`${id}: ${w} vs ${e}`);
  }
  return got.size ? bad : ['no weights shown'];
}

/**
 * Pairs of boxes that overlap among the visible children of each element matching `containers`, and children
 * that stick out of their container; each as a readable string (empty: nothing overlaps).
 */
async function overlaps(page: Page, containers: string[]): Promise<{ checked: number; bad: string[] }> {
  return page.evaluate((sels) => {
    const bad: string[] = [];
    let checked = 0;
    const name = (e: Element) =>
      `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}"${(e.textContent ?? '').trim().slice(0, 24)}"`;
    for (const sel of sels)
      for (const c of document.querySelectorAll(sel)) {
        const cr = c.getBoundingClientRect();
        if (cr.width === 0) continue;
        const kids = [...c.children].filter((k) => {
          const r = k.getBoundingClientRect();
          return r.width > 0 && r.height > 0 && getComputedStyle(k).visibility !== 'hidden';
        });
        for (let i = 0; i < kids.length; i++) {
          const a = kids[i].getBoundingClientRect();
          checked++;
          if (a.right > cr.right + 1 || a.left < cr.left - 1)
            bad.push(`${sel}: ${name(kids[i])} sticks out of ${name(c)}`);
          for (let j = i + 1; j < kids.length; j++) {
            const b = kids[j].getBoundingClientRect();
            const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
            const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
            if (w > 1 && h > 1) bad.push(`${sel}: ${name(kids[i])} overlaps ${name(kids[j])}`);
          }
        }
      }
    return { checked, bad };
  }, containers);
}

/**
 * Elements matching `sel` whose text does not fit their box: cut (hidden overflow) or spilling over its
 * neighbours (visible overflow). The text's own extent (a Range over it) must lie within the element's box.
 */
async function clipped(page: Page, sel: string): Promise<{ n: number; cut: string[]; texts: string[] }> {
  return page.evaluate((s) => {
    const els = [...document.querySelectorAll(s)].filter((e) => (e as HTMLElement).offsetWidth > 0);
    const cut = els
      .filter((e) => {
        const box = e.getBoundingClientRect();
        const range = document.createRange();
        range.selectNodeContents(e);
        const t = range.getBoundingClientRect();
        return (
          e.scrollWidth > e.clientWidth + 1 ||
          t.right > box.right + 1 ||
          t.left < box.left - 1 ||
          t.bottom > box.bottom + 1
        );
      })
      .map((e) => (e.textContent ?? '').trim());
    return { n: els.length, cut, texts: els.map((e) => (e.textContent ?? '').trim()) };
  }, sel);
}

describe('the explorer reads right and looks right', () => {
  let browser: Browser;
  const errors: string[] = [];
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    expect(errors).toEqual([]);
  });

  it('shows the push −∂L/∂logπ by default (successes positive), ∂L/∂logπ on request, named in both', async () => {
    const page = await open(browser, '#tab=advantages', errors);
    const push = coreWeights(defaultRollouts, 'push');
    await expect.poll(async () => sameWeights(await shownWeights(page), push)).toEqual([]);
    // the default sample shows non-zero weights, and a rewarded rollout's push is positive
    const shown = await shownWeights(page);
    const rewarded = defaultRollouts.filter((r) => r.finalReward === 1 && (push.get(r.rolloutId) ?? 0) !== 0);
    expect(rewarded.length).toBeGreaterThan(0);
    for (const r of rewarded) expect(shown.get(r.rolloutId)).toBeGreaterThan(0);
    expect(await page.locator('.rhead').first().textContent()).toContain('push');
    expect(await page.locator('#rollout-weights-title').textContent()).toContain('push −∂L/∂logπ');
    await page.getByLabel('Weights as', { exact: true }).selectOption('grad');
    const grad = coreWeights(defaultRollouts, 'grad');
    await expect.poll(async () => sameWeights(await shownWeights(page), grad)).toEqual([]);
    for (const r of rewarded) expect((await shownWeights(page)).get(r.rolloutId)).toBeLessThan(0);
    await expect.poll(() => page.url()).toContain('sign=grad');
    expect(await page.locator('#rollout-weights-title').textContent()).toContain('∂L/∂logπ');
    expect(await page.locator('#rollout-weights-title').textContent()).not.toContain('push');
    // the trace view's legend names its ends from the sign: blue (reinforced) at the negative end under ∂L/∂logπ
    await page.getByRole('tab', { name: 'Trace' }).click();
    const legend = page.getByTestId('legend');
    await expect.poll(() => legend.textContent()).toMatch(/reinforced.*suppressed/);
    expect(await page.getByLabel('Color tokens by', { exact: true }).inputValue()).toBe('weight');
    await page.getByLabel('Weights as', { exact: true }).selectOption('push');
    await expect.poll(() => legend.textContent()).toMatch(/suppressed.*reinforced/);
    await expect.poll(() => page.url()).not.toContain('sign=');
    await page.close();
  });

  it('compares with the other reference stack on request, and says why a setting cannot be compared', async () => {
    const page = await open(browser, '#tab=advantages&stack=verl-0.9.0&adv=reinforce_plus_plus', errors);
    const panel = page.getByTestId('stack-diff');
    await expect.poll(() => panel.textContent()).toContain('verl 0.9.0');
    await page.getByTestId('stack-diff-compute').click();
    await expect
      .poll(() => page.getByTestId('stack-diff-counts').textContent())
      .toMatch(/\d+ rollouts, \d+ calls/);
    expect(await panel.textContent()).toContain('lab.reference_stack');
    // token-sum exists only on verl 0.9.0: the page keeps it there and says the other stack lacks it
    await page.getByLabel('Policy loss', { exact: true }).selectOption('vanilla');
    await page.getByLabel('Loss aggregation', { exact: true }).selectOption('token-sum');
    await expect.poll(() => page.url()).toContain('agg=token-sum');
    await page.getByTestId('stack-diff-compute').click();
    await expect
      .poll(() => page.getByTestId('stack-diff-message').textContent())
      .toMatch(/token-sum exists only on reference stack verl-0\.9\.0/);
    await page.close();
  });

  it('says why every weight is 0 when each group’s rollouts got one reward', async () => {
    // every group of this sample succeeds twice: GRPO has nothing to prefer
    const page = await open(browser, '#tab=advantages&sample=search-scripted', errors);
    const note = page.getByTestId('zero-weights-note');
    await expect
      .poll(() => note.textContent())
      .toMatch(
        /^Every weight is 0: in each of the \d+ groups all rollouts got the same reward \(1\), so grpo/,
      );
    await page.getByRole('tab', { name: 'Trace' }).click();
    expect(await page.getByTestId('zero-weight-note').textContent()).toMatch(
      /Every weight of this rollout is 0: its 2 rollouts all got reward 1, so grpo gives each the advantage 0/,
    );
    // the default sample has none: its groups mix successes and failures
    await page.getByLabel('Sample', { exact: true }).selectOption(first.name);
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain(first.name);
    await page.getByRole('tab', { name: 'Advantages' }).click();
    await page.locator('[data-testid^="rollout-weight-"]').first().waitFor();
    expect(await page.getByTestId('zero-weights-note').count()).toBe(0);
    await page.close();
  });

  it('shows what a toggle moved: the previous values as ghosts and a Δ column', async () => {
    const page = await open(browser, '#tab=advantages', errors);
    await page.locator('[data-testid^="rollout-weight-"]').first().waitFor();
    expect(await page.locator('[data-testid^="rollout-delta-"]').count()).toBe(0);
    const before = coreWeights(defaultRollouts, 'push');
    await page.getByLabel('Policy loss', { exact: true }).selectOption('vanilla');
    const after = coreWeights(defaultRollouts, 'push', { lossMode: 'token-mean' });
    await expect.poll(async () => sameWeights(await shownWeights(page), after)).toEqual([]);
    expect(await page.getByTestId('change-note').textContent()).toContain(
      'policy loss per_rollout_mean → vanilla',
    );
    const deltas = await page
      .locator('[data-testid^="rollout-delta-"]')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-testid'), e.textContent]));
    expect(deltas.length).toBe(defaultRollouts.length);
    let moved = 0;
    for (const [id, text] of deltas) {
      const r = String(id).slice('rollout-delta-'.length);
      const d = (after.get(r) ?? 0) - (before.get(r) ?? 0);
      if (d === 0) expect(text).toBe('·');
      else {
        moved++;
        expect(Math.abs(Number(String(text).replace(/−/g, '-').replace('+', '')) - d)).toBeLessThan(
          Math.abs(d) * 1e-2,
        );
      }
    }
    expect(moved).toBeGreaterThan(0);
    expect(await page.getByTestId('hist-ghost').count()).toBe(2);
    expect(await page.getByTestId('group-ghost').count()).toBeGreaterThan(0);
    await page.close();
  });

  for (const tab of ['trace', 'advantages'] as const)
    it(`lays out the ${tab} view at 1024×768 without overlapping or cut headers`, async () => {
      const page = await open(browser, `#tab=${tab}`, errors, 1024, 768);
      await page.locator('[data-testid^="rollout-weight-"]').first().waitFor();
      const containers = [
        '.header',
        '.importbar',
        '.tablist',
        '.rhead',
        '.card-head',
        '.toolbar',
        '.stepper',
      ];
      if (tab === 'advantages') containers.push('.mhead', '.chart-tools');
      const o = await overlaps(page, containers);
      expect(o.bad).toEqual([]);
      expect(o.checked).toBeGreaterThan(tab === 'trace' ? 20 : 30);
      // the status line is one line beside the title
      const box = async (sel: string) =>
        (await page.locator(sel).first().boundingBox()) ?? { x: 0, y: 0, width: 0, height: 99 };
      const [h1, gpu] = [await box('.header h1'), await box('[data-testid="gpu-status"]')];
      expect(gpu.height).toBeLessThan(
        1.6 *
          (await page
            .locator('.gpu-status')
            .evaluate((e) => parseFloat(getComputedStyle(e).lineHeight) || 17)),
      );
      expect(Math.abs(gpu.y + gpu.height / 2 - (h1.y + h1.height / 2))).toBeLessThan(8);
      // column headers are whole
      const heads = await clipped(page, '.rhead > span');
      expect(heads.n).toBeGreaterThan(4);
      expect(heads.cut).toEqual([]);
      // and so are the merge cells (rows · breaks), which used to run into the call stepper
      const merge = await clipped(page, '.rrow:not(.rhead) .c-merge');
      expect(merge.n).toBeGreaterThan(5);
      expect(merge.cut).toEqual([]);
      if (tab === 'advantages') {
        // every loss mode's name is whole and the names differ
        const modes = await clipped(page, '[data-testid="mode-head"]');
        expect(modes.n).toBe(5);
        expect(modes.cut).toEqual([]);
        expect(new Set(modes.texts).size).toBe(5);
      }
      // ids: the part that tells them apart is whole in every visible row, the full id in the tooltip
      const ids = await page.locator('.rrow:not(.rhead) .c-id').evaluateAll((cells) =>
        cells.map((c) => {
          const rest = c.querySelector('.id-rest') as HTMLElement | null;
          const cr = c.getBoundingClientRect();
          const rr = rest?.getBoundingClientRect();
          return {
            full: c.getAttribute('title') ?? '',
            rest: rest?.textContent ?? '',
            whole: !!rest && !!rr && rr.right <= cr.right + 1 && rest.scrollWidth <= rest.clientWidth + 1,
          };
        }),
      );
      expect(ids.length).toBeGreaterThan(5);
      for (const i of ids) {
        expect(i.whole, i.full).toBe(true);
        expect(i.full.endsWith(i.rest)).toBe(true);
      }
      expect(new Set(ids.map((i) => i.rest)).size).toBe(new Set(ids.map((i) => i.full)).size);
      if (tab === 'trace') {
        // the rollout table ends before the call stepper starts
        const list = await box('.rolloutlist');
        const stepper = await box('[data-testid="call-stepper"]');
        expect(stepper.width).toBeGreaterThan(0);
        expect(list.x + list.width).toBeLessThanOrEqual(stepper.x);
      }
      await screenshot(page, `layout-${tab}-1024`);
      await page.close();
    });

  it('keeps a chart of 150 groups readable: one row per group, scrolled, sortable, with accessible names', async () => {
    const page = await open(browser, '#tab=advantages', errors);
    await load(page, 'many-groups.jsonl', manyGroups(150));
    const chart = page.getByTestId('group-chart');
    await expect.poll(() => chart.getAttribute('data-groups')).toBe('150');
    expect(await chart.getAttribute('aria-label')).toMatch(/150 groups/);
    const rows = chart.getByTestId('group-row');
    const boxes = async () =>
      rows.evaluateAll((els) =>
        els
          .map((e) => {
            const r = e.querySelector('.glabel')?.getBoundingClientRect();
            return r ? { top: r.top, bottom: r.bottom, h: r.height } : null;
          })
          .filter((r): r is { top: number; bottom: number; h: number } => r !== null)
          .sort((a, b) => a.top - b.top),
      );
    const b = await boxes();
    expect(b.length).toBeGreaterThan(10);
    expect(b.length).toBeLessThan(150); // windowed: not every row is in the DOM
    for (let i = 0; i < b.length; i++) {
      expect(b[i].h).toBeGreaterThanOrEqual(12);
      if (i > 0) expect(b[i].top).toBeGreaterThanOrEqual(b[i - 1].bottom - 0.5);
    }
    // the last group is reachable by scrolling
    await page.getByTestId('group-rows').evaluate((e) => {
      e.scrollTop = e.scrollHeight;
    });
    await expect.poll(() => chart.locator('[data-group="batch-7-task-149"]').count()).toBe(1);
    // sorted by net weight: descending
    await page.getByLabel('Sort', { exact: true }).selectOption('net');
    await page.getByTestId('group-rows').evaluate((e) => {
      e.scrollTop = 0;
    });
    const nets = await rows.evaluateAll((els) =>
      els
        .map((e) => [
          e.getBoundingClientRect().top,
          Number((e.querySelector('.gval')?.textContent ?? '').replace(/−/g, '-')),
        ])
        .sort((x, y) => x[0] - y[0])
        .map((x) => x[1]),
    );
    for (let i = 1; i < nets.length; i++) expect(nets[i]).toBeLessThanOrEqual(nets[i - 1]);
    // equal-reward groups (1/1, 0/0) are marked; every chart and strip has an accessible name
    expect(await chart.locator('.equal').count()).toBeGreaterThan(0);
    const names = await page
      .getByTestId('adv-main')
      .locator('[role="img"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
    expect(names.length).toBeGreaterThanOrEqual(4);
    for (const n of names) expect(n.length).toBeGreaterThan(10);
    await screenshot(page, 'many-groups');
    await page.close();
  });

  it('dims stale numbers and says what it recomputes while the worker works', async () => {
    const page = await open(browser, '#tab=advantages', errors);
    // a few hundred rollouts: retokenizing them takes the worker a while
    const lines = defaultText.trim().split('\n');
    const big: string[] = [];
    for (let k = 0; k < 25; k++)
      for (const l of lines) {
        const o = JSON.parse(l);
        o.rollout_id = `${o.rollout_id}-copy${k}`;
        big.push(JSON.stringify(o));
      }
    await load(page, 'big.jsonl', `${big.join('\n')}\n`);
    await page.locator('[data-testid^="rollout-weight-"]').first().waitFor();
    await page.getByTestId('adv-main').evaluate((el) => {
      const seen: { stale: boolean; note: string; opacity: number }[] = [];
      (window as unknown as { staleSeen: typeof seen }).staleSeen = seen;
      new MutationObserver(() => {
        const dim = el.querySelector('.stale-dim');
        seen.push({
          stale: el.getAttribute('data-stale') === 'true',
          note: el.querySelector('[data-testid="stale-note"]')?.textContent ?? '',
          opacity: dim ? Number(getComputedStyle(dim).opacity) : 1,
        });
      }).observe(el, { attributes: true, subtree: true, childList: true });
    });
    await page.getByLabel('Token source', { exact: true }).selectOption('retokenize');
    await expect
      .poll(() => page.getByTestId('adv-main').getAttribute('data-stale'), { timeout: 60_000 })
      .toBe('false');
    const seen = await page.evaluate(
      () =>
        (window as unknown as { staleSeen: { stale: boolean; note: string; opacity: number }[] }).staleSeen,
    );
    const staleStates = seen.filter((s) => s.stale);
    expect(staleStates.length).toBeGreaterThan(0);
    expect(staleStates.some((s) => /Recomputing for token source engine → retokenize/.test(s.note))).toBe(
      true,
    );
    expect(Math.min(...staleStates.map((s) => s.opacity))).toBeLessThan(0.7);
    expect(await page.getByTestId('stale-note').count()).toBe(0);
    expect(await page.locator('.stale-dim').count()).toBe(0);
    await page.close();
  });

  it('after a failed import marks the view as the previous trace’s, and says a file’s link cannot load it', async () => {
    const page = await open(browser, '', errors);
    await page.getByTestId('call-tokens').locator('.tok').first().waitFor();
    await page.getByTestId('trace-file').setInputFiles({
      name: 'junk.bin',
      mimeType: 'application/octet-stream',
      buffer: Buffer.from('no trace\n'),
    });
    await expect.poll(() => page.getByTestId('import-error').textContent()).toContain('junk.bin');
    expect(await page.getByTestId('import-error-shown').textContent()).toContain(first.name);
    const note = page.getByTestId('previous-trace-note');
    await expect.poll(() => note.textContent()).toContain('junk.bin could not be loaded');
    expect(await note.textContent()).toContain(`Shown below, unchanged: ${first.name}`);
    await screenshot(page, 'failed-import');
    // the next good import clears it; a file's view says its link cannot reproduce it and offers the numbers
    await load(page, 'mine.jsonl', defaultText);
    expect(await note.count()).toBe(0);
    const fileNote = page.getByTestId('file-link-note');
    await expect.poll(() => fileNote.textContent()).toContain('mine.jsonl is a local file');
    const download = page.waitForEvent('download');
    await fileNote.getByRole('button', { name: 'CSV' }).click();
    const csv = readFileSync(await (await download).path(), 'utf8')
      .trim()
      .split('\n');
    expect(csv[0]).toMatch(
      /^rollout_id,data_id,reward,state,calls,rows,"weight \(−∂L\/∂logπ, per_rollout_mean\)"/,
    );
    expect(csv).toHaveLength(defaultRollouts.length + 1);
    const push = coreWeights(defaultRollouts, 'push');
    for (const line of csv.slice(1)) {
      const f = line.split(',');
      expect(Math.abs(Number(f[6]) - (push.get(f[0]) ?? Number.NaN))).toBeLessThan(1e-12);
    }
    // a bundled sample's view has no such note
    await page.getByLabel('Sample', { exact: true }).selectOption(first.name);
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain(first.name);
    expect(await fileNote.count()).toBe(0);
    await page.close();
  });

  it('exports the view’s numbers as CSV and JSON', async () => {
    const page = await open(browser, '#tab=advantages&sign=grad', errors);
    await page.locator('[data-testid^="rollout-weight-"]').first().waitFor();
    const download = page.waitForEvent('download');
    await page.getByTestId('export-rollouts').getByRole('button', { name: 'JSON' }).click();
    const d = await download;
    expect(d.suggestedFilename()).toBe(`${first.name}-rollouts.json`);
    const j = JSON.parse(readFileSync(await d.path(), 'utf8'));
    expect(j.reference).toBe('Agent Lightning 1.0.x + verl 0.8.0');
    expect(j.sign.name).toBe('grad');
    expect(j.options.lossMode).toBe(DEFAULT_TRAINER_OPTIONS.lossMode);
    const grad = coreWeights(defaultRollouts, 'grad');
    expect(j.rollouts).toHaveLength(defaultRollouts.length);
    for (const r of j.rollouts) expect(r.weight).toBe(grad.get(r.rolloutId));
    // the trace view exports the shown call's tokens
    await page.getByRole('tab', { name: 'Trace' }).click();
    const tokens = page.waitForEvent('download');
    await page.getByTestId('export-tokens').getByRole('button', { name: 'CSV' }).click();
    const t = parseCsv(readFileSync(await (await tokens).path(), 'utf8'));
    expect(t[0].join(',')).toBe('position,id,text,gradient ∂L/∂logπ,advantage,log-prob (engine),loss mask');
    const ids = defaultRollouts[0].calls[0].responseTokenIds ?? [];
    expect(t.slice(1).map((row) => Number(row[1]))).toEqual(Array.from(ids));
    // token texts with newlines survive the quoting
    expect(t.slice(1).some((row) => row[2].includes('\n'))).toBe(true);
    await page.close();
  });

  it('names each setting of a bad link instead of falling back silently', async () => {
    const page = await open(
      browser,
      '#tab=advantages&pl=mean-of-nothing&sample=no-such-sample&r=no-such-rollout&c=two&frobnicate=1',
      errors,
    );
    const notes = page.getByTestId('url-notes');
    await expect.poll(() => page.getByTestId('url-note').count()).toBe(5);
    const text = await notes.textContent();
    expect(text).toMatch(
      /pl=mean-of-nothing.*must be one of vanilla, per_rollout_mean.*showing per_rollout_mean/,
    );
    expect(text).toMatch(/sample=no-such-sample names no bundled sample; showing/);
    expect(text).toMatch(/r=no-such-rollout names no rollout of this trace/);
    expect(text).toMatch(/c=two expects an integer/);
    expect(text).toMatch(/frobnicate=1 is not a setting/);
    // and the view is the one it says
    expect(await page.getByLabel('Policy loss', { exact: true }).inputValue()).toBe('per_rollout_mean');
    await screenshot(page, 'bad-link');
    await notes.getByRole('button', { name: 'Dismiss' }).click();
    expect(await notes.count()).toBe(0);
    // a good link has no note
    const good = await open(browser, '#tab=advantages&pl=vanilla&agg=token-mean', errors);
    await good.locator('[data-testid^="rollout-weight-"]').first().waitFor();
    expect(await good.getByTestId('url-notes').count()).toBe(0);
    await page.close();
    await good.close();
  });

  it('keeps the keyboard rules: ←/→ step calls from any control of the trace view, j/k unless typing', async () => {
    const multi = defaultRollouts.findIndex((r) => r.calls.length > 2);
    expect(multi).toBeGreaterThanOrEqual(0);
    const r = defaultRollouts[multi];
    const page = await open(browser, `#r=${encodeURIComponent(r.rolloutId)}`, errors);
    const pos = page.getByTestId('call-position');
    await expect.poll(() => pos.textContent()).toBe(`call 1 / ${r.calls.length}`);
    // the Call / Retokenization / Merge switch does not swallow the arrows
    await page.getByRole('button', { name: 'Merge', exact: true }).focus();
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => pos.textContent()).toBe(`call 2 / ${r.calls.length}`);
    expect(await page.getByRole('button', { name: 'Merge', exact: true }).getAttribute('aria-pressed')).toBe(
      'false',
    );
    await page.getByRole('button', { name: 'Call', exact: true }).click();
    // nor does a select, whose value stays
    const color = page.getByLabel('Color tokens by', { exact: true });
    await color.focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => pos.textContent()).toBe(`call 1 / ${r.calls.length}`);
    expect(await color.inputValue()).toBe('weight');
    // j/k with a select focused move between rollouts (no type-ahead)
    await page.keyboard.press('j');
    const next = defaultRollouts[multi + 1];
    await expect.poll(() => page.getByTestId('rollout-title').textContent()).toContain(next.rolloutId);
    expect(await color.inputValue()).toBe('weight');
    await page.keyboard.press('k');
    await expect.poll(() => page.getByTestId('rollout-title').textContent()).toContain(r.rolloutId);
    // …but not while typing in a text field
    await page.evaluate(() => {
      const input = document.createElement('input');
      input.type = 'text';
      input.id = 'typing-probe';
      document.querySelector('[data-testid="trace-detail"]')?.appendChild(input);
    });
    await page.locator('#typing-probe').focus();
    await page.keyboard.type('jj');
    await page.keyboard.press('ArrowRight');
    expect(await page.locator('#typing-probe').inputValue()).toBe('jj');
    expect(await page.getByTestId('rollout-title').textContent()).toContain(r.rolloutId);
    expect(await pos.textContent()).toBe(`call 1 / ${r.calls.length}`);
    await page.evaluate(() => document.getElementById('typing-probe')?.remove());
    // the token chips are ONE tab stop, and arrows move between tokens (not calls)
    const chips = page.getByTestId('call-tokens');
    await chips.locator('.tok').first().waitFor();
    expect(await chips.locator('.tok[tabindex="0"]').count()).toBe(1);
    expect(await chips.locator('.tok').count()).toBeGreaterThan(3);
    await chips.locator('.tok[tabindex="0"]').focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-i'))).toBe('2');
    expect(await chips.locator('.tok[tabindex="0"]').getAttribute('data-i')).toBe('2');
    expect(await pos.textContent()).toBe(`call 1 / ${r.calls.length}`);
    expect(await page.getByTestId('token-tooltip').textContent()).toContain('token 2');
    await page.keyboard.press('End');
    const n = r.calls[0].responseTokenIds?.length ?? 0;
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-i')))
      .toBe(String(n - 1));
    // Tab leaves the chips in one step
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('tok'))).toBe(false);
    // the merge view aligns both contexts and marks the first differing token on each side
    const broken = defaultRollouts.findIndex((x) => x.calls.length > 1 && x.rolloutId.includes('@'));
    await page.goto(
      `${inject('baseUrl')}#tv=merge&r=${encodeURIComponent(defaultRollouts[broken].rolloutId)}`,
    );
    const aligned = page.getByTestId('merge-aligned').first();
    await aligned.waitFor({ timeout: 30_000 });
    const marks = await aligned
      .locator('[data-first-diff="true"]')
      .evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().left)));
    expect(marks).toHaveLength(2);
    expect(Math.abs(marks[0] - marks[1])).toBeLessThanOrEqual(1);
    // the retokenization view has no colouring control
    await page.getByRole('button', { name: 'Retokenization', exact: true }).click();
    await page.getByTestId('retok-view').waitFor({ timeout: 30_000 });
    expect(await page.getByLabel('Color tokens by', { exact: true }).count()).toBe(0);
    expect(await page.getByTestId('legend').count()).toBe(0);
    await page.close();
  });
});
