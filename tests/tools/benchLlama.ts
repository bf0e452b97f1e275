/**
 * `npm run bench:engine -- --model SHAPE|DIR[,…] [--seq T] [--reps R] [--threads N]`: the Llama-family
 * engine's log-prob forward on a Hugging Face folder (N: the peer's torch threads; ours runs on one). SHAPE
 * (`smollm2-135m`, `qwen3-0.6b`) has the peer (python/bench_llama_peer.py in HARNESS_LAB_PEER_PYTHON, else
 * python/.venv-peer) make a folder of that shape with seeded random weights and
 * time the same forward in PyTorch on the CPU in the same run; a DIR is benchmarked on our engine alone.
 * Per row: tokens/s (median of --reps), the process's peak RSS, the ratio to PyTorch (by wall time, and by each
 * process's CPU time over the same calls: on a shared machine the two sides may get different shares of it), max |Δ log-prob| against
 * it, and the fused output head's memory: the measured ArrayBuffer growth of one head pass over the T rows
 * against the (T·V) logits it avoids. Then the WebGPU engine (LlamaGpuPolicy) on Dawn in the same process, on the
 * same folder and ids: tokens/s of the log-prob forward (median of --reps after one untimed call that compiles
 * the pipelines and records the programs), and its max |Δ log-prob| against our CPU engine and PyTorch. And
 * onnxruntime-web (wasm EP, 1 thread, in this process) on the same weights: the folder exported by
 * engine/onnx/exportLlama.ts, its log-prob forward timed the same way (median of --reps after one untimed run),
 * the export + session-creation time, and its max |Δ log-prob| against our CPU engine and PyTorch (weights past
 * 2 GiB, e.g. qwen3-0.6b in f32, go through external data: the session option `externalData`). And
 * transformers.js (onnxruntime-node CPU EP) on the folder exported in HF's ONNX decoder layout with KV cache
 * (exportLlamaHfFolder): 16 seeded tokens after the first half of the ids, their tokens/s (prefill included) and the
 * max |Δ log-prob| of the sampled tokens against our CPU engine's recompute of the same sequence.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import { fusedHeadForwardCpu, headBytesPerToken } from '../../src/engine/cpu/fusedLogprob';
import { matmulModeFast } from '../../src/engine/cpu/matmulFast';
import { fastKernel } from '../../src/engine/cpu/simd';
import type { GpuContext } from '../../src/engine/gpu/device';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { headName } from '../../src/engine/llama/model';
import { onnxTargets } from '../../src/engine/onnx/export';
import { exportLlamaHfFolder, exportLlamaOnnx } from '../../src/engine/onnx/exportLlama';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { mapReader } from '../../src/engine/onnx/hfFolder';
import { TransformersCausalLm } from '../../src/engine/onnx/transformersLm';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';

const root = resolve(import.meta.dirname, '../..');
const SHAPES = ['smollm2-135m', 'qwen3-0.6b'];

interface Peer {
  peer: string;
  seconds: number;
  /** the peer process's CPU seconds over the same calls (median) */
  cpu_seconds: number;
  tokens_per_s: number;
  peak_rss_mb: number;
  ids: number[][];
  logprobs: number[][];
}

