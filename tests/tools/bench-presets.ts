/**
 * `npm run bench:presets [-- FLAGS]`: every preset of the registry on several seeds (inline rollouts, CPU engine,
 * from the shipped SFT checkpoints), and per claim of each preset the difference arm − control of its statistic
 * on every seed, the mean, the 95% Student t interval and how many seeds agree with the expected sign. Writes
 * the evidence table (the registry's claim texts are derived from it) with the generating command and the
 * sha256 of the checkpoint each preset was measured from; presets not run keep their entry.
 *
 * Flags: --seeds LIST (0,1,2,3,4) --presets LIST (all) --steps N (the preset's own) --concurrency N (4)
 *   --out FILE (src/train/presetEvidence.json)
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { parseArgs, UsageError } from '../../src/cli/args';
import { sftCheckpointPath } from '../../src/train/models';
import {
  type ClaimEvidence,
  claimDifference,
  claimSentence,
  evaluateClaim,
  type PresetEvidence,
  type PresetEvidenceEntry,
  parsePresetEvidence,
} from '../../src/train/presetEvidence';
import { getPreset, listPresets, presetConfigs } from '../../src/train/presets';
import { runPresetInline } from './presetRun';

const root = resolve(import.meta.dirname, '../..');
const argv = process.argv.slice(2);
const { flags, positionals } = parseArgs(argv, {
  seeds: { type: 'string' },
  presets: { type: 'string' },
  steps: { type: 'number' },
  concurrency: { type: 'number' },
  out: { type: 'string' },
});
if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
const list = (v: unknown, d: string) =>
  String(v ?? d)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const seeds = list(flags.seeds, '0,1,2,3,4').map((s) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--seeds: '${s}' is not a non-negative integer`);
  return n;
});
if (new Set(seeds).size !== seeds.length) throw new UsageError('--seeds: a seed is listed twice');
const presets = flags.presets ? list(flags.presets, '').map(getPreset) : listPresets();
const steps = flags.steps as number | undefined;
if (steps !== undefined && (!Number.isInteger(steps) || steps < 1))
  throw new UsageError(`--steps must be a positive integer, got ${steps}`);
const concurrency = Number(flags.concurrency ?? 4);
const outPath = resolve(root, String(flags.out ?? 'src/train/presetEvidence.json'));

const existing: PresetEvidence =
  existsSync(outPath) && readFileSync(outPath, 'utf8').trim()
    ? parsePresetEvidence(JSON.parse(readFileSync(outPath, 'utf8')), outPath)
    : { presets: {} };
const outName = isAbsolute(String(flags.out ?? '')) ? outPath : relative(root, outPath);
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const f = (x: number | null) => (x === null ? '-' : x.toPrecision(3));

for (const preset of presets) {
  const [first] = presetConfigs(preset, { steps });
  const cfg = first.config;
  const modelPath = cfg.actor_rollout_ref.model.path;
  if (modelPath === 'init') throw new Error(`preset ${preset.slug} starts from 'init', not a checkpoint`);
  const ckPath = modelPath === 'sft' ? sftCheckpointPath(cfg.lab.harness) : modelPath;
  const ckFile = join(root, 'public', ckPath);
  if (!existsSync(ckFile)) throw new Error(`${ckFile} is missing (bash tests/tools/make-checkpoints.sh)`);
  const command =
    `npm run bench:presets -- --presets ${preset.slug} --seeds ${seeds.join(',')}` +
    (steps !== undefined ? ` --steps ${steps}` : '');
  const diffs = preset.claims.map(() => [] as (number | null)[]);
  for (const seed of seeds) {
    const t0 = Date.now();
    const runs = await runPresetInline(preset, { seed, steps, concurrency });
    const secs = ((Date.now() - t0) / 1000).toFixed(0);
    for (const [k, claim] of preset.claims.entries()) {
      const d = claimDifference(claim, runs);
      diffs[k].push(Number.isFinite(d) ? d : null);
      console.log(
        `${preset.slug} seed ${seed} (${secs} s): ${claim.id} ${claim.arm} − ${claim.control} = ${f(d)}`,
      );
    }
  }
  const claims: ClaimEvidence[] = preset.claims.map((c, k) => evaluateClaim(c, diffs[k]));
  const entry: PresetEvidenceEntry = {
    harness: cfg.lab.harness,
    checkpoint: { path: ckPath, sha256: sha256(ckFile) },
    seeds,
    steps: cfg.trainer.total_training_steps,
    command,
    claims,
  };
  existing.presets[preset.slug] = entry;
  for (const [k, c] of claims.entries())
    console.log(
      `${preset.slug} ${c.id}: mean ${f(c.mean)} [${f(c.lo)}, ${f(c.hi)}], ${c.agree}/${c.differences.length} seeds agree → ${c.holds ? 'holds' : 'does not hold'}\n  ${claimSentence(preset.claims[k], entry)}`,
    );
  // written after every preset, so a long sweep keeps what it measured
  const ordered: PresetEvidence = { presets: {} };
  for (const p of listPresets())
    if (existing.presets[p.slug]) ordered.presets[p.slug] = existing.presets[p.slug];
  writeFileSync(outPath, `${JSON.stringify(ordered, null, 2)}\n`);
  console.log(`wrote ${outName}`);
}
