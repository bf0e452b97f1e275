import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { ALL_LOSS_MODES, effectiveWeights } from '../../src/core/algos/effectiveWeights';
import { toAglEventsBundle, toJsonlTrace } from '../../src/core/trace/io';
import type { Rollout } from '../../src/core/trace/types';
import { combineTraces, parseTrace } from '../../src/ui/lab/pipeline';
import { launch, screenshot } from './browser';

/** The first bundled sample (what the page opens with): its files, read and combined as the page does. */
function firstSample(): { name: string; rollouts: Rollout[] } {
  const index = JSON.parse(readFileSync(join('public', 'samples', 'index.json'), 'utf8'));
  const s = index.samples[0];
  const files: string[] = s.files ?? [s.file];
  const parts = files.map((f) => {
    const text = readFileSync(join('public', 'samples', f), 'utf8');
    return { name: f, trace: parseTrace(text, f, () => {}).trace };
  });
  return { name: s.name, rollouts: combineTraces(parts).rollouts };
}

const sample = firstSample();
const rollouts: Rollout[] = sample.rollouts;
/** The sample in our JSONL format (core's writer): what the hand-made files below are built from. */
const sampleJsonl = toJsonlTrace(rollouts);

/**
 * Core's per-rollout total weights on a trace, with the page's options spelled out here: engine ids, 8192/8192
 * length limits, normalize by std, and by default trajectory level, GRPO, rollout-level advantages.
 */
interface Choice {
  advEstimator: string;
  rolloutLevel: boolean;
  level: 'trajectory' | 'transition';
}
const DEFAULTS: Choice = { advEstimator: 'grpo', rolloutLevel: true, level: 'trajectory' };

function expectedWeights(
  rollouts: Rollout[],
  lossAggMode: (typeof ALL_LOSS_MODES)[number],
  choice: Choice = DEFAULTS,
): Map<string, number> {
  const { batch } = buildTrainingBatch(rollouts, {
    level: choice.level,
    maxPromptLength: 8192,
    maxResponseLength: 8192,
    padTokenId: 0,
    rewardFillnaValue: 0,
    tokenSource: 'engine',
  });
  const ew = effectiveWeights(batch, {
    advEstimator: choice.advEstimator,
    normAdvByStd: true,
    rolloutLevel: choice.rolloutLevel,
    lossAggMode,
  });
  const out = new Map<string, number>();
  for (const [i, r] of rollouts.entries()) out.set(r.rolloutId, ew.rolloutSums[i] ?? 0);
  return out;
}

/** Reads every rollout's displayed weight: text (6 significant digits) and the exact value. */
async function displayedWeights(page: Page): Promise<Map<string, { text: number; value: number }>> {
  const cells = await page
    .locator('[data-testid^="rollout-weight-"]')
    .evaluateAll((els) =>
      els.map((e) => [e.getAttribute('data-testid'), e.textContent, e.getAttribute('data-value')]),
    );
  const out = new Map<string, { text: number; value: number }>();
  for (const [id, text, value] of cells)
    out.set(String(id).slice('rollout-weight-'.length), {
      text: Number(String(text).replace('−', '-')),
      value: Number(value),
    });
  return out;
}

function close(a: number, b: number, rel: number): boolean {
  return Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b)) + 1e-12;
}

async function openPage(browser: Browser, url: string, errors: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.getByTestId('import-summary').waitFor({ timeout: 30_000 });
  return page;
}

