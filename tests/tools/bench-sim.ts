/**
 * `npm run bench:sim`: how long the scheduling simulator takes on the 128-GPU, 400-step published scenario in
 * each of its modes (median of --repeat runs, after one warm-up), beside the same run walked one event at a time
 * (`walk: 'events'`, the results are the same), and the figures the tests assert (published,
 * simulated, error). `--refit` also refits the stored response medians of the published scenarios. `--hash`
 * only prints a sha256 of every scenario × mode's full result (12 steps, step 2 traced), so a change meant to keep
 * the results can be checked by diffing the output before and after.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from '../../src/cli/args';
import {
  CALIBRATION_TARGETS,
  calibrateMedian,
  getScenario,
  SCENARIOS,
  SIM_MODES,
  simulate,
} from '../../src/core/sim';

const { flags } = parseArgs(process.argv.slice(2), {
  repeat: { type: 'number' },
  refit: { type: 'bool' },
  hash: { type: 'bool' },
});
if (flags.hash) {
  for (const sc of SCENARIOS)
    for (const mode of SIM_MODES) {
      let line: string;
      try {
        const r = simulate({ ...sc.config(mode), steps: 12, trace_step: 2 });
        line = createHash('sha256').update(JSON.stringify(r)).digest('hex');
      } catch (e) {
        line = `error: ${(e as Error).message}`;
      }
      console.log(`${sc.name} ${mode} ${line}`);
    }
  process.exit(0);
}
const repeat = Number(flags.repeat ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

console.log('1. 128 GPUs, 400 steps (verl-fully-async-7b-128: 512 prompts × 16 per step)');
for (const mode of ['sync', 'fully_async', 'one_step_off', 'separate_async', 'colocate_async'] as const) {
  const sc = getScenario('verl-fully-async-7b-128');
  const cfg = { ...sc.config(mode), steps: 400 };
  if (mode === 'separate_async') cfg.schedule = { ...cfg.schedule, parameter_sync_step: 16 };
  simulate({ ...cfg, steps: 20 });
  const times: number[] = [];
  const cpu: number[] = [];
  let trajectories = 0;
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const r = simulate(cfg);
    const c = process.cpuUsage(c0);
    times.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
    trajectories = r.steps.reduce((a, s) => a + s.trained_trajectories, 0);
  }
  const ms = median(times);
  // the peer in the same run: the same simulation one event-queue round trip per replica event
  const peer: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    simulate(cfg, { walk: 'events' });
    peer.push(performance.now() - t0);
  }
  // on a shared machine the wall time also counts waiting for a core; the CPU time is the process's own
  console.log(
    `  ${mode.padEnd(15)} ${ms.toFixed(0)} ms wall, ${median(cpu).toFixed(0)} ms CPU (${trajectories} trajectories, ${((1e6 * ms) / trajectories).toFixed(0)} ns each); one event at a time ${median(peer).toFixed(0)} ms (${(median(peer) / ms).toFixed(2)}×)`,
  );
}

console.log('\n2. published figures (400 steps)');
for (const sc of SCENARIOS.filter((s) => s.published)) {
  const [a, b] = sc.modes;
  const ra = simulate(sc.config(a));
  const rb = simulate(sc.config(b));
  const sim = ra.summary.total_s / rb.summary.total_s;
  const pub = sc.published?.speedup ?? Number.NaN;
  console.log(
    `  ${sc.name.padEnd(32)} published ${pub.toFixed(3)}× simulated ${sim.toFixed(3)}× error ${(100 * (sim / pub - 1)).toFixed(1)}%; ${b} wait ${(rb.steps.slice(1).reduce((x, s) => x + s.phases.gen, 0) / (rb.steps.length - 1)).toFixed(1)} s/step (published ${sc.published?.runs[1].gen_s}), staleness ${rb.summary.mean_staleness_worst.toFixed(3)}${sc.published?.notes ? `; ${sc.published.notes}` : ''}`,
  );
  const win = sc.published?.window_step_s;
  if (win) {
    // what one stationary workload per run cannot follow: the documented step time by 100-step window
    const [base, fast] = win;
    console.log(
      `    published by 100-step window: ${a} ${base.map((x) => x.toFixed(0)).join(' / ')} s/step, ${b} ${fast.map((x) => x.toFixed(0)).join(' / ')} s/step, speed-up ${base.map((x, i) => (x / fast[i]).toFixed(2)).join(' / ')}×; simulated ${(ra.summary.total_s / ra.steps.length).toFixed(0)} / ${(rb.summary.total_s / rb.steps.length).toFixed(0)} s/step`,
    );
  }
}

if (flags.refit) {
  console.log('\n3. refit response medians');
  for (const t of CALIBRATION_TARGETS) {
    const base = getScenario(t.name).config('sync');
    console.log(`  ${t.name}: ${calibrateMedian(base, t.gen_s)} (stored ${base.workload.response_median})`);
  }
}
