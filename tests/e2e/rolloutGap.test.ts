/**
 * The engine vs trainer log-prob gap in the Trace view, on a kept step trace of a real run: rollouts from
 * onnxruntime-web (wasm EP, int8 weights), the update on our CPU engine. The trace carries both log-probs per
 * token; the page offers the gap colouring, colours the chips by it and shows each token's gap, and its
 * rollout-correction panel masks the tokens core's Token-MIS masks as the sliders move.
 */
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { correctionMask } from '../../src/core/algos/correctionMask';
import { resolveTrainerOptions } from '../../src/core/pipeline/options';
import { buildRows } from '../../src/core/pipeline/trainer';
import { parseJsonlTrace } from '../../src/core/trace/io';
import type { Rollout } from '../../src/core/trace/types';
import { decodeCheckpoint } from '../../src/engine/checkpoint';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { resolveTrainConfig } from '../../src/train/config';
import { createLocalRun } from '../../src/train/local';
import { rolloutEngineFor } from '../../src/train/rolloutEngines';
import { nodeRolloutEnv } from '../../src/train/rolloutEnvNode';
import { inlineRunner } from '../../src/train/source';
import { MemoryStorage } from '../../src/train/storage';
import { trainerValuesOf } from '../../src/ui/lab/derive';
import { fmt } from '../../src/ui/tokens/colorScale';
import { lowerAt, upperAt } from '../../src/ui/trace/CorrectionMaskPanel';
import { launch, screenshot } from './browser';

/** One step of the run; its kept trace (JSONL text) and rollouts. */
async function keptStepTrace(): Promise<{ text: string; rollouts: Rollout[] }> {
  const ck = decodeCheckpoint(
    new Uint8Array(
      readFileSync(new URL('../../public/checkpoints/instruction-short.safetensors', import.meta.url)),
    ),
  );
  const config = resolveTrainConfig({
    lab: {
      harness: 'instruction-short',
      train_tasks: 8,
      val_tasks: 2,
      seed: 3,
      rollout_precision: 'int8',
      vocab_mismatch: true,
    },
    data: { train_batch_size: 2, max_response_length: 24 },
    actor_rollout_ref: { actor: { ppo_mini_batch_size: 2 }, rollout: { n: 4, name: 'onnxruntime-web' } },
    trainer: { total_training_steps: 1, test_freq: 0, val_before_train: false },
  });
  const tokenizer = loadTokenizer('policy');
  const policy = new CpuPolicy(ck.config, {}, ck.params);
  const storage = new MemoryStorage();
  const local = createLocalRun({
    config,
    policy,
    tokenizer,
    storage,
    rolloutEngine: rolloutEngineFor({ config, policy, tokenizer, env: nodeRolloutEnv() }),
    makeRunner: (h) => inlineRunner(h),
  });
  await local.run.run();
  local.close();
  const text = storage.text('traces/step_000001.jsonl');
  return { text, rollouts: parseJsonlTrace(text).rollouts };
}

