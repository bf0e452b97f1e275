import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { parseJsonlTrace } from '../../src/core/trace/io';
import { resolveConfig } from '../../src/engine/model';
import { tempModelFolder } from '../../src/engine/onnx/folder';
import { exportHfFolder, type FolderFiles, type HfTokenizerFiles } from '../../src/engine/onnx/hfFolder';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { PolicyChatEngine } from '../../src/harness/policyEngine';
import { LlmProxy } from '../../src/harness/proxy';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import { launch, screenshot } from './browser';

// Bring your own model: the page takes a local folder (here our own exported policy, and broken copies of it),
// runs a harness against it in transformers.js (harness agents in Web Workers), and records the model's ids and
// log-probs — checked here against our CPU engine sampling the same rollouts with the same seeds.
const read = (f: string) => JSON.parse(readFileSync(join('public', 'tokenizer', f), 'utf8'));
const tokFiles: HfTokenizerFiles = {
  tokenizerJson: read('tokenizer.json'),
  tokenizerConfig: read('tokenizer_config.json'),
};
const config = resolveConfig({
  vocabSize: 1024,
  contextLength: 512,
  layers: 1,
  width: 32,
  heads: 2,
  seed: 8,
});
const policy = new CpuPolicy(config);
const exported = () => exportHfFolder(config, policy.params, tokFiles);

describe('bring your own model folder in Chromium', () => {
  let browser: Browser;
  const baseUrl = inject('baseUrl');
  const errors: string[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    for (const c of cleanup) await c();
    expect(errors).toEqual([]);
  });

  async function openModels(): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}#tab=models`);
    await page.getByTestId('model-folder-input').waitFor();
    return page;
  }

  /** A model folder on disk under a directory named `name` (the page sees that name). */
  async function folderOnDisk(files: FolderFiles): Promise<string> {
    const { dir, remove } = await tempModelFolder(files);
    cleanup.push(remove);
    return dir;
  }

  it('runs a harness on our exported model and records the ids and log-probs our engine gives', async () => {
    const page = await openModels();
    await page.getByTestId('model-folder-input').setInputFiles(await folderOnDisk(exported()));
    await expect
      .poll(() => page.getByTestId('model-info').textContent(), { timeout: 30_000 })
      .toMatch(/gpt2 · vocabulary 1024 · ONNX variants fp32 · exported policy, f32 weights/);
    await page.getByTestId('model-harness').selectOption('instruction');
    await page.getByTestId('model-n').fill('2');
    await page.getByTestId('model-group').fill('2');
    await page.getByTestId('model-seed').fill('5');
    await page.getByTestId('model-max-tokens').fill('16');
    await page.getByTestId('model-run').click();
    // the run's trace opens in the Trace view
    await expect
      .poll(() => page.getByTestId('import-summary').textContent(), { timeout: 120_000 })
      .toMatch(/-instruction-s5\.jsonl.*4 rollouts · 4 calls/);
    expect(await page.getByRole('tab', { name: 'Trace' }).getAttribute('aria-selected')).toBe('true');
    expect(await page.getByTestId('import-summary').textContent()).not.toContain('no token texts');
    await screenshot(page, 'models-trace');
    await page.getByRole('tab', { name: 'Models' }).click();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('model-trace-download').click(),
    ]);
    const trace = parseJsonlTrace(readFileSync(await download.path(), 'utf8'));
    expect(trace.issues).toEqual([]);
    expect(trace.rollouts).toHaveLength(4);

    // the same rollouts on our CPU engine: same prompts, same per-call seeds → the same ids, log-probs within
    // float32 rounding (the page's engine is transformers.js on onnxruntime-web's wasm EP)
    const tok = new ChatTokenizer('policy', tokFiles.tokenizerJson, tokFiles.tokenizerConfig);
    const proxy = new LlmProxy({
      engine: new PolicyChatEngine(policy, tok, { seed: 5 }),
      tokenizer: tok,
      temperature: 1,
      maxResponseTokens: 16,
      maxContextTokens: 512,
    });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'val',
      n: 2,
      groupSize: 2,
      seed: 5,
      behaviours: [],
    };
    const want = await runInline(spec, planRollouts(spec), proxy);
    for (const [i, r] of trace.rollouts.entries()) {
      expect(r.state).toBe('succeeded');
      expect(r.metadata?.engine).toBe('transformers.js');
      const got = r.calls[0];
      const ref = want[i].calls[0];
      expect(got.engine?.model).toMatch(/^transformers\.js-wasm-fp32\/model:harness-lab-model-/);
      expect(Array.from(got.promptTokenIds ?? [])).toEqual(Array.from(ref.promptTokenIds ?? []));
      expect(Array.from(got.responseTokenIds ?? [])).toEqual(Array.from(ref.responseTokenIds ?? []));
      const lp = got.responseLogProbs ?? new Float32Array(0);
      expect(lp.length).toBe(ref.responseLogProbs?.length);
      for (let k = 0; k < lp.length; k++)
        expect(Math.abs(lp[k] - (ref.responseLogProbs?.[k] ?? Number.NaN))).toBeLessThan(1e-4);
    }
    await page.close();
  });

  it('names the missing file of a folder that is not a model', async () => {
    const page = await openModels();
    const files = exported();
    files.delete('tokenizer_config.json');
    await page.getByTestId('model-folder-input').setInputFiles(await folderOnDisk(files));
    await expect
      .poll(() => page.getByTestId('model-error').textContent(), { timeout: 30_000 })
      .toMatch(/: tokenizer_config\.json: is missing$/);
    expect(await page.getByTestId('model-run').count()).toBe(0);
    await page.close();
  });

  it('names the malformed ONNX file when the model cannot be loaded', async () => {
    const page = await openModels();
    const files = exported();
    files.set('onnx/model.onnx', new TextEncoder().encode('this is not an ONNX model'));
    await page.getByTestId('model-folder-input').setInputFiles(await folderOnDisk(files));
    await page.getByTestId('model-run').click();
    await expect
      .poll(() => page.getByTestId('model-error').textContent(), { timeout: 60_000 })
      .toMatch(/: onnx\/model\.onnx: could not be loaded by transformers\.js: /);
    await screenshot(page, 'models-broken');
    await page.close();
  });
});
