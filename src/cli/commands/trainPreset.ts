/**
 * `lab train --preset NAME`: a preset's variants (src/train/presets.ts) run one after another on the same
 * seed, each as a `lab train` run in its own sub-folder of --out, then a comparison table of the preset's
 * metrics per variant (first → last step, mean), printed and written as comparison.json. Config flags and
 * `key=value` overrides apply to the preset's base before each variant's own settings.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type TrainConfig, TrainConfigError } from '../../train/config';
import { sftCheckpointPath } from '../../train/models';
import { comparePresetRuns, formatComparison, readVariantHistory } from '../../train/presetMetrics';
import {
  getPreset,
  listPresets,
  presetBaseConfig,
  presetConfigs,
  presetRobustness,
  UnknownPresetError,
} from '../../train/presets';
import { UsageError } from '../args';
import { dirStorage } from '../runStorage';
import { loadTokenizer } from '../tokenizers';

export const presetUsage = `lab train --preset NAME|list [--out DIR] [--steps N] [--seed S] [FLAGS…] [key=value…]
  --preset NAME      run a preset's variants on one seed, one after another, into DIR/<variant>/, then print
                     the comparison of its metrics (also DIR/comparison.json); 'list' lists the presets
  --steps N          training steps of every variant (trainer.total_training_steps)
 config flags and key=value overrides apply to the preset's base; each variant's own settings win over them.`;

const PUBLIC = fileURLToPath(new URL('../../../public/', import.meta.url));

/** sha256 of the checkpoint a run starts from (undefined for a seeded init or a URL). */
function checkpointSha256(config: TrainConfig): string | undefined {
  const path = config.actor_rollout_ref.model.path;
  if (path === 'init' || /^[a-z]+:\/\//.test(path)) return undefined;
  const p = path === 'sft' ? sftCheckpointPath(config.lab.harness) : path;
  // as the run reads it: absolute, else relative to the working folder, else to public/
  const file = isAbsolute(p) || existsSync(p) ? p : join(PUBLIC, p);
  return existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : undefined;
}

export function listPresetsText(): string {
  return listPresets()
    .map(
      (p) =>
        `${p.slug.padEnd(22)}${p.title}\n${' '.repeat(22)}variants: ${p.variants.map((v) => `${v.name} (${v.label})`).join('; ')}`,
    )
    .join('\n');
}

export interface PresetArgs {
  preset: string;
  out?: string;
  steps?: string;
  quiet: boolean;
  /** applies the config flags and overrides to a base (train.ts's configFromArgs) */
  withFlags: (base: TrainConfig) => TrainConfig;
  /** runs one `lab train` with this config into this folder; returns its exit code */
  runOne: (config: TrainConfig, out: string) => Promise<number>;
}

export async function runTrainPreset(a: PresetArgs): Promise<number> {
  if (a.preset === 'list') {
    console.log(listPresetsText());
    return 0;
  }
  let preset: ReturnType<typeof getPreset>;
  try {
    preset = getPreset(a.preset);
  } catch (e) {
    if (e instanceof UnknownPresetError) throw new UsageError(`--preset: ${e.message}`);
    throw e;
  }
  let steps: number | undefined;
  if (a.steps !== undefined) {
    steps = /^\d+$/.test(a.steps) ? Number(a.steps) : Number.NaN;
    if (!Number.isInteger(steps) || steps < 1)
      throw new UsageError(`--steps must be an integer ≥ 1, got '${a.steps}'`);
  }
  let runs: ReturnType<typeof presetConfigs>;
  try {
    runs = presetConfigs(preset, { base: a.withFlags(presetBaseConfig(preset)), steps });
  } catch (e) {
    if (e instanceof TrainConfigError) throw new UsageError(e.message);
    throw e;
  }
  const seed = runs[0].config.lab.seed;
  const out = resolve(a.out ?? join('runs', `preset-${preset.slug}-${seed}`));
  // a preset's comparison reads each variant's whole folder: an earlier run there would be mixed into it
  for (const r of runs) {
    const dir = join(out, r.variant.name);
    if (existsSync(join(dir, 'metrics.jsonl')))
      throw new UsageError(
        `--out: ${dir} already holds a run (metrics.jsonl); choose another --out or remove it`,
      );
  }
  mkdirSync(out, { recursive: true });
  if (!a.quiet)
    console.log(
      `preset ${preset.slug}: ${preset.title}; ${runs.length} variants (${runs.map((r) => r.variant.name).join(', ')}), seed ${seed} → ${out}`,
    );
  for (const r of runs) {
    if (!a.quiet) console.log(`\n== ${r.variant.name}: ${r.variant.label}`);
    const code = await a.runOne(r.config, join(out, r.variant.name));
    if (code !== 0) {
      console.error(`lab train --preset ${preset.slug}: variant ${r.variant.name} exited with ${code}`);
      return code;
    }
  }
  const tok = loadTokenizer('policy');
  const histories = [];
  for (const r of runs)
    histories.push(
      await readVariantHistory(r.variant.name, r.config, dirStorage(join(out, r.variant.name)), tok),
    );
  const table = comparePresetRuns(preset.metrics, histories);
  writeFileSync(
    join(out, 'comparison.json'),
    `${JSON.stringify({ preset: preset.slug, seed, variants: runs.map((r) => r.variant.name), rows: table }, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`,
  );
  console.log(
    `\npreset ${preset.slug} (seed ${seed}): first → last step (mean over steps)\n${formatComparison(table)}`,
  );
  console.log(
    `\nlook for: ${preset.lookFor}\nrobustness: ${presetRobustness(preset, checkpointSha256(runs[0].config))}`,
  );
  return 0;
}
