/**
 * `npm run bench:engine`: tokens/s of the policy engine's log-prob forward, training step and sampling on
 * named configurations, in Node + Dawn (WebGPU), in headless Chromium (WebGPU) and on the CPU reference,
 * with ratios. Medians over --reps repetitions after a warm-up.
 *
 *   npm run bench:engine -- [--configs ci,laptop] [--backends node,chromium,cpu,onnx] [--reps 3]
 *   npm run bench:engine -- --model smollm2-135m,qwen3-0.6b|DIR [--seq 64] [--reps 1] [--threads 1]   (benchLlama.ts)
 *
 * 'onnx' runs the same weights, exported to ONNX (src/engine/onnx/export.ts), in onnxruntime-web 1.30: on the
 * wasm execution provider in this Node process (vs the CPU reference and the Node WebGPU engine), and, when
 * 'chromium' runs too, on the wasm and the webgpu EPs inside the Chromium page (tests/tools/ortBrowser.ts), on
 * the same batch as our WebGPU engine there. Each ORT row is the log-prob forward only (tokens/s from the
 * median seconds) with the max |log-prob| difference between the two engines: the train/inference mismatch
 * that rollout correction exists for.
 *
 * 'rollout' runs every rollout engine on the same four prompts from the same weights (the seeded init trained 30
 * steps on one row, so distributions are peaked): our engine (CPU reference, Node+Dawn, Chromium WebGPU), onnxruntime-web
 * (wasm EP in Node; wasm and webgpu EPs in Chromium) and transformers.js (onnxruntime-node CPU in Node; wasm and
 * webgpu in Chromium), each ORT/transformers.js engine at f32, f16 and int8 weights. Per row: generated tokens/s
 * (median of reps, with the ratio to our CPU reference), the median weight-sync time (re-export + reload; our
 * engine: setParams), and the mismatch of the engine's log-probs of what it sampled against our trainer's
 * (CPU reference) log-probs of the same tokens: mean and max |Δ log-prob| and the share of tokens beyond 0.1.
 *
 * Without --configs, 'laptop' runs only when Dawn's adapter is a real GPU: on a software adapter
 * (SwiftShader, ~10-20 MFLOP/s for these kernels) one laptop-sized forward takes minutes.
 */

import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { createServer } from 'vite';
import { nodeGpuContext, reexecWithSwiftShader } from '../../src/cli/webgpuNode';
import type { GpuContext } from '../../src/engine/gpu/device';
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { exportOnnx, maxLogProbDiff, onnxTargets } from '../../src/engine/onnx/export';
import { OrtCausalLm } from '../../src/engine/onnx/ortLm';
import { TransformersCausalLm } from '../../src/engine/onnx/transformersLm';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { GpuPolicy } from '../../src/engine/policy/gpuPolicy';
import {
  BENCH_CONFIGS,
  type BenchConfig,
  type BenchResult,
  benchEngine,
  benchRollout,
  benchTokens,
  formatRolloutRow,
  median,
  ROLLOUT_PRECISIONS,
  type RolloutRow,
  rolloutParams,
} from './benchCore';
import { benchLlama } from './benchLlama';
import { chromiumArgs, chromiumPath } from './chromium.mjs';

/** Median seconds of an onnxruntime-web (wasm EP) forward of the exported policy in Node, and its log-prob error. */
async function benchOnnx(bc: BenchConfig, reps: number, ctx: GpuContext | null) {
  const ort = await import('onnxruntime-web');
  const config = resolveConfig({ ...bc.model, seed: 1 });
  const layout = layoutOf(config);
  const cpu = new CpuPolicy(config);
  const { batchSize: B, seqLen: T } = bc;
  const tokens = benchTokens(bc);
  const session = await ort.InferenceSession.create(exportOnnx(config, layout, cpu.params, B, T), {
    executionProviders: ['wasm'],
  });
  const feeds = {
    tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
    targets: new ort.Tensor('int64', onnxTargets(tokens, B, T), [B, T, 1]),
  };
  let got: Float32Array = new Float32Array(0);
  const times: number[] = [];
  for (let i = 0; i <= reps; i++) {
    const t0 = performance.now();
    got = (await session.run(feeds)).target_logp.data as Float32Array;
    if (i > 0) times.push((performance.now() - t0) / 1000);
  }
  await session.release();
  const seconds = median(times);
  const batch = { tokens, mask: new Float32Array(B * T).fill(1), batchSize: B, seqLen: T };
  const diffCpu = maxLogProbDiff(got, (await cpu.logProbs(batch)).logProbs, B, T);
  let diffGpu: number | null = null;
  if (ctx) {
    const gpu = GpuPolicy.create(ctx, config);
    diffGpu = maxLogProbDiff(got, (await gpu.logProbs(batch)).logProbs, B, T);
    gpu.dispose();
  }
  return { seconds, diffCpu, diffGpu };
}