const mb = (b: number) => (b / 2 ** 20).toFixed(1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** user + system seconds of a process.cpuUsage() difference */
export const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;

export async function benchLlama(argv: string[]): Promise<number> {
  let models: string[] = [];
  let seq = 64;
  let reps = 1;
  let threads = 1;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--model') models = value.split(',');
    else if (flag === '--seq') seq = Number(value);
    else if (flag === '--reps') reps = Number(value);
    else if (flag === '--threads') threads = Number(value);
    else throw new Error(`unknown flag ${flag} with --model (known: --model, --seq, --reps, --threads)`);
  }
  if (!Number.isInteger(seq) || seq < 2) throw new Error('--seq must be an integer ≥ 2');
  if (!Number.isInteger(reps) || reps < 1) throw new Error('--reps must be a positive integer');
  if (!Number.isInteger(threads) || threads < 1) throw new Error('--threads must be a positive integer');
  const python = process.env.HARNESS_LAB_PEER_PYTHON ?? join(root, 'python/.venv-peer/bin/python');
  let gpu: GpuContext | Error;
  try {
    gpu = await nodeGpuContext();
  } catch (e) {
    gpu = e as Error;
  }
  for (const m of models) {
    const isShape = SHAPES.includes(m);
    let dir = m;
    let tmp: string | null = null;
    let peer: Peer | null = null;
    if (isShape) {
      if (!existsSync(python))
        throw new Error(`--model ${m}: the peer Python (${python}) is missing; bash python/setup_peer.sh`);
      tmp = mkdtempSync(join(tmpdir(), `bench-llama-${m}-`));
      dir = tmp;
      const r = spawnSync(
        python,
        [
          join(root, 'python/bench_llama_peer.py'),
          '--shape',
          m,
          '--out',
          tmp,
          '--seq',
          String(seq),
          '--repeat',
          String(reps),
          '--threads',
          String(threads),
        ],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      if (r.status !== 0)
        throw new Error(
          `peer failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`,
        );
      peer = JSON.parse(r.stdout.trim().split('\n').pop() as string) as Peer;
    } else if (!existsSync(m))
      throw new Error(`--model ${m}: neither a shape (${SHAPES.join(', ')}) nor a folder`);
    try {
      const folder = await readLlamaFolder(await nodeFolderReader(dir));
      const cfg = folder.config;
      const engine = new LlamaCpuPolicy(cfg, folder.params);
      const ids = peer ? peer.ids[0] : Array.from({ length: seq }, (_, i) => (i * 7919) % cfg.vocabSize);
      const batch = {
        tokens: Uint32Array.from(ids),
        mask: new Float32Array(ids.length).fill(1),
        batchSize: 1,
        seqLen: ids.length,
      };
      const times: number[] = [];
      const cpuTimes: number[] = [];
      let logp: Float32Array = new Float32Array(0);
      for (let r = 0; r < reps; r++) {
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        logp = (await engine.logProbs(batch)).logProbs;
        times.push((performance.now() - t0) / 1000);
        cpuTimes.push(cpuSeconds(process.cpuUsage(c0)));
      }
      const sec = median(times);
      const cpuSec = median(cpuTimes);
      const rss = process.resourceUsage().maxRSS * 1024;
      // the fused head alone over the T final rows: ArrayBuffer growth of one pass vs the logits it avoids
      const C = cfg.hidden;
      const V = cfg.vocabSize;
      const h = new Float32Array(ids.length * C).fill(0.01);
      const W = folder.params.subarray(
        folder.layout.byName.get(headName(cfg))?.offset ?? 0,
        (folder.layout.byName.get(headName(cfg))?.offset ?? 0) + V * C,
      );
      const targets = Int32Array.from(ids);
      const before = process.memoryUsage().arrayBuffers;
      const head = fusedHeadForwardCpu(h, W, targets, ids.length, C, V, matmulModeFast);
      const grown = process.memoryUsage().arrayBuffers - before;
      const per = headBytesPerToken(V);
      let diff = Number.NaN;
      if (peer) {
        diff = 0;
        for (let t = 1; t < ids.length; t++)
          diff = Math.max(diff, Math.abs(logp[t] - peer.logprobs[0][t - 1]));
      }
      const label = isShape ? m : dir;
      console.log(
        `${label.padEnd(14)} ${cfg.modelType} ${String(folder.layout.total).padStart(10)} params  ours (CPU, 1 thread, ${fastKernel()} kernels) ` +
          `log-prob ${(ids.length / sec).toFixed(2)} tok/s (${sec.toFixed(2)} s for ${ids.length} tokens), peak RSS ${mb(rss)} MiB`,
      );
      if (peer)
        console.log(
          `${''.padEnd(14)} ${peer.peer}: ${peer.tokens_per_s.toFixed(2)} tok/s, peak RSS ${peer.peak_rss_mb.toFixed(1)} MiB; ` +
            `ours / PyTorch ${(ids.length / sec / peer.tokens_per_s).toFixed(3)} (by process CPU time ${(peer.cpu_seconds / cpuSec).toFixed(3)}: ` +
            `ours ${cpuSec.toFixed(2)} s, PyTorch ${peer.cpu_seconds.toFixed(2)} s); max |Δ log-prob| ${diff.toExponential(2)}`,
        );
      console.log(
        `${''.padEnd(14)} fused head (V ${V}, Vc ${Math.min(4096, V)}, R 32): tile ${mb(head.tileFloats * 4)} MiB; measured ` +
          `${mb(grown)} MiB ArrayBuffer growth for ${ids.length} rows = ${(grown / ids.length / 1024).toFixed(1)} KiB/token ` +
          `(stated ${(per.fused / 1024).toFixed(1)} KiB/token in a full 32-row block) vs ${(per.materialised / 1024).toFixed(1)} KiB/token materialised`,
      );
      const pad = ''.padEnd(14);
      console.log(`${pad} ${await benchOrt(folder, batch, reps, logp, peer)}`);
      console.log(`${pad} ${await benchTransformers(folder, ids, engine)}`);
      if (gpu instanceof Error) console.log(`${pad} node+dawn: not run: ${gpu.message.split('\n')[0]}`);
      else {
        const where = `node+dawn (${gpu.status.description || gpu.status.vendor})`;
        const unfit = LlamaGpuPolicy.unfit(gpu, cfg);
        if (unfit) console.log(`${pad} ${where}: not run: ${unfit}`);
        else {
          const dawn = new LlamaGpuPolicy(gpu, cfg, folder.params);
          const t0 = performance.now();
          await dawn.logProbs(batch);
          const first = (performance.now() - t0) / 1000;
          const gt: number[] = [];
          let glogp: Float32Array = new Float32Array(0);
          for (let r = 0; r < reps; r++) {
            const t1 = performance.now();
            glogp = (await dawn.logProbs(batch)).logProbs;
            gt.push((performance.now() - t1) / 1000);
          }
          gt.sort((a, b) => a - b);
          const gsec = gt[Math.floor(gt.length / 2)];
          let vsCpu = 0;
          for (let t = 1; t < ids.length; t++) vsCpu = Math.max(vsCpu, Math.abs(glogp[t] - logp[t]));
          let vsPeer = Number.NaN;
          if (peer) {
            vsPeer = 0;
            for (let t = 1; t < ids.length; t++)
              vsPeer = Math.max(vsPeer, Math.abs(glogp[t] - peer.logprobs[0][t - 1]));
          }
          const resident = dawn.residentBytes();
          const shards = dawn.shards.length;
          console.log(
            `${pad} ${where}: log-prob ${(ids.length / gsec).toFixed(2)} tok/s (${gsec.toFixed(2)} s; first call ` +
              `${first.toFixed(2)} s with pipeline compiles), weights resident ${mb(resident)} MiB in ${shards} ` +
              `buffer${shards === 1 ? '' : 's'}, process peak RSS ${mb(process.resourceUsage().maxRSS * 1024)} MiB; ` +
              `ours Dawn / CPU ${(sec / gsec).toFixed(2)}` +
              (peer ? `, / PyTorch ${(ids.length / gsec / peer.tokens_per_s).toFixed(3)}` : '') +
              `; max |Δ log-prob| vs our CPU ${vsCpu.toExponential(2)}` +
              (peer ? `, vs PyTorch ${vsPeer.toExponential(2)}` : ''),
          );
          dawn.dispose();
        }
      }
    } finally {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }
  }
  if (!(gpu instanceof Error)) gpu.destroy();
  return 0;
}

/** The onnxruntime-web row: the folder's weights as an ONNX log-prob forward on the wasm EP (1 thread). */
async function benchOrt(
  folder: Awaited<ReturnType<typeof readLlamaFolder>>,
  batch: { tokens: Uint32Array; mask: Float32Array; batchSize: number; seqLen: number },
  reps: number,
  ours: Float32Array,
  peer: Peer | null,
): Promise<string> {
  const ort = await import('onnxruntime-web');
  const where = `onnxruntime-web ${ort.env.versions.web} (wasm EP, 1 thread)`;
  const { batchSize: B, seqLen: T, tokens } = batch;
  ort.env.wasm.numThreads = 1;
  const t0 = performance.now();
  let files: ReturnType<typeof exportLlamaOnnx> | null = exportLlamaOnnx(
    folder.config,
    folder.layout,
    folder.params,
    B,
    T,
  );
  const weights = files.data
    ? `external data ${mb(files.data.length)} MiB`
    : `inline ${mb(files.model.length)} MiB`;
  const session = await ort.InferenceSession.create(files.model, {
    executionProviders: ['wasm'],
    ...(files.data && files.location ? { externalData: [{ path: files.location, data: files.data }] } : {}),
  });
  files = null;
  const load = (performance.now() - t0) / 1000;
  const feeds = {
    tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
    mask: new ort.Tensor('float32', batch.mask, [B, T]),
    targets: new ort.Tensor('int64', onnxTargets(tokens, B, T), [B, T, 1]),
  };
  let got: Float32Array = new Float32Array(0);
  const times: number[] = [];
  for (let r = 0; r <= reps; r++) {
    const t1 = performance.now();
    got = (await session.run(feeds)).target_logp.data as Float32Array;
    if (r > 0) times.push((performance.now() - t1) / 1000);
  }
  await session.release();
  times.sort((a, b) => a - b);
  const sec = times[Math.floor(times.length / 2)];
  // export row t predicts token t+1: our position t+1, the peer's index t
  let vsCpu = 0;
  let vsPeer = 0;
  for (let t = 0; t + 1 < T; t++) {
    vsCpu = Math.max(vsCpu, Math.abs(got[t] - ours[t + 1]));
    if (peer) vsPeer = Math.max(vsPeer, Math.abs(got[t] - peer.logprobs[0][t]));
  }
  return (
    `${where}, weights ${weights}: log-prob ${(T / sec).toFixed(2)} tok/s (${sec.toFixed(2)} s; export + session ${load.toFixed(1)} s)` +
    (peer ? `, / PyTorch ${(T / sec / peer.tokens_per_s).toFixed(3)}` : '') +
    `; max |Δ log-prob| vs our CPU ${vsCpu.toExponential(2)}` +
    (peer ? `, vs PyTorch ${vsPeer.toExponential(2)}` : '')
  );
}

/**
 * The transformers.js row: the folder exported in HF's ONNX decoder layout (exportLlamaHfFolder; external data
 * past 2 GiB) in transformers.js's generate() on onnxruntime-node's CPU EP, seeded sampling of `new` tokens after
 * the first half of the ids; decode tokens/s and the log-prob gap of the sampled tokens against our CPU engine's
 * log-probs of the same sequence (the trainer's recompute).
 */
async function benchTransformers(
  folder: Awaited<ReturnType<typeof readLlamaFolder>>,
  ids: number[],
  engine: LlamaCpuPolicy,
): Promise<string> {
  const t = await import('@huggingface/transformers');
  const where = `transformers.js ${t.env.version} (onnxruntime-node CPU EP)`;
  const t0 = performance.now();
  const lm = await TransformersCausalLm.load(mapReader(exportLlamaHfFolder(folder)), { device: 'cpu' });
  const load = (performance.now() - t0) / 1000;
  const ext = (lm.folder?.externalData.fp32.length ?? 0) > 0 ? 'external data' : 'inline';
  const promptIds = ids.slice(0, Math.max(1, Math.floor(ids.length / 2)));
  const maxTokens = 16;
  try {
    const t1 = performance.now();
    const got = await lm.sample({ promptIds, temperature: 1, topP: 1, maxTokens, seed: 1 });
    const sec = (performance.now() - t1) / 1000;
    const seq = [...promptIds, ...got.tokenIds];
    const lp = (
      await engine.logProbs({
        tokens: Uint32Array.from(seq),
        mask: new Float32Array(seq.length).fill(1),
        batchSize: 1,
        seqLen: seq.length,
      })
    ).logProbs;
    let gap = 0;
    got.logProbs.forEach((v, j) => {
      gap = Math.max(gap, Math.abs(v - lp[promptIds.length + j]));
    });
    return (
      `${where}, weights ${ext}: generate ${got.tokenIds.length} tokens after ${promptIds.length} ` +
      `${(got.tokenIds.length / sec).toFixed(2)} tok/s (${sec.toFixed(2)} s incl. prefill; export + load ${load.toFixed(1)} s); ` +
      `max |Δ log-prob| of the sampled tokens vs our CPU ${gap.toExponential(2)}`
    );
  } finally {
    await lm.dispose();
  }
}
