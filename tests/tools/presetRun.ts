/**
 * Runs a preset's variants in this process (inline rollouts, CPU engine, memory storage) and returns each
 * variant's history with the preset metrics merged in: the shared path of the preset tests and the seed
 * sweep (tests/tools/bench-presets.ts).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import type { TrainConfigPatch } from '../../src/train/config';
import { createLocalRun } from '../../src/train/local';
import { initialWeights } from '../../src/train/models';
import { readVariantHistory, type VariantHistory } from '../../src/train/presetMetrics';
import { presetConfigs, type TrainPreset } from '../../src/train/presets';
import { inlineRunner } from '../../src/train/source';
import { MemoryStorage } from '../../src/train/storage';

const PUBLIC = fileURLToPath(new URL('../../public/', import.meta.url));

export async function runPresetInline(
  preset: TrainPreset,
  o: { overrides?: TrainConfigPatch; steps?: number; seed?: number; concurrency?: number } = {},
): Promise<VariantHistory[]> {
  const tok = loadTokenizer('policy');
  const out: VariantHistory[] = [];
  for (const { variant, config } of presetConfigs(preset, o)) {
    const w = await initialWeights(
      config,
      tok.vocabSize,
      async (p) => new Uint8Array(await readFile(PUBLIC + p)),
    );
    const storage = new MemoryStorage();
    const local = createLocalRun({
      config,
      policy: new CpuPolicy(w.config, {}, w.params),
      tokenizer: tok,
      storage,
      makeRunner: (h) => inlineRunner(h, { concurrency: o.concurrency }),
    });
    try {
      await local.run.run();
    } finally {
      local.close();
    }
    out.push(await readVariantHistory(variant.name, config, storage, tok));
  }
  return out;
}
