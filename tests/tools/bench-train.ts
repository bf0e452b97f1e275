/**
 * `npm run bench:train [-- FLAGS]`: the training loop measured.
 *   1. phases   per backend (cpu, dawn = WebGPU on this machine's adapter via Dawn): median seconds of each phase
 *               of an RL step (gen, pause, old_log_prob, adv, update_actor, update_weights, resume), tokens/s of
 *               generation and of training.
 *   rollout    rollout engines in the loop (cpu trainer, --phase-harness): the trainer's own colocated engine vs
 *               onnxruntime-web (wasm EP) and transformers.js (onnxruntime-node) at f32 / f16 / int8 weights, the
 *               same seed and weights: median step, gen and weight-sync seconds (re-export + reload), generation
 *               tokens/s and its ratio to the colocated engine, and the mismatch each pair produces (|Δ log-prob|
 *               mean / max / share > 0.1, verl's rollout_probs_diff, rollout_corr/kl).
 *   2. sync vs async on the same seed (cpu): seconds per step, idle drain, staleness, spanning rollouts.
 *   3. learning from the shipped SFT checkpoint: val reward every --val-every steps of RL vs SFT-only (the same
 *               number of further supervised steps on the expert), per harness and seed; steps to a threshold.
 *   4. peer     one update step of the same model on the same batch in PyTorch on the CPU
 *               (python/bench_train_peer.py, HARNESS_LAB_PEER_PYTHON or --peer): tokens/s and the ratio, and the
 *               peer's loss and gradient norm against ours (it must compute the same step).
 *   --model SHAPE|DIR[,…] [--seq T] [--r 16] [--alpha 32] [--modes lora,full] [--repeat R (1)] [--threads N (1)]:
 *               training steps of the Llama-family CPU engine with LoRA and with full fine-tuning against PyTorch +
 *               PEFT, the median of R in a row (benchLlamaTrain.ts)
 * Flags: --harness LIST (learning; default instruction-short) --steps N (learning, default 20) --val-every K (5)
 *   --seeds LIST (0) --phase-steps N (3) --backends cpu,dawn --sections phases,rollout,async,learning,peer
 *   --phase-harness H (instruction-short) --peer PYTHON --repeat R (peer, 3) --threads N (the peer's torch threads, 1;
 *   our engine runs on one thread) --json FILE
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from '../../src/cli/args';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { nodeGpuContext, reexecWithSwiftShader } from '../../src/cli/webgpuNode';
import { sftGradient } from '../../src/core/pipeline';
import { decodeCheckpoint } from '../../src/engine/checkpoint';
import { fastKernel } from '../../src/engine/cpu/simd';
import type { GpuContext } from '../../src/engine/gpu/device';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { GpuPolicy } from '../../src/engine/policy/gpuPolicy';
import type { PolicyEngine } from '../../src/engine/policy/types';
import { isHarnessName } from '../../src/harness/registry';
import { resolveTrainConfig, type TrainConfig, type TrainConfigPatch } from '../../src/train/config';
import type { TrainEvent } from '../../src/train/events';
import { layoutRows, scatterWeights } from '../../src/train/layout';
import { createLocalRun } from '../../src/train/local';
import { sftCheckpointPath } from '../../src/train/models';
import { buildStepRows } from '../../src/train/objective';
import { hashSeed } from '../../src/train/rng';
import { nodeRolloutEnv } from '../../src/train/rolloutEnvNode';
import { expertRollouts, expertRows, sftTrain } from '../../src/train/sft';
import { measuredStepSeconds, predictLocalSteps } from '../../src/train/simFit';
import { inlineRunner } from '../../src/train/source';
import type { PhaseName } from '../../src/train/step';
import { benchLlamaTrain } from './benchLlamaTrain';

// the Llama-family engine's training step on a Hugging Face folder (CPU, vs PyTorch + PEFT): its own flags
if (process.argv.includes('--model') || process.argv.some((a) => a.startsWith('--model=')))
  process.exit(await benchLlamaTrain(process.argv.slice(2)));

const { flags } = parseArgs(process.argv.slice(2), {
  harness: { type: 'string' },
  steps: { type: 'number' },
  'val-every': { type: 'number' },
  seeds: { type: 'string' },
  'phase-steps': { type: 'number' },
  'phase-harness': { type: 'string' },
  backends: { type: 'string' },
  sections: { type: 'string' },
  peer: { type: 'string' },
  repeat: { type: 'number' },
  threads: { type: 'number' },
  json: { type: 'string' },
  events: { type: 'string' },
});
const list = (v: unknown, d: string) =>
  String(v ?? d)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const sections = new Set(list(flags.sections, 'phases,rollout,async,learning,peer'));
const backends = list(flags.backends, 'cpu,dawn');
const harnesses = list(flags.harness, 'instruction-short');
const seeds = list(flags.seeds, '0').map(Number);
const steps = Number(flags.steps ?? 20);
const valEvery = Number(flags['val-every'] ?? 5);
const phaseSteps = Number(flags['phase-steps'] ?? 3);
const phaseHarness = String(flags['phase-harness'] ?? 'instruction-short');
const peerPython = (flags.peer as string | undefined) ?? process.env.HARNESS_LAB_PEER_PYTHON;
const repeat = Number(flags.repeat ?? 3);
const peerThreads = Number(flags.threads ?? 1);
if (!Number.isInteger(peerThreads) || peerThreads < 1)
  throw new Error('--threads must be a positive integer');
for (const h of [...harnesses, phaseHarness])
  if (!isHarnessName(h)) throw new Error(`unknown harness '${h}'`);

if (backends.includes('dawn')) {
  const child = reexecWithSwiftShader();
  if (child !== null) process.exit(child);
}

const root = resolve(import.meta.dirname, '../..');
const tok = loadTokenizer('policy');
const report: Record<string, unknown> = {};
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length
    ? s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
    : Number.NaN;
};
const collect = (per: Record<string, number[]>, m: Record<string, number>) => {
  for (const [k, v] of Object.entries(m)) {
    const l = per[k] ?? [];
    l.push(v);
    per[k] = l;
  }
};
const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));

function sftWeights(harness: string) {
  const path = join(root, 'public', sftCheckpointPath(harness));
  if (!existsSync(path)) throw new Error(`${path} is missing (bash tests/tools/make-checkpoints.sh)`);
  return decodeCheckpoint(new Uint8Array(readFileSync(path)), path);
}

/** The bench's RL configuration per harness (small batches: a CPU, not a cluster). */
function benchConfig(harness: string, seed: number, patch: TrainConfigPatch = {}): TrainConfig {
  const short = harness === 'instruction-short';
  return resolveTrainConfig({
    ...patch,
    lab: {
      harness: harness as TrainConfig['lab']['harness'],
      seed,
      train_tasks: 256,
      val_tasks: short ? 32 : 16,
      keep_traces: false,
      ...patch.lab,
    },
    data: { train_batch_size: 8, max_response_length: short ? 48 : 256, ...patch.data },
    actor_rollout_ref: {
      ...patch.actor_rollout_ref,
      actor: {
        ppo_mini_batch_size: 4,
        optim: { lr: 1e-4, weight_decay: 0, betas: [0.9, 0.99] },
        ...patch.actor_rollout_ref?.actor,
      },
      rollout: {
        n: 4,
        val_kwargs: { n: short ? 4 : 2, temperature: 1, do_sample: true },
        ...patch.actor_rollout_ref?.rollout,
      },
    },
    trainer: { total_training_steps: steps, test_freq: 0, val_before_train: false, ...patch.trainer },
  });
}

