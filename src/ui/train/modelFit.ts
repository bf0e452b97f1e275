/**
 * The Train tab's memory check for a Hugging Face folder run: the page's stated CPU budget (the trainer worker
 * runs a folder on the CPU engine), the folder's config.json read alone (no weights), and the step's memory by
 * term against the budget (engine/llama/memoryFit.ts through train/broughtModel.ts's runMemoryFit, the check the
 * worker repeats before it allocates anything).
 */
import { type LlamaConfig, LlamaConfigError, parseLlamaConfig } from '../../engine/llama/config';
import type { MemoryFit, MemoryLimits } from '../../engine/llama/memoryFit';
import type { FolderReader } from '../../engine/onnx/hfFolder';
import { runMemoryFit } from '../../train/broughtModel';
import type { TrainConfig } from '../../train/config';
import { pageModelFolder, pageModelOf } from '../models/shippedModels';

/**
 * What one training step in the page may hold: 4 GiB. A tab's worker is one renderer process; Chromium's
 * per-renderer heap and ArrayBuffer allowance on a desktop is a few GiB, and the page also holds the run's
 * traces and charts, so a step beyond 4 GiB is refused rather than left to crash the tab.
 */
export const PAGE_CPU_BUDGET = 4 * 2 ** 30;
export const PAGE_CPU_LIMITS: MemoryLimits = {
  kind: 'cpu',
  budget: PAGE_CPU_BUDGET,
  label: "page's CPU budget",
};

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

/** The step's memory for the form's config on this model, or why it cannot be stated (a bad LoRA key). */
export function pageMemoryFit(cfg: TrainConfig, model: LlamaConfig): MemoryFit | Error {
  try {
    return runMemoryFit(cfg, model, PAGE_CPU_LIMITS);
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