/** A forward-only row (onnxruntime-web): log-prob tokens/s from median seconds, no train or sample figures. */
function forwardRow(bc: BenchConfig, where: string, seconds: number): BenchResult & { where: string } {
  const params = layoutOf(resolveConfig({ ...bc.model, seed: 1 })).total;
  const logProbs = (bc.batchSize * bc.seqLen) / seconds;
  return {
    config: bc.name,
    backend: where,
    where,
    params,
    logProbs,
    trainStep: 0,
    sample: 0,
    seconds: { logProbs: seconds, trainStep: 0, sample: 0 },
  };
}

/** The rollout engines in this Node process (see the header). */
async function benchRolloutsNode(
  bc: BenchConfig,
  reps: number,
  ctx: GpuContext | null,
): Promise<RolloutRow[]> {
  const ort = await import('onnxruntime-web');
  const config = resolveConfig({ ...bc.model, seed: 1 });
  const { params, trainer } = await rolloutParams(bc);
  const rows: RolloutRow[] = [];
  const base = { config: bc.name, where: 'node' };
  const ours = [{ name: 'ours-cpu', make: () => new CpuPolicy(config, {}, params) as CpuPolicy | GpuPolicy }];
  if (ctx) ours.push({ name: 'ours-dawn', make: () => GpuPolicy.create(ctx, config, undefined, params) });
  for (const o of ours) {
    const engine = o.make();
    rows.push(
      await benchRollout(
        { ...base, engine: o.name, precision: 'f32' },
        bc,
        reps,
        trainer,
        (r) => engine.sample(r),
        async () => {
          const t0 = performance.now();
          await engine.setParams(params);
          return performance.now() - t0;
        },
      ),
    );
    engine.dispose();
  }
  for (const precision of ROLLOUT_PRECISIONS) {
    const lm = await OrtCausalLm.create({ ort: ort as never, ep: 'wasm', config, precision }, params);
    rows.push(
      await benchRollout(
        { ...base, engine: 'ort-wasm', precision },
        bc,
        reps,
        trainer,
        (r) => lm.sample(r),
        async () => (await lm.syncWeights(params)).totalMs,
      ),
    );
    await lm.dispose();
  }
  const read = (f: string) =>
    JSON.parse(readFileSync(new URL(`../../public/tokenizer/${f}`, import.meta.url), 'utf8'));
  // the folder carries the policy tokenizer's files; the benchmark drives the engine by ids and never reads them
  const tokenizer = { tokenizerJson: read('tokenizer.json'), tokenizerConfig: read('tokenizer_config.json') };
  for (const precision of ROLLOUT_PRECISIONS) {
    const lm = await TransformersCausalLm.fromPolicy(params, {
      device: 'cpu',
      policy: { config, tokenizer, precision },
    });
    rows.push(
      await benchRollout(
        { ...base, engine: 'transformers.js-cpu', precision },
        bc,
        reps,
        trainer,
        (r) => lm.sample(r),
        async () => (await lm.syncWeights(params)).totalMs,
      ),
    );
    await lm.dispose();
  }
  return rows;
}

const BACKENDS = ['node', 'chromium', 'cpu', 'onnx', 'rollout'];