const gpuBox: { ctx: GpuContext | null } = { ctx: null };
async function engine(
  backend: string,
  config: ReturnType<typeof sftWeights>['config'],
  params: Float32Array,
): Promise<PolicyEngine> {
  if (backend === 'cpu') return new CpuPolicy(config, {}, params);
  gpuBox.ctx ??= await nodeGpuContext();
  return GpuPolicy.create(gpuBox.ctx, config, {}, params);
}

// ── 1. phases per backend ─────────────────────────────────────────────────────────────────────────────────
if (sections.has('phases')) {
  const ck = sftWeights(phaseHarness);
  const rows: Record<string, unknown>[] = [];
  console.log(
    `\n1. phases of an RL step: ${phaseHarness}, ${phaseSteps} steps (median), 8 tasks × 4 rollouts`,
  );
  for (const backend of backends) {
    let policy: PolicyEngine;
    try {
      policy = await engine(backend, ck.config, ck.params);
    } catch (e) {
      console.log(`  ${backend}: not run (${(e as Error).message.split('\n')[0]})`);
      continue;
    }
    const cfg = benchConfig(phaseHarness, 0, { trainer: { total_training_steps: phaseSteps } });
    const local = createLocalRun({ config: cfg, policy, tokenizer: tok, makeRunner: (h) => inlineRunner(h) });
    const per: Record<string, number[]> = {};
    for (let s = 0; s < phaseSteps; s++) {
      const { metrics } = await local.run.runStep();
      collect(per, metrics);
    }
    local.close();
    policy.dispose();
    const m = (k: string) => median(per[k] ?? []);
    const phases: PhaseName[] = [
      'gen',
      'pause',
      'old_log_prob',
      'adv',
      'update_actor',
      'update_weights',
      'resume',
    ];
    const row: Record<string, number | string> = {
      backend: backend === 'dawn' ? `dawn (${gpuBox.ctx?.status.architecture ?? '?'})` : 'cpu',
      ...Object.fromEntries(phases.map((p) => [p, m(`timing_s/${p}`)])),
      step: m('timing_s/step'),
      gen_tokens_per_s: m('lab/gen_tokens_per_s'),
      train_tokens_per_s: m('lab/train_tokens_per_s'),
    };
    rows.push(row);
    console.log(
      `  ${String(row.backend).padEnd(20)} step ${f(row.step as number)} s = ${phases.map((p) => `${p} ${f(row[p] as number)}`).join(', ')}; gen ${f(row.gen_tokens_per_s as number, 0)} tok/s, train ${f(row.train_tokens_per_s as number, 0)} tok/s`,
    );
  }
  report.phases = rows;
}

