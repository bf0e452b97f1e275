import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseLlamaConfig } from '../../src/engine/llama/config';
import { runMemoryFit } from '../../src/train/broughtModel';
import { resolveTrainConfig } from '../../src/train/config';
import { PAGE_CPU_LIMITS } from '../../src/ui/train/modelFit';
import { writeQwen3ShapeFolder } from '../fixtures/modelShapes';
import { launch, screenshot } from './browser';

// The Train tab on a Hugging Face folder: a tiny Llama folder picked in the model field trains one LoRA step in
// the trainer worker (CPU engine) and the step's metrics arrive; a folder whose shape cannot fit the page's CPU
// budget is refused before anything is read but its config.json, naming the term and by how much.

const llama = resolve(__dirname, '../models/llama');
const qwen3 = resolve(__dirname, '../models/qwen3');

const CONFIG: Record<string, string> = {
  'lab.backend': 'cpu',
  'lab.harness': 'instruction-short',
  'lab.train_tasks': '8',
  'lab.val_tasks': '2',
  'lab.workers': '1',
  'data.train_batch_size': '2',
  'data.max_prompt_length': '100',
  'data.max_response_length': '8',
  'actor_rollout_ref.rollout.n': '2',
  'actor_rollout_ref.rollout.max_model_len': '128',
  'actor_rollout_ref.actor.ppo_mini_batch_size': '2',
  'actor_rollout_ref.model.lora_rank': '4',
  'actor_rollout_ref.model.lora_alpha': '8',
  'trainer.total_training_steps': '1',
  'trainer.test_freq': '0',
  'lab.seed': '3',
};
const hash = (c: Record<string, string>) =>
  `#tab=train&${Object.entries(c)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&')}`;

/** The run's metrics.jsonl rows, read from OPFS (runs/<id>/metrics.jsonl). */
async function runMetrics(page: Page, id: string): Promise<Record<string, number | null>[]> {
  const text = await page.evaluate(async (runId) => {
    const root = await navigator.storage.getDirectory();
    const dir = await (await root.getDirectoryHandle('runs')).getDirectoryHandle(runId);
    return (await (await dir.getFileHandle('metrics.jsonl')).getFile()).text();
  }, id);
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const row = JSON.parse(l) as { data?: Record<string, number | null> } & Record<string, unknown>;
      return (row.data ?? row) as Record<string, number | null>;
    });
}