describe('the Trace view colours a kept training trace by the engine − trainer gap', () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  let trace: { text: string; rollouts: Rollout[] };
  beforeAll(async () => {
    trace = await keptStepTrace();
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(inject('baseUrl'));
    await page.getByTestId('import-summary').waitFor({ timeout: 30_000 });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("offers the gap, colours the chips by it and shows each token's gap", async () => {
    // the token with the largest |engine − trainer| in the trace (int8 weights: well beyond rounding)
    let best = { rollout: '', token: -1, gap: 0 };
    for (const r of trace.rollouts) {
      const c = r.calls[0];
      const e = c.responseLogProbs as Float32Array;
      const t = c.trainerLogProbs as Float32Array;
      for (let j = 0; j < e.length; j++) {
        const g = Math.fround(e[j] - t[j]);
        if (Math.abs(g) > Math.abs(best.gap)) best = { rollout: r.rolloutId, token: j, gap: g };
      }
    }
    expect(Math.abs(best.gap)).toBeGreaterThan(1e-3);

    await page.getByTestId('trace-file').setInputFiles({
      name: 'step_000001.jsonl',
      mimeType: 'application/json',
      buffer: Buffer.from(trace.text),
    });
    await expect.poll(() => page.getByTestId('import-summary').textContent()).toContain('step_000001.jsonl');
    const select = page.getByLabel('Color tokens by', { exact: true });
    const gapOption = select.locator('option[value="gap"]');
    await expect.poll(() => gapOption.evaluate((o) => (o as HTMLOptionElement).disabled)).toBe(false);
    expect(await gapOption.textContent()).toBe('log-prob gap (engine − trainer)');
    expect(
      await select.locator('option[value="entropy"]').evaluate((o) => (o as HTMLOptionElement).disabled),
    ).toBe(false);
    await select.selectOption('gap');
    await page.getByTestId(`rollout-row-${best.rollout}`).first().click();
    const chips = page.getByTestId('call-tokens');
    await chips.locator('.tok').first().waitFor();
    // a diverging scale around 0: the chips do not all share one colour
    const colours = new Set(
      await chips.locator('.tok').evaluateAll((els) => els.map((e) => (e as HTMLElement).style.background)),
    );
    expect(colours.size).toBeGreaterThan(1);
    await chips.locator(`.tok[data-i="${best.token}"]`).hover();
    const tip = page.getByTestId('token-tooltip');
    await expect.poll(() => tip.textContent()).toContain('log-prob gap (engine − trainer)');
    const row = tip.locator('tr.tt-color');
    expect(await row.locator('th').textContent()).toBe('log-prob gap (engine − trainer)');
    expect(await row.locator('td').textContent()).toBe(fmt(best.gap, 6));
    await screenshot(page, 'trace-gap');
    expect(errors).toEqual([]);
  });

  it('colours by the full-vocabulary KL and explains a token by the tokens the two engines disagree on most', async () => {
    // the token with the largest whole-vocabulary KL in the trace
    let best = { rollout: '', token: -1, kl: 0, tv: 0, id: -1 };
    for (const r of trace.rollouts) {
      const m = r.calls[0].vocabMismatch;
      if (!m) throw new Error(`${r.rolloutId}: the kept trace has no vocab_mismatch`);
      for (let j = 0; j < m.kl.length; j++)
        if (m.kl[j] > best.kl)
          best = { rollout: r.rolloutId, token: j, kl: m.kl[j], tv: m.tv[j], id: m.ids[j * m.k] };
    }
    expect(best.kl).toBeGreaterThan(0);
    const select = page.getByLabel('Color tokens by', { exact: true });
    const option = select.locator('option[value="vocabKl"]');
    await expect.poll(() => option.evaluate((o) => (o as HTMLOptionElement).disabled)).toBe(false);
    await select.selectOption('vocabKl');
    await page.getByTestId(`rollout-row-${best.rollout}`).first().click();
    const chips = page.getByTestId('call-tokens');
    await chips.locator('.tok').first().waitFor();
    await chips.locator(`.tok[data-i="${best.token}"]`).hover();
    const tip = page.getByTestId('token-tooltip');
    await expect
      .poll(() => tip.textContent())
      .toContain(
        `whole vocabulary: KL(rollout ‖ trainer) ${best.kl.toExponential(3)} · TV ${best.tv.toExponential(3)}`,
      );
    expect(await tip.textContent()).toContain(`id ${best.id}`);
    expect(await tip.locator('tr.tt-color th').textContent()).toBe('KL(rollout ‖ trainer), whole vocabulary');
    await screenshot(page, 'trace-vocab-kl');
    expect(errors).toEqual([]);
  });
  it("draws Token-MIS masks on the kept trace as the thresholds move, with core's masked count", async () => {
    const panel = page.getByTestId('trace-correction-mask');
    await panel.locator('summary').click();
    await page.getByTestId('rc-mode').selectOption('token_mis');
    const slide = (id: string, v: number) =>
      page.getByTestId(id).evaluate((el, value) => {
        const input = el as HTMLInputElement;
        Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set?.call(input, String(value));
        input.dispatchEvent(new Event('input', { bubbles: true }));
      }, v);
    // int8 rollouts differ from the trainer by ~1e-2 in log-prob: bounds a few tenths of a percent from 1 mask some tokens
    await slide('rc-upper', 1);
    await slide('rc-lower', 999);
    const { batch } = buildRows(trace.rollouts, resolveTrainerOptions({}));
    const trainer = trainerValuesOf(batch, trace.rollouts);
    if (!trainer || !batch.responseLogProbs) throw new Error('the kept trace should carry both log-probs');
    const want = correctionMask(batch, trainer.logProbs, batch.responseLogProbs, 'token_mis', {
      upper: upperAt(1),
      lower: lowerAt(999),
    });
    expect(want.counts.masked).toBeGreaterThan(0);
    await expect.poll(() => page.getByTestId('rc-masked').textContent()).toBe(String(want.counts.masked));
    expect(await page.getByTestId('rc-measured').textContent()).toBe(String(want.counts.measured));
    await screenshot(page, 'trace-correction-mask');
    await slide('rc-upper', 1000);
    await slide('rc-lower', 0);
    const loose = correctionMask(batch, trainer.logProbs, batch.responseLogProbs, 'token_mis', {
      upper: upperAt(1000),
      lower: lowerAt(0),
    });
    await expect.poll(() => page.getByTestId('rc-masked').textContent()).toBe(String(loose.counts.masked));
    expect(loose.counts.masked).toBeLessThan(want.counts.masked);
    expect(errors).toEqual([]);
  });
});