// ── rollout engines in the loop ────────────────────────────────────────────────────────────────────────────
if (sections.has('rollout')) {
  const ck = sftWeights(phaseHarness);
  console.log(
    `\nrollout engines in the loop: ${phaseHarness}, cpu trainer, ${phaseSteps} steps (median; mismatch: max over steps for max), 8 tasks × 4 rollouts`,
  );
  const choices: [string, string][] = [
    ['policy', 'f32'],
    ...['onnxruntime-web', 'transformers.js'].flatMap((n) =>
      ['f32', 'f16', 'int8'].map((p): [string, string] => [n, p]),
    ),
  ];
  const rows: Record<string, number | string>[] = [];
  let colocatedGen = Number.NaN;
  const env = nodeRolloutEnv();
  for (const [name, precision] of choices) {
    const policy = new CpuPolicy(ck.config, {}, ck.params);
    const cfg = benchConfig(phaseHarness, 0, {
      lab: { rollout_precision: precision as TrainConfig['lab']['rollout_precision'] },
      actor_rollout_ref: { rollout: { name } },
      trainer: { total_training_steps: phaseSteps },
    });
    const local = createLocalRun({
      config: cfg,
      policy,
      tokenizer: tok,
      rolloutEnv: env,
      makeRunner: (h) => inlineRunner(h),
    });
    const per: Record<string, number[]> = {};
    try {
      for (let s = 0; s < phaseSteps; s++) collect(per, (await local.run.runStep()).metrics);
    } catch (e) {
      console.log(`  ${name} ${precision}: not run (${(e as Error).message.split('\n')[0]})`);
      continue;
    } finally {
      local.close();
      policy.dispose();
    }
    const m = (k: string) => median(per[k] ?? []);
    const mx = (k: string) => Math.max(...(per[k] ?? [Number.NaN]));
    const gen = m('lab/gen_tokens_per_s');
    if (name === 'policy') colocatedGen = gen;
    const row = {
      engine: name === 'policy' ? 'policy (colocated)' : name,
      weights: precision,
      step_s: m('timing_s/step'),
      gen_s: m('timing_s/gen'),
      update_weights_s: m('timing_s/update_weights'),
      export_s: m('lab/weight_sync/export_s'),
      load_s: m('lab/weight_sync/load_s'),
      sync_mb: m('lab/weight_sync/bytes') / 1e6,
      gen_tokens_per_s: gen,
      gen_vs_colocated: gen / colocatedGen,
      logprob_diff_mean: m('lab/rollout_logprob_diff/mean'),
      logprob_diff_max: mx('lab/rollout_logprob_diff/max'),
      frac_gt_0_1: m('lab/rollout_logprob_diff/frac_gt_0.1'),
      probs_diff_mean: m('training/rollout_probs_diff_mean'),
      probs_diff_max: mx('training/rollout_probs_diff_max'),
      rollout_corr_kl: m('rollout_corr/kl'),
    };
    rows.push(row);
    const e = (x: number) => (Number.isFinite(x) ? x.toExponential(2) : '-');
    console.log(
      `  ${`${row.engine} ${precision}`.padEnd(24)} step ${f(row.step_s)} s, gen ${f(row.gen_s)} s, update_weights ${f(row.update_weights_s, 3)} s (export ${f(row.export_s, 3)}, load ${f(row.load_s, 3)}, ${f(row.sync_mb)} MB); gen ${f(gen, 0)} tok/s = ${f(row.gen_vs_colocated)}x colocated; |Δ lp| mean ${e(row.logprob_diff_mean)} max ${e(row.logprob_diff_max)} >0.1 ${(100 * row.frac_gt_0_1).toFixed(2)}%; probs_diff mean ${e(row.probs_diff_mean)} max ${e(row.probs_diff_max)}; rollout_corr/kl ${e(row.rollout_corr_kl)}`,
    );
  }
  report.rollout = rows;
}