function parse(argv: string[]) {
  const out = { configs: [] as string[], backends: [...BACKENDS], reps: 3 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--configs') out.configs = value.split(',');
    else if (flag === '--backends') out.backends = value.split(',');
    else if (flag === '--reps') out.reps = Number(value);
    else throw new Error(`unknown flag ${flag} (known: --configs, --backends, --reps)`);
  }
  for (const c of out.configs)
    if (!BENCH_CONFIGS.some((b) => b.name === c))
      throw new Error(`unknown config '${c}' (known: ${BENCH_CONFIGS.map((b) => b.name).join(', ')})`);
  for (const b of out.backends)
    if (!BACKENDS.includes(b)) throw new Error(`unknown backend '${b}' (${BACKENDS.join(', ')})`);
  if (!Number.isInteger(out.reps) || out.reps < 1) throw new Error(`--reps must be a positive integer`);
  return out;
}

async function main(): Promise<number> {
  const child = reexecWithSwiftShader();
  if (child !== null) return child;
  // the Llama-family engines on a Hugging Face folder (CPU, Dawn, vs PyTorch): its own flags (benchLlama.ts)
  if (process.argv.includes('--model') || process.argv.some((a) => a.startsWith('--model=')))
    return benchLlama(process.argv.slice(2));
  const opts = parse(process.argv.slice(2));
  const results: (BenchResult & { where: string })[] = [];
  const rolloutRows: RolloutRow[] = [];
  const print = (r: BenchResult & { where: string }) =>
    console.log(
      `${r.config.padEnd(7)} ${r.where.padEnd(20)} params ${String(r.params).padStart(8)}  ` +
        `log-prob ${r.logProbs.toFixed(1).padStart(9)} tok/s  train ${r.trainStep.toFixed(1).padStart(9)} tok/s  ` +
        `sample ${r.sample.toFixed(2).padStart(8)} tok/s`,
    );
  const printForward = (r: BenchResult & { where: string }, diffs: [string, number][], note = '') =>
    console.log(
      `${r.config.padEnd(7)} ${r.where.padEnd(20)} params ${String(r.params).padStart(8)}  ` +
        `log-prob ${r.logProbs.toFixed(1).padStart(9)} tok/s  (forward only${note})  max |Δ log-prob| ` +
        diffs.map(([vs, d]) => `vs ${vs} ${d.toExponential(2)}`).join(', '),
    );
  const ctx = await nodeGpuContext();
  console.log(`node adapter: ${ctx.status.vendor} ${ctx.status.architecture} ${ctx.status.description}`);
  if (opts.configs.length === 0) {
    opts.configs = ctx.status.isFallbackAdapter ? ['ci'] : ['ci', 'laptop'];
    if (ctx.status.isFallbackAdapter)
      console.log("software adapter: running 'ci' only (pass --configs ci,laptop to run both)");
  }
  const selected = BENCH_CONFIGS.filter((c) => opts.configs.includes(c.name));

  if (opts.backends.includes('node')) {
    for (const bc of selected) {
      const config = resolveConfig({ ...bc.model, seed: 1 });
      const engine = GpuPolicy.create(ctx, config);
      const r = {
        ...(await benchEngine(engine, bc, opts.reps, layoutOf(config).total, () => ctx.counts)),
        where: 'node+dawn',
      };
      engine.dispose();
      results.push(r);
      print(r);
      if (r.commands) {
        const c = (k: 'logProbs' | 'trainStep') =>
          `${r.commands?.[k].dispatches} dispatches in ${r.commands?.[k].passes} passes, ${r.commands?.[k].submits} submits`;
        console.log(
          `${''.padEnd(28)}per log-prob forward: ${c('logProbs')} (${(r.seconds.logProbs * 1000).toFixed(1)} ms); ` +
            `per training step (forward + backward + AdamW): ${c('trainStep')} (${(r.seconds.trainStep * 1000).toFixed(1)} ms)`,
        );
      }
    }
  }
  if (opts.backends.includes('chromium')) {
    const server = await createServer({ logLevel: 'warn', server: { host: '127.0.0.1', port: 0 } });
    await server.listen();
    const address = server.httpServer?.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const browser = await chromium.launch({
      executablePath: chromiumPath(),
      args: chromiumArgs(),
      headless: true,
    });
    try {
      const page = await browser.newPage();
      page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
      await page.goto(`http://127.0.0.1:${port}/tests/tools/bench-engine.html`);
      await page.waitForFunction(() => window.benchReady === true, null, { timeout: 120_000 });
      const info = await page.evaluate(async () => {
        const a = await navigator.gpu?.requestAdapter();
        return a ? `${a.info.vendor} ${a.info.architecture}` : 'none';
      });
      console.log(`chromium adapter: ${info}`);
      for (const bc of selected) {
        const r = await page.evaluate(({ name, reps }) => window.runBench(name, reps), {
          name: bc.name,
          reps: opts.reps,
        });
        const row = { ...r, where: 'chromium' };
        results.push(row);
        print(row);
        if (opts.backends.includes('rollout'))
          rolloutRows.push(
            ...(await page.evaluate(({ name, reps }) => window.runRolloutBench(name, reps), {
              name: bc.name,
              reps: opts.reps,
            })),
          );
        if (!opts.backends.includes('onnx')) continue;
        const ortRows = await page.evaluate(({ name, reps }) => window.runOrtBench(name, reps), {
          name: bc.name,
          reps: opts.reps,
        });
        for (const o of ortRows) {
          const ortRow = forwardRow(bc, `ort-${o.ep}/chromium`, o.seconds);
          results.push(ortRow);
          printForward(
            ortRow,
            [
              ['chromium', o.diffWebgpu],
              ['cpu-reference', o.diffCpu],
            ],
            `, ${o.threads} wasm thread${o.threads === 1 ? '' : 's'}`,
          );
        }
      }
    } finally {
      await browser.close();
      await server.close();
    }
  }
  if (opts.backends.includes('cpu')) {
    for (const bc of selected) {
      const config = resolveConfig({ ...bc.model, seed: 1 });
      const engine = new CpuPolicy(config);
      const r = {
        ...(await benchEngine(engine, bc, opts.reps, layoutOf(config).total)),
        where: 'cpu-reference',
      };
      results.push(r);
      print(r);
    }
  }

  if (opts.backends.includes('onnx')) {
    for (const bc of selected) {
      const r = await benchOnnx(bc, opts.reps, opts.backends.includes('node') ? ctx : null);
      const row = forwardRow(bc, 'ort-wasm/node', r.seconds);
      results.push(row);
      printForward(row, [
        ['cpu-reference', r.diffCpu],
        ...(r.diffGpu === null ? [] : [['node+dawn', r.diffGpu] as [string, number]]),
      ]);
    }
  }

  if (opts.backends.includes('rollout')) {
    for (const bc of selected)
      rolloutRows.unshift(
        ...(await benchRolloutsNode(bc, opts.reps, opts.backends.includes('node') ? ctx : null)),
      );
    console.log(
      '\nrollout engines (same prompts, same weights; tokens/s of sampling, weight sync, log-probs vs the trainer):',
    );
    for (const r of rolloutRows)
      console.log(
        formatRolloutRow(
          r,
          rolloutRows.find((p) => p.config === r.config && p.engine === 'ours-cpu'),
        ),
      );
  }

  console.log('\nratios (tokens/s of the first backend over the second):');
  const pairs: [string, string][] = [
    ['node+dawn', 'chromium'],
    ['node+dawn', 'cpu-reference'],
    ['chromium', 'cpu-reference'],
    ['node+dawn', 'ort-wasm/node'],
    ['chromium', 'ort-wasm/chromium'],
    ['chromium', 'ort-webgpu/chromium'],
  ];
  for (const bc of selected)
    for (const [a, b] of pairs) {
      const ra = results.find((r) => r.config === bc.name && r.where === a);
      const rb = results.find((r) => r.config === bc.name && r.where === b);
      if (!ra || !rb) continue;
      const ratio = (x: number, y: number) => (x > 0 && y > 0 ? `${(x / y).toFixed(3)}x` : 'n/a');
      console.log(
        `${bc.name.padEnd(7)} ${a} / ${b}: log-prob ${ratio(ra.logProbs, rb.logProbs)}  ` +
          `train ${ratio(ra.trainStep, rb.trainStep)}  sample ${ratio(ra.sample, rb.sample)}`,
      );
    }
  return 0;
}

main().then(
  (code) => {
    process.exit(code);
  },
  (e) => {
    console.error(`bench:engine: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