describe('trace stepper and advantage explorer in Chromium', () => {
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

  /** Switches every loss mode and compares each rollout's displayed weight with core's number. */
  async function checkAllModes(page: Page, rs: Rollout[], choice: Choice = DEFAULTS) {
    const select = page.getByLabel('Loss aggregation', { exact: true });
    for (const mode of [...ALL_LOSS_MODES.slice(1), ALL_LOSS_MODES[0]]) {
      await select.selectOption(mode);
      const want = expectedWeights(rs, mode, choice);
      await expect
        .poll(
          async () => {
            const got = await displayedWeights(page);
            const bad: string[] = [];
            for (const [id, w] of want) {
              const g = got.get(id);
              if (!g || !close(g.value, w, 1e-9) || !close(g.text, w, 1e-5))
                bad.push(`${id}: ${g?.value} vs ${w}`);
            }
            return bad;
          },
          { timeout: 10_000 },
        )
        .toEqual([]);
      await expect
        .poll(() => page.url())
        .toContain(mode === 'token-mean' ? 'tab=advantages' : `loss=${mode}`);
      if (mode === 'token-mean') expect(page.url()).not.toContain('loss=');
    }
  }

  it('shows core’s per-rollout weights under every loss aggregation mode', async () => {
    const page = await openPage(browser, `${baseUrl}#tab=advantages`, errors);
    const select = page.getByLabel('Loss aggregation', { exact: true });
    const offered = await select
      .locator('option')
      .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(offered).toEqual([...ALL_LOSS_MODES]);
    // the first sample mixes successes and failures within groups, so the weights are not all zero
    expect(
      [...expectedWeights(rollouts, 'token-mean').values()].filter((w) => w !== 0).length,
    ).toBeGreaterThan(4);
    await checkAllModes(page, rollouts);
    // other estimator, merge level and rollout-level setting: still core's numbers
    await page.getByLabel('Advantage estimator', { exact: true }).selectOption('rloo');
    await page.getByLabel('Rollout-level advantage', { exact: true }).uncheck();
    await page.getByLabel('Aggregation level', { exact: true }).selectOption('transition');
    await checkAllModes(page, rollouts, { advEstimator: 'rloo', rolloutLevel: false, level: 'transition' });
    await select.selectOption('per_rollout_mean');
    await screenshot(page, 'advantages');
    await page.close();
  });

  it('steps through rollouts and calls with the keyboard and shows every quantity of a token', async () => {
    const page = await openPage(browser, baseUrl, errors);
    // the bundled sample opens at start-up, its rollouts listed and the first call's tokens shown
    expect(await page.getByTestId('import-summary').textContent()).toContain(`${rollouts.length} rollouts`);
    expect(await page.locator('[data-testid^="rollout-row-"]').count()).toBe(rollouts.length);
    await page.getByTestId('call-tokens').locator('.tok').first().waitFor();
    await screenshot(page, 'trace-call');
    // start on the first rollout with more than one call
    const multi = rollouts.findIndex((r) => r.calls.length > 1);
    expect(multi).toBeGreaterThanOrEqual(0);
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('k'); // on the first rollout: names it in the URL
    for (let i = 0; i < multi; i++) await page.keyboard.press('j');
    const r = rollouts[multi];
    await expect.poll(() => page.getByTestId('rollout-title').textContent()).toContain(r.rolloutId);
    expect(await page.getByTestId('call-position').textContent()).toBe(`call 1 / ${r.calls.length}`);
    await page.keyboard.press('ArrowRight');
    await expect
      .poll(() => page.getByTestId('call-position').textContent())
      .toBe(`call 2 / ${r.calls.length}`);
    await expect.poll(() => page.url()).toContain(`r=${encodeURIComponent(r.rolloutId)}`);
    expect(page.url()).toContain('c=1');
    await page.keyboard.press('ArrowLeft');
    await expect
      .poll(() => page.getByTestId('call-position').textContent())
      .toBe(`call 1 / ${r.calls.length}`);
    // j/k move between rollouts (k from the first one stays there)
    await page.keyboard.press('j');
    const next = rollouts[Math.min(multi + 1, rollouts.length - 1)];
    await expect.poll(() => page.getByTestId('rollout-title').textContent()).toContain(next.rolloutId);
    expect(await page.getByTestId('call-position').textContent()).toBe(`call 1 / ${next.calls.length}`);
    await page.keyboard.press('k');
    await expect.poll(() => page.getByTestId('rollout-title').textContent()).toContain(r.rolloutId);

    // hovering a chip shows its id, text and every quantity; focusing one does too
    const chip = page.getByTestId('call-tokens').locator('.tok').first();
    await chip.hover();
    const tip = page.getByTestId('token-tooltip');
    await tip.waitFor();
    const ids = r.calls[0].responseTokenIds;
    expect(ids).toBeDefined();
    const tipText = await tip.textContent();
    for (const q of ['effective weight', 'advantage', 'log-prob (engine)', 'loss mask'])
      expect(tipText).toContain(q);
    // the first chip of the first call is its first response token
    expect(tipText).toContain(`id ${ids![0]}`);
    await screenshot(page, 'trace-tooltip');
    await page.mouse.move(2, 2);
    await expect.poll(() => tip.count()).toBe(0);
    await chip.focus();
    await expect.poll(() => tip.count()).toBe(1);

    // the merge and retokenization views of the same rollout
    await page.getByText('Merge', { exact: true }).click();
    await page.getByTestId('merge-view').waitFor();
    expect(await page.getByTestId('merge-row').count()).toBeGreaterThan(0);
    await screenshot(page, 'trace-merge');
    await page.getByText('Retokenization', { exact: true }).click();
    await page.getByTestId('retok-view').waitFor({ timeout: 20_000 });
    await screenshot(page, 'trace-retok');
    // a sample whose calls retokenize differently: each differing span is listed with core's cause
    await page.getByLabel('Sample', { exact: true }).selectOption('coding-random');
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('coding-random');
    await expect.poll(() => page.getByTestId('retok-hunk').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    const causes = await page.locator('[data-testid="retok-hunk"] .cause').allTextContents();
    for (const c of causes)
      expect([
        'bpe_remerge',
        'template_rerender',
        'tool_call_rerender',
        'special_tokens',
        'whitespace',
      ]).toContain(c);
    await screenshot(page, 'trace-retok-diff');
    await page.close();
  });

  it('reproduces the whole view from a copied URL', async () => {
    const page = await openPage(browser, `${baseUrl}#tab=advantages`, errors);
    await page.getByLabel('Advantage estimator', { exact: true }).selectOption('rloo');
    await page.getByLabel('Rollout-level advantage', { exact: true }).uncheck();
    await page.getByLabel('Loss aggregation', { exact: true }).selectOption('seq-mean-token-mean');
    await page.getByLabel('Aggregation level', { exact: true }).selectOption('transition');
    await page.getByLabel('Clip ratio high', { exact: true }).fill('0.28');
    const target = rollouts[rollouts.length - 1];
    await page.getByTestId(`adv-rollout-${target.rolloutId}`).click();
    await page.getByRole('tab', { name: 'Trace' }).click();
    await page.getByLabel('Color tokens by', { exact: true }).selectOption('advantage');
    if (target.calls.length > 1) await page.getByRole('button', { name: 'Next call' }).click();
    const wantCall = target.calls.length > 1 ? 2 : 1;
    await expect.poll(() => page.url()).toContain('color=advantage');
    // the hash is written once per burst of changes: wait for the call change too, not only the colouring
    if (wantCall > 1) await expect.poll(() => page.url()).toContain(`c=${wantCall - 1}`);
    const copied = page.url();
    const weightsBefore = await displayedWeights(page);

    const second = await openPage(browser, copied, errors);
    await expect.poll(() => second.getByTestId('rollout-title').textContent()).toContain(target.rolloutId);
    expect(await second.getByTestId('call-position').textContent()).toBe(
      `call ${wantCall} / ${target.calls.length}`,
    );
    expect(await second.getByLabel('Color tokens by', { exact: true }).inputValue()).toBe('advantage');
    await expect
      .poll(async () => [...(await displayedWeights(second)).values()].map((w) => w.value))
      .toEqual([...weightsBefore.values()].map((w) => w.value));
    await second.getByRole('tab', { name: 'Advantages' }).click();
    expect(await second.getByLabel('Advantage estimator', { exact: true }).inputValue()).toBe('rloo');
    expect(await second.getByLabel('Rollout-level advantage', { exact: true }).isChecked()).toBe(false);
    expect(await second.getByLabel('Normalize by std', { exact: true }).isChecked()).toBe(true);
    expect(await second.getByLabel('Loss aggregation', { exact: true }).inputValue()).toBe(
      'seq-mean-token-mean',
    );
    expect(await second.getByLabel('Aggregation level', { exact: true }).inputValue()).toBe('transition');
    expect(await second.getByLabel('Token source', { exact: true }).inputValue()).toBe('engine');
    expect(await second.getByLabel('Clip ratio high', { exact: true }).inputValue()).toBe('0.28');
    await page.close();
    await second.close();
  });

  it('imports a malformed file: keeps the valid lines and reports each bad one', async () => {
    const page = await openPage(browser, baseUrl, errors);
    const lines = sampleJsonl.split('\n').filter((l) => l.trim());
    const good = JSON.parse(lines[0]);
    const lp = { ...good, rollout_id: 'bad-logprobs' };
    lp.calls = [
      { ...good.calls[0], response_log_probs: good.calls[0].response_token_ids.slice(1).map(() => -0.5) },
    ];
    const text = [
      lines[0],
      '{"rollout_id": "broken", ',
      JSON.stringify(lp),
      lines[1] ?? lines[0],
      'not json at all',
    ].join('\n');
    await page.getByTestId('trace-file').setInputFiles({
      name: 'malformed.jsonl',
      mimeType: 'application/json',
      buffer: Buffer.from(text),
    });
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('malformed.jsonl');
    expect(await page.getByTestId('import-summary').textContent()).toContain(`${lines[1] ? 2 : 2} rollouts`);
    const issues = await page.getByTestId('import-issue').allTextContents();
    expect(issues).toHaveLength(3);
    expect(issues[0]).toMatch(/^line 2\b.*JSON/);
    expect(issues[1]).toMatch(/^line 3\b.*response_log_probs/);
    expect(issues[2]).toMatch(/^line 5\b.*JSON/);
    await screenshot(page, 'import-errors');
    await page.close();
  });

  it('imports dropped Agent Lightning events, and a large file with a progress bar', async () => {
    const page = await openPage(browser, baseUrl, errors);
    const bundle = JSON.stringify(toAglEventsBundle(rollouts));
    // dropped on the import bar, as a user drags a file in
    const dataTransfer = await page.evaluateHandle((text) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], 'events.json', { type: 'application/json' }));
      return dt;
    }, bundle);
    await page.getByRole('region', { name: 'Trace source' }).dispatchEvent('drop', { dataTransfer });
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('events.json');
    expect(await page.getByTestId('import-summary').textContent()).toContain(
      `agl-events · ${rollouts.length} rollouts`,
    );
    await page.getByTestId('call-tokens').locator('.tok').first().waitFor();

    // ~6 MB of our JSONL: the sample's lines again and again under fresh rollout ids
    const lines = sampleJsonl.split('\n').filter((l) => l.trim());
    const copies = Math.ceil((6 << 20) / sampleJsonl.length);
    const big: string[] = [];
    for (let k = 0; k < copies; k++)
      for (const l of lines) {
        const o = JSON.parse(l);
        o.rollout_id = `${o.rollout_id}-copy${k}`;
        big.push(JSON.stringify(o));
      }
    const progress = page.getByTestId('import-progress').waitFor({ state: 'attached', timeout: 20_000 });
    await page.getByTestId('trace-file').setInputFiles({
      name: 'big.jsonl',
      mimeType: 'application/json',
      buffer: Buffer.from(`${big.join('\n')}\n`),
    });
    await progress;
    await expect
      .poll(() => page.getByTestId('import-summary').textContent(), { timeout: 60_000 })
      .toContain(`big.jsonl · jsonl · ${big.length} rollouts`);
    expect(await page.getByTestId('import-progress').count()).toBe(0);
    await page.close();
  });
});