// ── 2. sync vs async ───────────────────────────────────────────────────────────────────────────────────────
if (sections.has('async')) {
  const ck = sftWeights(phaseHarness);
  console.log(
    `\n2. sync vs async on the same seed (cpu, ${phaseHarness}, ${phaseSteps} steps, 2 workers' worth of concurrency)`,
  );
  const rows: Record<string, unknown>[] = [];
  const timelines: Partial<Record<'sync' | 'async', TrainEvent[]>> = {};
  for (const mode of ['sync', 'async'] as const) {
    const policy = new CpuPolicy(ck.config, {}, ck.params);
    const cfg = benchConfig(phaseHarness, 0, {
      trainer: { total_training_steps: phaseSteps },
      agentlightning: { async_rollout: { enabled: mode === 'async', async_train_batch_size: 12 } },
    });
    const events: TrainEvent[] = [];
    const local = createLocalRun({
      config: cfg,
      policy,
      tokenizer: tok,
      makeRunner: (h) => inlineRunner(h, { concurrency: 4 }),
      onEvent: (e) => events.push(e),
    });
    const t0 = performance.now();
    const per: Record<string, number[]> = {};
    for (let s = 0; s < phaseSteps; s++) {
      const { metrics } = await local.run.runStep();
      collect(per, metrics);
    }
    const wall = (performance.now() - t0) / 1000;
    local.close();
    timelines[mode] = events;
    if (flags.events) {
      mkdirSync(String(flags.events), { recursive: true });
      writeFileSync(
        join(String(flags.events), `local-${mode}.jsonl`),
        `${events
          .filter((e) => e.type === 'phase' || e.type === 'rollout' || e.type === 'step')
          .map((e) => JSON.stringify(e))
          .join('\n')}\n`,
      );
    }
    const sum = (k: string) => (per[k] ?? []).reduce((a, b) => a + b, 0);
    const row = {
      mode,
      s_per_step: wall / phaseSteps,
      gen_s: median(per['timing_s/gen'] ?? []),
      drain_s: median(per['training/async/proxy_drain_seconds'] ?? []),
      staleness_call_mean: median(per['lab/staleness/call_mean'] ?? []),
      spanning_rollouts: sum('lab/n_rollouts_spanning_versions'),
      reward: median(per['critic/rewards/mean'] ?? []),
    };
    rows.push(row);
    console.log(
      `  ${mode.padEnd(6)} ${f(row.s_per_step)} s/step (gen ${f(row.gen_s)} s, drain ${f(row.drain_s, 3)} s), staleness ${f(row.staleness_call_mean)} versions/call, ${row.spanning_rollouts} rollouts spanning versions, train reward ${f(row.reward, 3)}`,
    );
  }
  report.async = rows;
  // the scheduling simulator fed the sync run's measured phases, predicting both modes' step times
  if (timelines.sync && timelines.async) {
    const cfgOf = (mode: 'sync' | 'async') =>
      benchConfig(phaseHarness, 0, {
        trainer: { total_training_steps: phaseSteps },
        agentlightning: { async_rollout: { enabled: mode === 'async', async_train_batch_size: 12 } },
      });
    const p = predictLocalSteps(timelines.sync, cfgOf('sync'), cfgOf('async'), { concurrency: 4 });
    const meas = (es: TrainEvent[]) => measuredStepSeconds(es);
    const ms = meas(timelines.sync);
    const ma = meas(timelines.async);
    console.log(
      `  simulated from the sync run's phases: sync ${f(p.sync)} s/step (measured ${f(ms)}), async ${f(p.async)} s/step (measured ${f(ma)}; error ${f(100 * (p.async / ma - 1), 1)}%)`,
    );
    report.async_simulated = { sync_s: p.sync, async_s: p.async, measured_sync_s: ms, measured_async_s: ma };
  }
}

