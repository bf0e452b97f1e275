import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { parseJsonlTrace } from '../../src/core/trace/io';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { PolicyChatEngine } from '../../src/harness/policyEngine';
import { LlmProxy } from '../../src/harness/proxy';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import { launch, screenshot } from './browser';

// A dropped / picked Llama-family folder (the committed tiny qwen3 of python/tiny_models/) samples from our own
// engine in the page, is kept in OPFS across a reload, and records the ids and log-probs our CPU engine gives
// for the same rollouts and seeds.
const dir = resolve(__dirname, '../models/qwen3');

describe('a Hugging Face qwen3 folder in the Models tab runs on our engine', () => {
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

  it('picks the folder, keeps it across a reload, samples rollouts and opens their trace', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}#tab=models`);
    await page.getByTestId('model-folder-input').waitFor();
    await page.getByTestId('model-folder-input').setInputFiles(dir);
    const info = /qwen3 · qwen3 · vocabulary 1024 · safetensors F32 · 57568 parameters · our engine/;
    await expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 30_000 }).toMatch(info);
    await expect
      .poll(() => page.getByTestId('model-cache').textContent(), { timeout: 30_000 })
      .toMatch(/kept in this browser/);
    // a reload restores the folder from OPFS without picking it again
    await page.reload();
    await expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 30_000 }).toMatch(info);
    expect(await page.getByTestId('model-dtype').count()).toBe(0);
    await page.getByTestId('model-harness').selectOption('instruction-short');
    await page.getByTestId('model-n').fill('2');
    await page.getByTestId('model-group').fill('1');
    await page.getByTestId('model-seed').fill('5');
    await page.getByTestId('model-max-tokens').fill('12');
    await page.getByTestId('model-run').click();
    await expect
      .poll(() => page.getByTestId('import-summary').textContent(), { timeout: 120_000 })
      .toMatch(/qwen3-instruction-short-s5\.jsonl.*2 rollouts · 2 calls/);
    await screenshot(page, 'models-llama-trace');
    await page.getByRole('tab', { name: 'Models' }).click();
    const engine = (await page.getByTestId('model-engine').textContent()) ?? '';
    expect(engine).toMatch(/^ours, (webgpu|cpu)/);
    console.log(`Models tab engine: ${engine}`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('model-trace-download').click(),
    ]);
    const trace = parseJsonlTrace(readFileSync(await download.path(), 'utf8'));
    expect(trace.issues).toEqual([]);
    expect(trace.rollouts).toHaveLength(2);

    // the same rollouts on our CPU engine in Node: same prompts and per-call seeds → the same ids and log-probs
    const folder = await readLlamaFolder(await nodeFolderReader(dir));
    const tj = folder.tokenizer;
    const tok = new ChatTokenizer('model:qwen3', tj.tokenizerJson, tj.tokenizerConfig);
    const policy = new LlamaCpuPolicy(folder.config, folder.params, {}, { contextLength: 128 });
    const proxy = new LlmProxy({
      engine: new PolicyChatEngine(policy, tok, { seed: 5 }),
      tokenizer: tok,
      temperature: 1,
      maxResponseTokens: 12,
      maxContextTokens: 128,
    });
    const spec: RunSpec = {
      harness: 'instruction-short',
      split: 'val',
      n: 2,
      groupSize: 1,
      seed: 5,
      behaviours: [],
    };
    const want = await runInline(spec, planRollouts(spec), proxy);
    let tokens = 0;
    for (const [i, r] of trace.rollouts.entries()) {
      const got = r.calls[0];
      const ref = want[i].calls[0];
      expect(got.engine?.model).toMatch(/^ours-(webgpu|cpu)\/qwen3\/qwen3$/);
      expect(Array.from(got.promptTokenIds ?? [])).toEqual(Array.from(ref.promptTokenIds ?? []));
      expect(Array.from(got.responseTokenIds ?? [])).toEqual(Array.from(ref.responseTokenIds ?? []));
      const lp = got.responseLogProbs ?? new Float32Array(0);
      expect(lp.length).toBe(ref.responseLogProbs?.length);
      tokens += lp.length;
      for (let k = 0; k < lp.length; k++)
        expect(Math.abs(lp[k] - (ref.responseLogProbs?.[k] ?? Number.NaN))).toBeLessThan(1e-4);
    }
    expect(tokens).toBeGreaterThan(0);

    await page.close();
  });

  it('runs the folder in transformers.js (wasm) with our engine scoring the responses: the gap is shown and kept', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}#tab=models`);
    await page.getByTestId('model-folder-input').waitFor();
    await page.getByTestId('model-folder-input').setInputFiles(dir);
    await expect
      .poll(() => page.getByTestId('model-info').textContent(), { timeout: 30_000 })
      .toMatch(/our engine/);
    await page.getByTestId('model-harness').selectOption('instruction-short');
    await page.getByTestId('model-n').fill('2');
    await page.getByTestId('model-group').fill('1');
    await page.getByTestId('model-seed').fill('5');
    await page.getByTestId('model-max-tokens').fill('12');
    await page.getByTestId('model-engine-choice').selectOption('transformers.js');
    await page.getByTestId('model-device').selectOption('wasm');
    await page.getByTestId('model-run').click();
    // the run ends in the Trace view (its trace imported), or with the error the Models tab shows
    const outcome = async () =>
      (await page.getByTestId('model-error').count())
        ? `error: ${await page.getByTestId('model-error').textContent()}`
        : ((await page
            .getByTestId('import-summary')
            .textContent({ timeout: 100 })
            .catch(() => '')) ?? '');
    await expect
      .poll(outcome, { timeout: 150_000 })
      .toMatch(/qwen3-instruction-short-s5\.jsonl.*2 rollouts · 2 calls/);
    await page.getByRole('tab', { name: 'Models' }).click();
    expect(await page.getByTestId('model-gap').textContent()).toMatch(
      /^log-prob gap max \|Δ log-prob\| \S+, mean \S+ over \d+ tokens \(2 \/ 2 calls scored\)$/,
    );
    expect(await page.getByTestId('model-engine').textContent()).toMatch(
      /^transformers\.js, wasm \(scored by ours/,
    );
    const [download2] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('model-trace-download').click(),
    ]);
    const trace2 = parseJsonlTrace(readFileSync(await download2.path(), 'utf8'));
    expect(trace2.issues).toEqual([]);
    let scored = 0;
    for (const r of trace2.rollouts) {
      const c = r.calls[0];
      expect(c.engine?.model).toMatch(/^transformers\.js\/qwen3\//);
      const lp = c.responseLogProbs ?? new Float32Array(0);
      expect(c.trainerLogProbs?.length).toBe(lp.length);
      for (let k = 0; k < lp.length; k++) {
        expect(Math.abs(lp[k] - (c.trainerLogProbs?.[k] ?? Number.NaN))).toBeLessThan(1e-4);
        scored++;
      }
    }
    expect(scored).toBeGreaterThan(0);
    await screenshot(page, 'models-llama-transformers');
    await page.close();
  }, 240_000);
});