describe('the Train tab on a Hugging Face folder', () => {
  let browser: Browser;
  const baseUrl = inject('baseUrl');
  const errors: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'train-models-'));
  beforeAll(async () => {
    browser = await launch({ webgpu: false });
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
    expect(errors).toEqual([]);
  });

  it('picks a tiny Llama folder, runs one LoRA step in the trainer worker and shows its metrics', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}${hash(CONFIG)}`);
    await page.getByTestId('train-tab').waitFor();
    // the shipped folders are choices; a brought one is picked with the directory input and kept in OPFS
    const options = await page.getByTestId('train-model').locator('option').allTextContents();
    expect(options.some((o) => o.startsWith('qwen3 — shipped'))).toBe(true);
    await page.getByTestId('train-model-folder').setInputFiles(llama);
    await expect
      .poll(() => page.getByTestId('train-model').inputValue(), { timeout: 30_000 })
      .toBe('opfs:llama');
    expect(await page.getByTestId('cfg-actor_rollout_ref.model.path').inputValue()).toBe('opfs:llama');
    await expect
      .poll(() => page.getByTestId('train-model-info').textContent(), { timeout: 30_000 })
      .toMatch(/llama · 2 layers · hidden 32 · vocabulary 1024 · LoRA r=4 alpha=8 \(all-linear\)/);
    const memory = page.getByTestId('train-model-memory');
    for (const t of ['weights', 'activations', 'adapter', 'grads', 'optimizer', 'total'])
      expect(await memory.locator(`tr[data-term=${t}]`).count(), t).toBe(1);
    expect(await page.getByTestId('train-model-refusal').count()).toBe(0);
    await screenshot(page, 'train-model-llama');

    await page.getByTestId('train-start').click();
    await page.getByTestId('train-live').waitFor();
    const row = page.locator('[data-testid=train-run-row]').first();
    await expect
      .poll(() => row.getAttribute('data-status'), { timeout: 180_000, interval: 500 })
      .toMatch(/done|failed|stopped/);
    expect(await page.getByTestId('train-error').count()).toBe(0);
    expect(await row.getAttribute('data-status')).toBe('done');
    const text = (await row.textContent()) ?? '';
    expect(text).toContain('cpu');
    const chart = page.locator('[data-testid=metric-chart][data-metric="actor/pg_loss"]');
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 30_000 }).toBe('1');
    const metrics = await runMetrics(page, (await row.getAttribute('data-run')) as string);
    expect(metrics).toHaveLength(1);
    const m = metrics[0];
    for (const k of ['actor/pg_loss', 'actor/entropy', 'critic/rewards/mean'])
      expect(Number.isFinite(m[k]), `${k} = ${m[k]}`).toBe(true);
    // the adapter trains: B starts at 0 but its gradient (through A) does not vanish
    expect(m['actor/grad_norm']).toBeGreaterThan(0);
    await screenshot(page, 'train-model-llama-done');
    await page.close();
  });

  it('samples its rollouts in transformers.js (wasm) on the folder exported with the merged adapter, synced after each step', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    const cfg = {
      ...CONFIG,
      'actor_rollout_ref.rollout.name': 'transformers.js',
      'trainer.total_training_steps': '2',
      'actor_rollout_ref.actor.optim.lr': '0.01',
    };
    await page.goto(`${baseUrl}${hash(cfg)}`);
    await page.getByTestId('train-tab').waitFor();
    await page.getByTestId('train-model-folder').setInputFiles(llama);
    await expect
      .poll(() => page.getByTestId('train-model').inputValue(), { timeout: 30_000 })
      .toBe('opfs:llama');
    await page.getByTestId('train-start').click();
    const row = page.locator('[data-testid=train-run-row]').first();
    await expect
      .poll(() => row.getAttribute('data-status'), { timeout: 180_000, interval: 500 })
      .toMatch(/done|failed|stopped/);
    expect(await page.getByTestId('train-error').count()).toBe(0);
    expect(await row.getAttribute('data-status')).toBe('done');
    const metrics = await runMetrics(page, (await row.getAttribute('data-run')) as string);
    expect(metrics).toHaveLength(2);
    for (const [i, m] of metrics.entries()) {
      // each update re-exported the merged weights and loaded them in transformers.js
      expect(m['lab/weight_sync/export_s'] as number, `step ${i + 1}`).toBeGreaterThan(0);
      expect(m['lab/weight_sync/bytes'] as number, `step ${i + 1}`).toBeGreaterThan(0);
      // the trainer's recompute agrees with what transformers.js sampled, after the adapter moved too
      expect(m['training/rollout_probs_diff_max'] as number, `step ${i + 1}`).toBeLessThan(1e-4);
    }
    await page.close();
  });

  it('refuses a folder whose step cannot fit, naming the term and by how much', async () => {
    // Qwen3-0.6B's shape (config.json only; the page never reads weights it refuses)
    const big = join(tmp, 'qwen3-0.6b-shape');
    const cfg = writeQwen3ShapeFolder(qwen3, big);
    const full = { ...CONFIG, 'actor_rollout_ref.model.lora_rank': '0' };
    // what the refusal must say, from the same table of terms
    const fitOf = (lora_rank: number) =>
      runMemoryFit(
        resolveTrainConfig({
          actor_rollout_ref: {
            model: { lora_rank },
            rollout: { max_model_len: 128, n: 2 },
            actor: { ppo_mini_batch_size: 2 },
          },
        }),
        parseLlamaConfig(cfg),
        PAGE_CPU_LIMITS,
      );
    const want = fitOf(0);
    expect(want.problems).toHaveLength(1);
    expect(fitOf(16).problems).toEqual([]);
    const overMiB = (want.problems[0].over / 2 ** 20).toFixed(1);

    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}${hash(full)}`);
    await page.getByTestId('train-tab').waitFor();
    await page.getByTestId('train-model-folder').setInputFiles(big);
    const refusal = page.getByTestId('train-model-refusal');
    await expect.poll(() => refusal.textContent(), { timeout: 30_000 }).toContain('cannot fit');
    const said = (await refusal.textContent()) ?? '';
    expect(said).toMatch(/one full fine-tuning step \(\d+\.\d MiB; largest term: optimizer \d+\.\d MiB\)/);
    expect(said).toContain(
      "exceeds the page's CPU budget (4096.0 MiB, an estimate: the browser states no memory limit for a page)",
    );
    expect(said).toContain(`by ${overMiB} MiB`);
    // the setting that would make it fit, found by the same fit
    expect(said).toContain(
      '. It would fit with actor_rollout_ref.model.lora_rank 16 (LoRA instead of full fine-tuning)',
    );
    expect(await page.getByTestId('train-model-memory').locator('caption').textContent()).toContain(
      'on the CPU engine',
    );
    expect(await page.getByTestId('train-start').isDisabled()).toBe(true);
    await screenshot(page, 'train-model-refused');
    // LoRA on the same shape fits: the refusal goes and the run may start
    await page.getByTestId('cfg-actor_rollout_ref.model.lora_rank').fill('16');
    await page.getByTestId('cfg-actor_rollout_ref.model.lora_rank').press('Enter');
    await expect.poll(() => refusal.count(), { timeout: 10_000 }).toBe(0);
    expect(await page.getByTestId('train-start').isDisabled()).toBe(false);
    await page.close();
  });

  it('lab.memory_limit_mib states a tighter limit: the page refuses the tiny folder, naming the limit and the fix', async () => {
    const tight = { ...CONFIG, 'lab.memory_limit_mib': '2' };
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}${hash(tight)}`);
    await page.getByTestId('train-tab').waitFor();
    await page.getByTestId('train-model-folder').setInputFiles(llama);
    const refusal = page.getByTestId('train-model-refusal');
    await expect.poll(() => refusal.textContent(), { timeout: 30_000 }).toContain('cannot fit');
    const said = (await refusal.textContent()) ?? '';
    expect(said).toMatch(
      /^cannot fit: one LoRA step \(\d+\.\d MiB; largest term: \w+ \d+\.\d MiB\) exceeds the page's CPU budget \(2\.0 MiB, lab\.memory_limit_mib\) by \d+\.\d MiB\. It would fit with /,
    );
    expect(said).toContain('actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu');
    expect(await page.getByTestId('train-start').isDisabled()).toBe(true);
    // the table states the limit in force and the largest single array
    const memory = page.getByTestId('train-model-memory');
    expect(await memory.locator('tr[data-term=total]').textContent()).toContain(
      "of 2.0 MiB (page's CPU budget; lab.memory_limit_mib)",
    );
    expect(await memory.locator('tr[data-term=largest-buffer]').textContent()).toMatch(
      /^largest bufferthe flat f32 weight array: \d+\.\d MiB$/,
    );
    await screenshot(page, 'train-model-memory-limit');
    // the platform's figure again (0): the run may start
    await page.getByTestId('cfg-lab.memory_limit_mib').fill('0');
    await page.getByTestId('cfg-lab.memory_limit_mib').press('Enter');
    await expect.poll(() => refusal.count(), { timeout: 10_000 }).toBe(0);
    expect(await page.getByTestId('train-start').isDisabled()).toBe(false);
    await page.close();
  });

  it("the Models tab's folder starts a run: the Train tab opens with it as the model", async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}#tab=models`);
    await page.getByTestId('model-folder-input').setInputFiles(qwen3);
    await expect
      .poll(() => page.getByTestId('model-cache').textContent(), { timeout: 30_000 })
      .toMatch(/kept in this browser/);
    await page.getByTestId('model-train').click();
    await page.getByTestId('train-tab').waitFor();
    expect(await page.getByTestId('train-model').inputValue()).toBe('opfs:qwen3');
    await expect
      .poll(() => page.getByTestId('train-model-info').textContent(), { timeout: 30_000 })
      .toMatch(/^qwen3 · 2 layers · hidden 32 · vocabulary 1024 · full fine-tuning/);
    expect(decodeURIComponent(page.url())).toContain('actor_rollout_ref.model.path=opfs:qwen3');
    await page.close();
  });
});