// ── 3. learning: RL vs SFT-only ───────────────────────────────────────────────────────────────────────────
const THRESHOLD: Record<string, number> = {
  'instruction-short': 0.9,
  instruction: 0.6,
  search: 0.3,
  coding: 0.5,
};
if (sections.has('learning')) {
  console.log(
    `\n3. learning from the shipped SFT checkpoint (cpu): val reward every ${valEvery} steps, ${steps} steps`,
  );
  const curves: Record<string, unknown>[] = [];
  for (const harness of harnesses) {
    const ck = sftWeights(harness);
    for (const seed of seeds) {
      for (const mode of ['rl', 'sft-only'] as const) {
        const policy = new CpuPolicy(ck.config, {}, ck.params);
        const cfg = benchConfig(harness, seed);
        const local = createLocalRun({
          config: cfg,
          policy,
          tokenizer: tok,
          makeRunner: (h) => inlineRunner(h),
        });
        const curve: [number, number][] = [[0, (await local.run.validate(0))['val/reward']]];
        const t0 = performance.now();
        if (mode === 'rl') {
          for (let s = 1; s <= steps; s++) {
            await local.run.runStep();
            if (s % valEvery === 0) curve.push([s, (await local.run.validate(s))['val/reward']]);
          }
        } else {
          // SFT-only: the same optimizer steps (two mini-batches of 16 rows per step, the RL learning rate) of
          // supervised training on the expert's trajectories that made the checkpoint
          const { rows } = await expertRows(cfg.lab.harness, tok, 1, 256);
          for (let s = 1; s <= steps; s++) {
            await sftTrain(policy, rows, {
              steps: 2,
              batchRows: 16,
              lr: 1e-4,
              seed: hashSeed(seed, 'bench-sft', s),
              warmup: 0,
              schedule: 'constant',
            });
            if (s % valEvery === 0) curve.push([s, (await local.run.validate(s))['val/reward']]);
          }
        }
        local.close();
        const secs = (performance.now() - t0) / 1000;
        const th = THRESHOLD[harness] ?? 1;
        const hit = curve.find(([, r]) => r >= th);
        curves.push({
          harness,
          seed,
          mode,
          curve,
          seconds: secs,
          threshold: th,
          steps_to_threshold: hit ? hit[0] : null,
        });
        console.log(
          `  ${harness.padEnd(18)} seed ${seed} ${mode.padEnd(8)} ${curve.map(([s, r]) => `${s}:${f(r, 3)}`).join('  ')}   steps to ${th}: ${hit ? hit[0] : `not in ${steps}`} (${f(secs, 0)} s)`,
        );
      }
    }
  }
  report.learning = curves;
}

