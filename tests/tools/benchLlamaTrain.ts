/**
 * `npm run bench:train -- --model SHAPE|DIR[,…] [--seq T] [--r 16] [--alpha 32] [--modes lora,full] [--repeat R]
 * [--threads N] [--base-dtypes f32,bf16,f16]`: training steps of the Llama-family CPU engine (forward, backward
 * of −Σ logp, clipping, AdamW) with LoRA (r, alpha, all seven projections; the base frozen) and with full
 * fine-tuning. A SHAPE (`smollm2-135m`, `qwen3-0.6b`) has the peer (python/bench_lora_peer.py in
 * HARNESS_LAB_PEER_PYTHON, else python/.venv-peer) make the folder with seeded random weights and time the same
 * steps in PyTorch + PEFT on the CPU in the same run (R steps in a row on each side, the first included, timed
 * by their median; N: the peer's torch threads, ours runs on one). Per row: step tokens/s, the ratio to PyTorch
 * (by wall time, and by each process's CPU time over the same steps), |Δ loss| of the first step against it
 * (the same step must be computed), the memory the step needs by part (lora.ts trainStepMemory: weights,
 * activations, adapter, gradient, AdamW), the step's fit against the limits a run is checked with before it
 * starts (memoryFit.ts: this machine's memory and V8's longest typed array; the Dawn adapter's maxBufferSize /
 * maxStorageBufferBindingSize and the stated 4 GiB total estimate, per base dtype), and the process's peak RSS
 * after the steps (ours; the peer's). Then the same step on the WebGPU engine (LlamaGpuPolicy) on Dawn in the
 * same process: the first step (pipeline compiles and program recording) and a second one timed, the loss and
 * gradient norm against our CPU engine's first step (the same seeded adapter), and the bytes its buffers hold
 * (weights, adapter, gradient, AdamW); with LoRA, one such row per `--base-dtypes` entry (default f32: the frozen
 * base packed as 16-bit halves for f16 / bf16, its |Δ loss| against the f32 CPU step); "not run" with the reason
 * where the adapter cannot hold the model.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { nodeCpuLimits } from '../../src/cli/commands/train';
import { nodeGpuContext, reexecWithSwiftShader } from '../../src/cli/webgpuNode';
import { type BaseDtype, checkBaseDtype } from '../../src/engine/cpu/half';
import type { GpuContext } from '../../src/engine/gpu/device';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { checkLoraConfig, LORA_TARGETS, trainStepMemory } from '../../src/engine/llama/lora';
import {
  trainStepFit,
  WEBGPU_BUDGET_ESTIMATE,
  WEBGPU_BUDGET_NOTE,
  webgpuLimits,
} from '../../src/engine/llama/memoryFit';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';
import { cpuSeconds } from './benchLlama';

const root = resolve(import.meta.dirname, '../..');
const SHAPES = ['smollm2-135m', 'qwen3-0.6b'];

interface PeerMode {
  seconds: number;
  cpu_seconds: number;
  tokens_per_s: number;
  loss: number;
  grad_norm: number;
  trainable: number;
  peak_rss_mb: number;
}
interface Peer {
  peer: string;
  ids: number[][];
  modes: Record<string, PeerMode>;
}

const mib = (b: number) => (b / 2 ** 20).toFixed(1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchLlamaTrain(argv: string[]): Promise<number> {
  let models: string[] = [];
  let seq = 16;
  let r = 16;
  let alpha = 32;
  let modes = ['lora', 'full'];
  let baseDtypes: BaseDtype[] = ['f32'];
  let repeat = 1;
  let threads = 1;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--model') models = value.split(',');
    else if (flag === '--seq') seq = Number(value);
    else if (flag === '--r') r = Number(value);
    else if (flag === '--alpha') alpha = Number(value);
    else if (flag === '--modes') modes = value.split(',');
    else if (flag === '--repeat') repeat = Number(value);
    else if (flag === '--threads') threads = Number(value);
    else if (flag === '--base-dtypes')
      baseDtypes = value.split(',').map((d) => checkBaseDtype(d, '--base-dtypes'));
    else
      throw new Error(
        `unknown flag ${flag} with --model (known: --model, --seq, --r, --alpha, --modes, --repeat, --threads, --base-dtypes)`,
      );
  }
  if (!Number.isInteger(seq) || seq < 2) throw new Error('--seq must be an integer ≥ 2');
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error('--repeat must be a positive integer');
  if (!Number.isInteger(threads) || threads < 1) throw new Error('--threads must be a positive integer');
  for (const m of modes)
    if (m !== 'lora' && m !== 'full') throw new Error(`--modes: '${m}' is not lora or full`);
  const lora = checkLoraConfig({ r, alpha, targetModules: [...LORA_TARGETS] });
  // Dawn without a GPU driver runs on SwiftShader: this process again with Vulkan pointed at it
  const child = reexecWithSwiftShader();
  if (child !== null) return child;
  let gpu: GpuContext | Error;
  try {
    gpu = await nodeGpuContext();
  } catch (e) {
    gpu = e as Error;
  }
  const python = process.env.HARNESS_LAB_PEER_PYTHON ?? join(root, 'python/.venv-peer/bin/python');
  for (const m of models) {
    const isShape = SHAPES.includes(m);
    let dir = m;
    let tmp: string | null = null;
    let peer: Peer | null = null;
    if (isShape) {
      if (!existsSync(python))
        throw new Error(`--model ${m}: the peer Python (${python}) is missing; bash python/setup_peer.sh`);
      tmp = mkdtempSync(join(tmpdir(), `bench-lora-${m}-`));
      dir = tmp;
      const args = [
        join(root, 'python/bench_lora_peer.py'),
        '--shape',
        m,
        '--out',
        tmp,
        '--seq',
        String(seq),
      ];
      args.push('--r', String(r), '--alpha', String(alpha), '--modes', modes.join(','));
      args.push('--repeat', String(repeat), '--threads', String(threads));
      const p = spawnSync(python, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
      if (p.status !== 0)
        throw new Error(
          `peer failed (exit ${p.status}): ${p.stderr.trim().split('\n').slice(-3).join(' | ')}`,
        );
      peer = JSON.parse(p.stdout.trim().split('\n').pop() as string) as Peer;
    } else if (!existsSync(m))
      throw new Error(`--model ${m}: neither a shape (${SHAPES.join(', ')}) nor a folder`);
    try {
      const folder = await readLlamaFolder(await nodeFolderReader(dir));
      const cfg = folder.config;
      const ids = peer ? peer.ids[0] : Array.from({ length: seq }, (_, i) => (i * 7919) % cfg.vocabSize);
      const batch = {
        tokens: Uint32Array.from(ids),
        mask: new Float32Array(ids.length).fill(1),
        batchSize: 1,
        seqLen: ids.length,
      };
      const weights = new Float32Array(ids.length).fill(1);
      const label = isShape ? m : dir;
      console.log(
        `${label}: ${cfg.modelType}, ${folder.layout.total} parameters, ${repeat === 1 ? 'one step' : `${repeat} steps in a row (median)`} on ${ids.length} tokens`,
      );
      const hyper = { lr: 1e-5, weightDecay: 0.01, beta2: 0.999 };
      for (const mode of modes) {
        const opts = mode === 'lora' ? { lora: { config: lora, seed: 0 } } : {};
        const engine = new LlamaCpuPolicy(cfg, folder.params, hyper, opts);
        // --repeat steps in a row, the first included (as the peer): the median time, the first step's loss
        const times: number[] = [];
        const cpuTimes: number[] = [];
        let s: Awaited<ReturnType<typeof engine.trainStep>> | undefined;
        for (let k = 0; k < repeat; k++) {
          const t0 = performance.now();
          const c0 = process.cpuUsage();
          const step = await engine.trainStep(batch, weights);
          times.push((performance.now() - t0) / 1000);
          cpuTimes.push(cpuSeconds(process.cpuUsage(c0)));
          s ??= step;
        }
        if (!s) throw new Error('no step ran');
        const sec = median(times);
        const cpuSec = median(cpuTimes);
        const rss = process.resourceUsage().maxRSS * 1024;
        const mem = trainStepMemory(cfg, mode === 'lora' ? lora : null, ids.length, folder.layout.total);
        const name = mode === 'lora' ? `LoRA r=${r} alpha=${alpha}` : 'full';
        console.log(
          `  ${name.padEnd(20)} ours (CPU, 1 thread): ${(ids.length / sec).toFixed(2)} tok/s (${sec.toFixed(1)} s), ` +
            `trainable ${engine.trainableLayout.total}, loss ${s.loss.toFixed(4)}, |g| ${s.gradNorm.toExponential(3)}, peak RSS ${mib(rss)} MiB`,
        );
        console.log(
          `  ${''.padEnd(20)} memory stated: weights ${mib(mem.weights)} + activations ${mib(mem.activations)} + adapter ${mib(mem.adapter)} + ` +
            `grads ${mib(mem.grads)} + AdamW ${mib(mem.optimizer)} = ${mib(mem.total)} MiB`,
        );
        // the same step against the limits a run is checked with before it starts (engine/llama/memoryFit.ts)
        const fitLora = mode === 'lora' ? lora : null;
        const fitShape = { rows: 1, tokens: ids.length };
        const verdict = (f: ReturnType<typeof trainStepFit>) =>
          f.problems.length ? `refused: ${f.problems.map((p) => p.message).join('; ')}` : 'fits';
        const targets = [
          `CPU (${mib(os.totalmem())} MiB, os.totalmem): ${verdict(trainStepFit(cfg, fitLora, fitShape, nodeCpuLimits()))}`,
        ];
        if (!(gpu instanceof Error))
          for (const dtype of mode === 'lora' ? baseDtypes : (['f32'] as BaseDtype[]))
            targets.push(
              `Dawn, ${dtype} base (maxBufferSize ${mib(gpu.status.limits.maxBufferSize)} MiB, maxStorageBufferBindingSize ${mib(gpu.status.limits.maxStorageBufferBindingSize)} MiB, total ${mib(WEBGPU_BUDGET_ESTIMATE)} MiB, ${WEBGPU_BUDGET_NOTE}): ` +
                verdict(
                  trainStepFit(cfg, fitLora, fitShape, webgpuLimits(gpu.status.limits, 'the adapter'), dtype),
                ),
            );
        for (const t of targets) console.log(`  ${''.padEnd(20)} fit against ${t}`);
        const pm = peer?.modes[mode];
        if (pm)
          console.log(
            `  ${''.padEnd(20)} ${peer?.peer}: ${pm.tokens_per_s.toFixed(2)} tok/s (${pm.seconds.toFixed(2)} s), trainable ${pm.trainable}, ` +
              `peak RSS ${pm.peak_rss_mb.toFixed(0)} MiB; ours / PyTorch ${(ids.length / sec / pm.tokens_per_s).toFixed(3)} ` +
              `(by process CPU time ${(pm.cpu_seconds / cpuSec).toFixed(3)}: ours ${cpuSec.toFixed(2)} s, PyTorch ${pm.cpu_seconds.toFixed(2)} s); ` +
              `|Δ loss| ${Math.abs(s.loss - pm.loss).toExponential(2)}, ` +
              (mode === 'lora'
                ? `grad norm ${pm.grad_norm.toExponential(3)} (A is drawn by another generator, so only the loss is the same)`
                : `|Δ grad norm| / norm ${(Math.abs(s.gradNorm - pm.grad_norm) / pm.grad_norm).toExponential(2)}`),
          );
        engine.dispose();
        const pad = ''.padEnd(20);
        // a 16-bit base is a LoRA option (the base is frozen); full fine-tuning keeps f32
        for (const dtype of mode === 'lora' ? baseDtypes : (['f32'] as BaseDtype[])) {
          const unfit =
            gpu instanceof Error ? gpu.message.split('\n')[0] : LlamaGpuPolicy.unfit(gpu, cfg, dtype);
          if (unfit || gpu instanceof Error) {
            console.log(`  ${pad} node+dawn (${dtype} base): not run: ${unfit}`);
            continue;
          }
          const g = new LlamaGpuPolicy(gpu, cfg, folder.params, hyper, { ...opts, baseDtype: dtype });
          const g0 = performance.now();
          const first = await g.trainStep(batch, weights);
          const firstSec = (performance.now() - g0) / 1000;
          const g1 = performance.now();
          await g.trainStep(batch, weights);
          const gsec = (performance.now() - g1) / 1000;
          const resident = g.residentBytes();
          console.log(
            `  ${pad} node+dawn, ${dtype} base (${gpu.status.vendor || 'adapter'} ${gpu.status.architecture}${gpu.status.isFallbackAdapter ? ', software' : ''}): ` +
              `${(ids.length / gsec).toFixed(2)} tok/s (${gsec.toFixed(1)} s; first step ${firstSec.toFixed(1)} s), ` +
              `Dawn / CPU ${(sec / gsec).toFixed(2)}; |Δ loss| vs CPU ${Math.abs(first.loss - s.loss).toExponential(2)}, ` +
              `|Δ grad norm| / norm ${(Math.abs(first.gradNorm - s.gradNorm) / s.gradNorm).toExponential(2)}; ` +
              `buffers resident ${mib(resident)} MiB (weights in ${g.shards.length} + ${mode === 'lora' ? 'adapter + ' : ''}grads + AdamW), ` +
              `process peak RSS ${mib(process.resourceUsage().maxRSS * 1024)} MiB`,
          );
          g.dispose();
        }
      }
    } finally {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }
  }
  if (!(gpu instanceof Error)) gpu.destroy();
  return 0;
}
