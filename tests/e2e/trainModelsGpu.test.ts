import { resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launch } from './browser';

// The Train tab on a Hugging Face folder with lab.backend webgpu: the trainer worker requests its own WebGPU
// device (Chromium's SwiftShader adapter here) and trains one LoRA step on a bf16-packed base on it.

const CONFIG: Record<string, string> = {
  'lab.backend': 'webgpu',
  'lab.lora_base_dtype': 'bf16',
  'lab.harness': 'instruction-short',
  'lab.train_tasks': '8',
  'lab.val_tasks': '2',
  'lab.workers': '1',
  'data.train_batch_size': '2',
  'data.max_prompt_length': '100',
  'data.max_response_length': '4',
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

describe('the Train tab on a Hugging Face folder with lab.backend webgpu', () => {
  let browser: Browser;
  const baseUrl = inject('baseUrl');
  const errors: string[] = [];
  beforeAll(async () => {
    browser = await launch({ webgpu: true });
  });
  afterAll(async () => {
    await browser?.close();
    expect(errors).toEqual([]);
  });

  it("trains one LoRA step on the worker's WebGPU device", async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseUrl}${hash(CONFIG)}`);
    await page.getByTestId('train-tab').waitFor();
    await page.getByTestId('train-model-folder').setInputFiles(resolve(__dirname, '../models/llama'));
    await expect
      .poll(() => page.getByTestId('train-model').inputValue(), { timeout: 30_000 })
      .toBe('opfs:llama');
    await page.getByTestId('train-start').click();
    await page.getByTestId('train-live').waitFor();
    const row = page.locator('[data-testid=train-run-row]').first();
    await expect
      .poll(() => row.getAttribute('data-status'), { timeout: 400_000, interval: 1000 })
      .toMatch(/done|failed|stopped/);
    expect(await page.getByTestId('train-error').count()).toBe(0);
    expect(await row.getAttribute('data-status')).toBe('done');
    // the run row's engine column: the backend the run reported, with no CPU fallback note
    expect(await row.locator('td').nth(4).textContent()).toBe('webgpu');
    const chart = page.locator('[data-testid=metric-chart][data-metric="actor/pg_loss"]');
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 30_000 }).toBe('1');
    await page.close();
  }, 600_000);
});
