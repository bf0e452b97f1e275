/**
 * The Train tab's memory check for a Hugging Face folder run: the folder's config.json read alone (no weights),
 * and the step's memory by term against where the run will train (train/broughtModel.ts runTarget): this
 * browser's WebGPU adapter (its maxBufferSize / maxStorageBufferBindingSize, and the stated total estimate) with
 * lab.backend webgpu, or auto on a hardware adapter that holds the step; else the page's CPU budget. The
 * trainer worker repeats the same check on its own adapter before it allocates anything; lab.memory_limit_mib
 * replaces the total where it is set.
 */

import type { AdapterStatus, Unavailable } from '../../engine/gpu/device';
import { type LlamaConfig, LlamaConfigError, parseLlamaConfig } from '../../engine/llama/config';
import type { MemoryFit, MemoryLimits } from '../../engine/llama/memoryFit';
import type { FolderReader } from '../../engine/onnx/hfFolder';
import { runAdapterLimits, runCpuLimits, runMemoryFit, runTarget } from '../../train/broughtModel';
import type { TrainConfig } from '../../train/config';
import { pageModelFolder, pageModelOf } from '../models/shippedModels';

/**
 * What one training step on the page's CPU engine may hold: 4 GiB, an estimate. The browser states no memory
 * limit for a worker (Chromium's performance.memory.jsHeapSizeLimit bounds the JS heap, not the typed arrays
 * the engine computes in, and navigator.deviceMemory is rounded and capped at 8); a tab's worker shares one
 * renderer process with the page's traces and charts, so a step beyond 4 GiB is refused rather than left to
 * crash the tab. The longest typed array is not checked here: it differs by browser (Chromium 156 refuses an
 * ArrayBuffer of 32 GiB), far above this budget. lab.memory_limit_mib replaces the budget.
 */
export const PAGE_CPU_BUDGET = 4 * 2 ** 30;
export const PAGE_CPU_LIMITS: Extract<MemoryLimits, { kind: 'cpu' }> = {
  kind: 'cpu',
  budget: PAGE_CPU_BUDGET,
  label: "page's CPU budget",
  budgetNote: 'an estimate: the browser states no memory limit for a page',
};

/** The label a WebGPU adapter's limits carry in the page's messages. */
export const PAGE_ADAPTER_LABEL = 'this WebGPU adapter';

/**
 * The limits a folder run's step is checked against in this page: the adapter's (webgpu; auto on a hardware
 * adapter that holds the step) or the CPU budget; an Error where lab.backend webgpu has no adapter, and null
 * while the page is still probing WebGPU for a run that would use it.
 */
export function pageLimits(
  cfg: TrainConfig,
  model: LlamaConfig,
  gpu: AdapterStatus | Unavailable | null,
): MemoryLimits | Error | null {
  const backend = cfg.lab.backend;
  const cpu = runCpuLimits(cfg, PAGE_CPU_LIMITS);
  if (backend === 'cpu') return cpu;
  if (gpu === null) return null;
  if (!gpu.available) return backend === 'webgpu' ? new Error(`lab.backend webgpu: ${gpu.reason}`) : cpu;
  // auto takes a hardware adapter only (as the trainer worker does)
  if (backend === 'auto' && gpu.isFallbackAdapter) return cpu;
  return runTarget(cfg, model, runAdapterLimits(cfg, gpu.limits, PAGE_ADAPTER_LABEL), cpu);
}

/** config.json of a folder, parsed as our Llama-family engines read it (errors name the field). */
export async function folderLlamaConfig(r: FolderReader): Promise<LlamaConfig> {
  if (!r.paths().includes('config.json')) throw new Error('config.json: is missing');
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(await r.bytes('config.json')));
  } catch (e) {
    throw new Error(`config.json: is not valid JSON (${(e as Error).message})`);
  }
  try {
    return parseLlamaConfig(raw as Record<string, unknown>);
  } catch (e) {
    if (e instanceof LlamaConfigError) throw new Error(`config.json: ${e.field}: ${e.detail}`);
    throw e;
  }
}

/**
 * The step's memory for the form's config on this model against `limits` (default: the page's CPU budget), or
 * why it cannot be stated (a bad LoRA key).
 */
export function pageMemoryFit(
  cfg: TrainConfig,
  model: LlamaConfig,
  limits: MemoryLimits = runCpuLimits(cfg, PAGE_CPU_LIMITS),
): MemoryFit | Error {
  try {
    return runMemoryFit(cfg, model, limits);
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

/**
 * One run's step memory in bytes where it can be estimated: a Hugging Face folder run (its config.json read
 * alone); null for the GPT-2 policy, whose step memory is not estimated, and when the folder cannot be read.
 */
export async function runMemoryEstimate(cfg: TrainConfig): Promise<number | null> {
  const named = pageModelOf(cfg.actor_rollout_ref.model.path);
  if (!named) return null;
  try {
    const fit = pageMemoryFit(cfg, await folderLlamaConfig(await pageModelFolder(named)));
    return fit instanceof Error ? null : fit.memory.total;
  } catch {
    // the run's own start reports the unreadable folder with its reason
    return null;
  }
}
