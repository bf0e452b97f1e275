/**
 * How robust a learning test is: its exact run (tests/unit/train/learningRun.ts) on several run seeds, the val
 * reward before and after each. `npx tsx tests/tools/learning-sweep.ts [--case instruction-short] [--seeds 0,1,2,3,4,5]`.
 */
import { parseArgs } from '../../src/cli/args';
import { isLearningCase, LEARNING_CASES, learningRun } from '../unit/train/learningRun';

const { flags } = parseArgs(process.argv.slice(2), {
  seeds: { type: 'string' },
  case: { type: 'string' },
});
const name = String(flags.case ?? 'instruction-short');
if (!isLearningCase(name)) {
  console.error(`--case must be one of ${Object.keys(LEARNING_CASES).join(', ')}, got '${name}'`);
  process.exit(2);
}
const steps = LEARNING_CASES[name].steps;
const seeds = String(flags.seeds ?? '0,1,2,3,4,5')
  .split(',')
  .map((s) => Number(s.trim()));
if (seeds.some((s) => !Number.isInteger(s) || s < 0)) {
  console.error('--seeds must be a comma list of non-negative integers');
  process.exit(2);
}
const rises: number[] = [];
for (const seed of seeds) {
  const t0 = performance.now();
  const r = await learningRun(name, seed);
  rises.push(r.after - r.before);
  console.log(
    `seed ${seed}: val reward ${r.before.toFixed(3)} → ${r.after.toFixed(3)} after ${steps} steps (${(r.after - r.before >= 0 ? '+' : '') + (r.after - r.before).toFixed(3)}, ${((performance.now() - t0) / 1000).toFixed(0)} s)`,
  );
}
const sorted = [...rises].sort((a, b) => a - b);
console.log(
  `learning sweep ${name}: ${rises.filter((x) => x > 0).length}/${rises.length} seeds up; smallest rise ${sorted[0].toFixed(3)}, median ${sorted[Math.floor(sorted.length / 2)].toFixed(3)}`,
);
