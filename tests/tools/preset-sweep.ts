/**
 * The presets' dynamic effects across seeds: runs a preset's variants on each seed (inline, CPU engine, from
 * the shipped SFT checkpoints) and prints, per seed and variant, the change of each dynamic metric from the
 * first to the last step, then how many seeds show the expected direction. The robustness text of each preset
 * is written from this output.
 *
 *   npx tsx tests/tools/preset-sweep.ts PRESET [--seeds 0,1,2] [--steps N] [key=value…]
 */
import { applyDotlist, resolveTrainConfig, type TrainConfigPatch } from '../../src/train/config';
import { comparePresetRuns, type VariantHistory } from '../../src/train/presetMetrics';
import { getPreset } from '../../src/train/presets';
import { runPresetInline } from './presetRun';

/** The dynamic claim of each preset: metric, the variant where it should move, the direction, the control. */
const CLAIMS: Record<string, { metric: string; biased: string; control: string; up: boolean }[]> = {
  'length-bias': [
    { metric: 'preset/response_length/incorrect', biased: 'grpo', control: 'dr-grpo', up: true },
  ],
  'turn-count-bias': [
    {
      metric: 'lab/tool_calls_per_rollout',
      biased: 'transition-rows',
      control: 'per-rollout-mean',
      up: false,
    },
  ],
  'retokenization-drift': [
    { metric: 'critic/rewards/mean', biased: 'retokenize', control: 'engine-ids', up: false },
    { metric: 'critic/rewards/mean', biased: 'int8', control: 'int8-tis', up: false },
  ],
  staleness: [{ metric: 'critic/rewards/mean', biased: 'async', control: 'sync', up: false }],
  'merge-failures': [
    { metric: 'critic/rewards/mean', biased: 'sliding-window', control: 'clean', up: false },
  ],
};

function delta(h: VariantHistory, metric: string): number {
  const vals = h.steps
    .filter((s) => s.step > 0)
    .map((s) => s.data[metric])
    .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (vals.length < 2) return Number.NaN;
  // mean of the last half minus mean of the first half: less noisy than last − first
  const half = Math.floor(vals.length / 2);
  const m = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return m(vals.slice(vals.length - half)) - m(vals.slice(0, half));
}

async function main() {
  const args = process.argv.slice(2);
  const slug = args.shift();
  if (!slug) throw new Error('usage: preset-sweep.ts PRESET [--seeds 0,1,2] [--steps N] [key=value…]');
  const preset = getPreset(slug);
  let seeds = [0, 1, 2];
  let steps: number | undefined;
  const dot: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seeds') seeds = args[++i].split(',').map(Number);
    else if (args[i] === '--steps') steps = Number(args[++i]);
    else dot.push(args[i]);
  }
  const c = resolveTrainConfig(preset.base);
  applyDotlist(c, dot);
  const overrides = c as unknown as TrainConfigPatch;
  const claims = CLAIMS[slug] ?? [];
  const tally = claims.map(() => ({ held: 0, of: 0 }));
  for (const seed of seeds) {
    const t0 = Date.now();
    const runs = await runPresetInline(preset, { seed, steps, overrides, concurrency: 4 });
    const s = ((Date.now() - t0) / 1000).toFixed(0);
    // the preset's own metrics: mean over the steps per variant
    for (const row of comparePresetRuns(preset.metrics, runs))
      console.log(
        `seed ${seed} ${row.metric}: ${row.cells.map((c) => `${c.variant} ${Number.isFinite(c.mean) ? c.mean.toPrecision(3) : '-'}`).join('  ')}`,
      );
    for (const [k, cl] of claims.entries()) {
      const d = Object.fromEntries(runs.map((r) => [r.variant, delta(r, cl.metric)]));
      const cells = runs.map((r) => `${r.variant} ${d[r.variant].toFixed(3)}`).join('  ');
      const diff = d[cl.biased] - d[cl.control];
      const held = cl.up ? diff > 0 : diff < 0;
      if (Number.isFinite(diff)) {
        tally[k].of++;
        if (held) tally[k].held++;
      }
      console.log(
        `seed ${seed} (${s}s) Δ${cl.metric}: ${cells}  → ${cl.biased} − ${cl.control} = ${diff.toFixed(3)} ${held ? 'as expected' : 'NOT as expected'}`,
      );
    }
  }
  for (const [k, cl] of claims.entries())
    console.log(
      `${slug}: ${cl.metric} ${cl.up ? 'rises' : 'falls'} more under ${cl.biased} than ${cl.control} on ${tally[k].held}/${tally[k].of} seeds (${dot.join(' ') || 'preset scale'}${steps ? `, ${steps} steps` : ''})`,
    );
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