// ── 4. peer: the update step in PyTorch ───────────────────────────────────────────────────────────────────
if (sections.has('peer')) {
  const harness = phaseHarness;
  const ckPath = join(root, 'public', sftCheckpointPath(harness));
  const ck = sftWeights(harness);
  const rollouts = await expertRollouts(harness as TrainConfig['lab']['harness'], tok, 'train', 5, 32);
  const cfg = benchConfig(harness, 0);
  const rows = buildStepRows(rollouts, cfg, { trimSeed: 0 }).batch;
  const all = Array.from({ length: rows.nRows }, (_, i) => i);
  const lay = layoutRows(rows, all, { contextLength: ck.config.contextLength });
  let tokens = 0;
  for (const m of rows.mask) tokens += m;
  const weights = scatterWeights(sftGradient(rows, tokens), lay);
  const B = lay.batch.batchSize;
  const T = lay.batch.seqLen;
  const opt = { lr: 1e-4, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 1 };
  const ours: number[] = [];
  let first = { loss: 0, gradNorm: 0 };
  for (let r = 0; r <= repeat; r++) {
    const p = new CpuPolicy(ck.config, opt, ck.params);
    const t0 = performance.now();
    const s = await p.trainStep(lay.batch, weights);
    if (r > 0) ours.push((performance.now() - t0) / 1000);
    else first = { loss: s.loss, gradNorm: s.gradNorm };
  }
  const oursS = median(ours);
  console.log(
    `\n4. one update step, ${B} rows × ${T} positions (${B * T} tokens), ${ck.config.layers}×${ck.config.width} model`,
  );
  console.log(
    `  ours (cpu engine, one thread, ${fastKernel()} kernels): ${f(oursS, 3)} s, ${f((B * T) / oursS, 0)} tok/s, loss ${first.loss.toFixed(5)}, grad norm ${first.gradNorm.toFixed(5)}`,
  );
  const peer: Record<string, unknown> = { ours_seconds: oursS, tokens: B * T };
  if (!peerPython)
    console.log('  peer: not run (set HARNESS_LAB_PEER_PYTHON or --peer to a Python with torch)');
  else {
    const dir = mkdtempSync(join(tmpdir(), 'bench-train-'));
    const file = join(dir, 'batch.json');
    const rowsOf = <A extends ArrayLike<number>>(a: A) =>
      Array.from({ length: B }, (_, b) => Array.from(a).slice(b * T, (b + 1) * T));
    writeFileSync(
      file,
      JSON.stringify({
        tokens: rowsOf(lay.batch.tokens),
        weights: rowsOf(weights),
        temperature: 1,
        optimizer: {
          lr: opt.lr,
          beta1: opt.beta1,
          beta2: opt.beta2,
          eps: opt.eps,
          weight_decay: opt.weightDecay,
          max_grad_norm: opt.maxGradNorm,
        },
      }),
    );
    const r = spawnSync(
      peerPython,
      [
        join(root, 'python/bench_train_peer.py'),
        ckPath,
        file,
        '--repeat',
        String(repeat),
        '--threads',
        String(peerThreads),
      ],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      },
    );
    rmSync(dir, { recursive: true, force: true });
    if (r.status !== 0)
      console.log(`  peer: failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    else {
      const p = JSON.parse(r.stdout.trim().split('\n').pop() as string) as {
        peer: string;
        seconds: number;
        tokens_per_s: number;
        loss: number;
        grad_norm: number;
      };
      console.log(
        `  peer ${p.peer}: ${f(p.seconds, 3)} s, ${f(p.tokens_per_s, 0)} tok/s, loss ${p.loss.toFixed(5)}, grad norm ${p.grad_norm.toFixed(5)}`,
      );
      console.log(
        `  ratio (tokens/s, ours / peer): ${f(p.seconds / oursS)}×; |Δ loss| ${Math.abs(p.loss - first.loss).toExponential(1)}, |Δ grad norm| ${Math.abs(p.grad_norm - first.gradNorm).toExponential(1)}`,
      );
      Object.assign(peer, p, { ratio: p.seconds / oursS });
    }
  }
  report.peer = peer;
}

if (flags.json) writeFileSync(String(flags.json), `${JSON.stringify(report, null, 2)}\n`);
gpuBox.ctx?.destroy();
