import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOSS_AGG_MODES } from '../../src/core/algos/aggLoss';
import { listLossModes } from '../../src/core/algos/lossModes';
import { listPolicyLosses } from '../../src/core/algos/policyLoss';
import { findConfigField, lossModeKeys } from '../../src/core/config/fields';
import { DEFAULT_TRAINER_OPTIONS, type TrainerOptions } from '../../src/core/pipeline/options';
import { getWeightSign, signed } from '../../src/core/pipeline/sign';
import { computeTrainerView } from '../../src/core/pipeline/trainer';
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

const LOSS_MODES = listLossModes().map((m) => m.name);
/** the aggregation the URL leaves out: the config table's default */
const AGG_DEFAULT = findConfigField('actor_rollout_ref.actor.loss_agg_mode')?.default;

/** Chooses a loss mode with the page's two controls (policy_loss.loss_mode, then loss_agg_mode under vanilla). */
async function selectLossMode(page: Page, mode: string): Promise<void> {
  const k = lossModeKeys(mode);
  await page.getByLabel('Policy loss', { exact: true }).selectOption(k.policyLossMode);
  if (k.lossAggMode !== null)
    await page.getByLabel('Loss aggregation', { exact: true }).selectOption(k.lossAggMode);
}

/**
 * Core's per-rollout total weights on a trace: the trainer view with core's default options (what the page opens
 * with) and the choices a test made, in the sign convention the page shows by default (the push −∂L/∂logπ).
 */
function expectedWeights(
  rollouts: Rollout[],
  lossMode: string,
  choice: Partial<TrainerOptions> = {},
): Map<string, number> {
  const view = computeTrainerView({ rollouts, options: { ...DEFAULT_TRAINER_OPTIONS, ...choice, lossMode } });
  const out = new Map<string, number>();
  const push = getWeightSign('push');
  for (const [i, r] of rollouts.entries())
    out.set(r.rolloutId, signed(view.selected.rolloutSums[i] ?? 0, push));
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
      text: Number(String(text).replace(/−/g, '-')),
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
  async function checkAllModes(page: Page, rs: Rollout[], choice: Partial<TrainerOptions> = {}) {
    const def = DEFAULT_TRAINER_OPTIONS.lossMode;
    for (const mode of [...LOSS_MODES.filter((m) => m !== def), def]) {
      await selectLossMode(page, mode);
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
      // the default is left out of the URL; within a burst the URL is written up to 100 ms later: poll
      // each of the two keys is written only where it differs from the default's
      const k = lossModeKeys(mode);
      const d = lossModeKeys(def);
      if (k.policyLossMode === d.policyLossMode) await expect.poll(() => page.url()).not.toContain('pl=');
      else await expect.poll(() => page.url()).toContain(`pl=${k.policyLossMode}`);
      if (k.lossAggMode !== null && k.lossAggMode !== AGG_DEFAULT)
        await expect.poll(() => page.url()).toContain(`agg=${k.lossAggMode}`);
    }
  }

  it('shows core’s per-rollout weights under every loss mode, with the reference stack named', async () => {
    const page = await openPage(browser, `${baseUrl}#tab=advantages`, errors);
    const offered = async (label: string) =>
      page
        .getByLabel(label, { exact: true })
        .locator('option')
        .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(await offered('Policy loss')).toEqual(listPolicyLosses().map((p) => p.name));
    expect(await offered('Loss aggregation')).toEqual([...LOSS_AGG_MODES]);
    expect(await page.getByTestId('reference-stack').textContent()).toContain(
      'Agent Lightning 1.0.x + verl 0.8.0',
    );
    // an estimator a trace cannot feed is offered disabled, with the reason
    const remax = page.getByLabel('Advantage estimator', { exact: true }).locator('option[value="remax"]');
    expect(await remax.isDisabled()).toBe(true);
    expect(await remax.getAttribute('title')).toMatch(/reward_baselines/);
    // the first sample mixes successes and failures within groups, so the weights are not all zero
    expect(
      [...expectedWeights(rollouts, 'token-mean').values()].filter((w) => w !== 0).length,
    ).toBeGreaterThan(4);
    await checkAllModes(page, rollouts);
    // other estimator, merge level, rollout-level setting and reward dtype: still core's numbers
    await page.getByLabel('Advantage estimator', { exact: true }).selectOption('rloo');
    await page.getByLabel('Rollout-level advantage', { exact: true }).uncheck();
    await page.getByLabel('Aggregation level', { exact: true }).selectOption('transition');
    await page.getByLabel('Reward dtype', { exact: true }).selectOption('float32');
    await checkAllModes(page, rollouts, {
      advEstimator: 'rloo',
      enableRolloutLevelAdvantage: false,
      traceAggregatorLevel: 'transition',
      rewardDtype: 'float32',
    });
    await selectLossMode(page, 'per_rollout_mean');
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
    // within a burst of key presses the URL is written at most every 100 ms: wait for the last write
    await expect.poll(() => page.url()).toContain(`r=${encodeURIComponent(r.rolloutId)}`);
    await expect.poll(() => new URL(page.url()).hash).toMatch(/[#&]c=1(&|$)/);
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
    for (const q of ['push −∂L/∂logπ', 'advantage', 'log-prob (engine)', 'loss mask'])
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
    await selectLossMode(page, 'seq-mean-token-mean');
    await page.getByLabel('Aggregation level', { exact: true }).selectOption('transition');
    await page.getByLabel('Clip ratio high', { exact: true }).fill('0.28');
    const target = rollouts[rollouts.length - 1];
    await page.getByTestId(`adv-rollout-${target.rolloutId}`).click();
    await page.getByRole('tab', { name: 'Trace' }).click();
    await page.getByLabel('Color tokens by', { exact: true }).selectOption('advantage');
    if (target.calls.length > 1) await page.getByRole('button', { name: 'Next call' }).click();
    const wantCall = target.calls.length > 1 ? 2 : 1;
    // the link is copied once it holds every choice, the call index included
    await expect.poll(() => page.url()).toContain('color=advantage');
    if (wantCall > 1) await expect.poll(() => new URL(page.url()).hash).toMatch(/[#&]c=1(&|$)/);
    await expect.poll(() => new URL(page.url()).hash).toContain(`r=${encodeURIComponent(target.rolloutId)}`);
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
    expect(await second.getByLabel('Policy loss', { exact: true }).inputValue()).toBe('vanilla');
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
