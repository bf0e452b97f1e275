/**
 * A shipped (or given) checkpoint's validation metrics at temperature 1, with the reward per task level and the
 * degenerate-policy check: `npx tsx tests/tools/eval-checkpoint.ts --harness H [--checkpoint FILE] [--level L]
 * [--val-tasks N=16] [--n K=4] [--seed S=0]`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from '../../src/cli/args';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../src/engine/checkpoint';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { isHarnessName } from '../../src/harness/registry';
import { resolveTrainConfig } from '../../src/train/config';
import { createLocalRun } from '../../src/train/local';
import { inlineRunner } from '../../src/train/source';

const { flags } = parseArgs(process.argv.slice(2), {
  harness: { type: 'string' },
  checkpoint: { type: 'string' },
  level: { type: 'number' },
  'val-tasks': { type: 'number' },
  n: { type: 'number' },
  seed: { type: 'number' },
});
const harness = String(flags.harness ?? '');
if (!isHarnessName(harness)) {
  console.error(`--harness must name a harness, got '${harness}'`);
  process.exit(2);
}
const file = String(flags.checkpoint ?? `public/checkpoints/${harness}.safetensors`);
const ck = decodeCheckpoint(new Uint8Array(readFileSync(file)), file);
const n = Number(flags.n ?? 4);
const config = resolveTrainConfig({
  lab: {
    harness,
    seed: Number(flags.seed ?? 0),
    train_tasks: 8,
    val_tasks: Number(flags['val-tasks'] ?? 16),
    task_level: flags.level === undefined ? null : Number(flags.level),
    keep_traces: false,
  },
  data: { train_batch_size: 8 },
  actor_rollout_ref: { rollout: { val_kwargs: { n, temperature: 1, do_sample: true } } },
  trainer: { total_training_steps: 1, test_freq: 0, val_before_train: false },
});
const local = createLocalRun({
  config,
  policy: new CpuPolicy(ck.config, {}, ck.params),
  tokenizer: loadTokenizer('policy'),
  makeRunner: (h) => inlineRunner(h),
});
const t0 = performance.now();
try {
  const m = await local.run.validate(0);
  const keys = Object.keys(m).filter((k) => /reward|degenerate|turn_count|tool_calls|pass@/.test(k));
  console.log(`${harness} ${file}: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  for (const k of keys) console.log(`  ${k} ${m[k].toFixed(3)}`);
} finally {
  local.close();
}
