import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseLlamaConfig } from '../../src/engine/llama/config';
import { planWeightShards, SHARD_HEADROOM } from '../../src/engine/llama/memoryFit';
import { llamaLayout } from '../../src/engine/llama/model';
import { writeQwen3ShapeFolder } from '../fixtures/modelShapes';
import { launch } from './browser';

// The Train tab on a Hugging Face folder with lab.backend webgpu: the trainer worker requests its own WebGPU
// device (Chromium's SwiftShader adapter here) and trains one LoRA step on a bf16-packed base on it; a folder
// whose step this adapter cannot hold is refused before start, naming the buffer, the adapter's limit and the
// fix.

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
  const tmp = mkdtempSync(join(tmpdir(), 'train-models-gpu-'));
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
    expect(errors).toEqual([]);
  });

  it("checks the step against this browser's adapter: a Qwen3-0.6B-shaped f32 base is refused by the stated total, its weights planned as shards within the limit", async () => {
    const qwen3 = resolve(__dirname, '../models/qwen3');
    const big = join(tmp, 'qwen3-0.6b-shape');
    const model = parseLlamaConfig(writeQwen3ShapeFolder(qwen3, big));
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    // f32 base, 8 rows of 128 tokens: over the 4 GiB stated for WebGPU
    await page.goto(
      `${baseUrl}${hash({ ...CONFIG, 'lab.lora_base_dtype': 'f32', 'actor_rollout_ref.actor.ppo_mini_batch_size': '4', 'data.train_batch_size': '4' })}`,
    );
    await page.getByTestId('train-tab').waitFor();
    const limits = await page.evaluate(async () => {
      const a = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
      return a ? { maxBufferSize: a.limits.maxBufferSize, bind: a.limits.maxStorageBufferBindingSize } : null;
    });
    expect(limits).not.toBeNull();
    await page.getByTestId('train-model-folder').setInputFiles(big);
    const refusal = page.getByTestId('train-model-refusal');
    await expect.poll(() => refusal.textContent(), { timeout: 30_000 }).toContain('cannot fit');
    const said = (await refusal.textContent()) ?? '';
    expect(said).toMatch(
      /^cannot fit: one LoRA step \(\d+\.\d MiB; largest term: activations \d+\.\d MiB\) exceeds this WebGPU adapter's memory \(4096\.0 MiB, an estimate: WebGPU reports no memory size\) by /,
    );
    // the f32 base (2273.8 MiB) is split into shards of whole tensors within the smaller of the adapter's two
    // limits, less the headroom; its largest tensor (the 593.5 MiB embedding) fits any adapter over 595 MiB
    const { maxBufferSize, bind } = limits as { maxBufferSize: number; bind: number };
    const limit = Math.min(maxBufferSize, bind);
    const which = maxBufferSize <= bind ? 'maxBufferSize' : 'maxStorageBufferBindingSize';
    expect(limit).toBeGreaterThan(595 * 2 ** 20);
    expect(said).not.toContain('weight buffer');
    expect(said).not.toContain('weight tensor');
    const shards = planWeightShards(llamaLayout(model), 'f32', limit);
    const largest = Math.max(...shards.map((sh) => 4 * (sh.end - sh.start)));
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
    const what =
      shards.length > 1 ? `the largest of ${shards.length} f32 weight shards` : 'the flat f32 weight buffer';
    expect(said).toMatch(/\. It (would fit with|does not fit even with) /);
    expect(await page.getByTestId('train-start').isDisabled()).toBe(true);
    const memory = page.getByTestId('train-model-memory');
    expect(await memory.locator('caption').textContent()).toContain(
      'on the WebGPU engine (this WebGPU adapter)',
    );
    expect(await memory.locator('tr[data-term=largest-buffer]').textContent()).toBe(
      `largest buffer${what}: ${mib(largest)} of ${mib(limit - SHARD_HEADROOM)} (${which})`,
    );
    await page.close();
  }, 120_000);

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
