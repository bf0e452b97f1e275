/**
 * The engine's self-check on whatever adapter is present: every case of the kernel table (kernelCases.ts, the
 * same table tests/browser/kernels.test.ts runs in Chromium), a full WebGPU training step against the CPU step
 * (gradient accumulation and log-prob-dependent weights included), and a finite-difference check of the
 * reference gradient. Used by `npm run lab -- engine-check`.
 */
import type { GpuContext } from './gpu/device';
import { modelGradCheck } from './gradcheck';
import { KERNEL_CASES, maxAbsError as maxAbs } from './kernelCases';
import { CpuPolicy } from './policy/cpuPolicy';
import { GpuPolicy } from './policy/gpuPolicy';
export interface CheckResult {
  name: string;
  /** Max absolute error (or relative, for the gradient check). */
  error: number;
  tolerance: number;
  ok: boolean;
}

export async function runSelfCheck(
  ctx: GpuContext,
  report: (r: CheckResult) => void = () => {},
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add = (name: string, error: number, tolerance: number) => {
    const r = { name, error, tolerance, ok: error <= tolerance };
    results.push(r);
    report(r);
  };
  for (const kc of KERNEL_CASES)
    for (const c of await kc.run(ctx)) add(`${kc.name}: ${c.name}`, maxAbs(c.got, c.want), c.tolerance);

  // A whole training step of a small policy, WebGPU vs CPU.
  const cfg = { vocabSize: 64, contextLength: 16, layers: 2, width: 32, heads: 4, seed: 5 };
  const B = 2;
  const T = 12;
  const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % cfg.vocabSize);
  const mask = Float32Array.from({ length: B * T }, (_, i) => (i < T + 8 ? 1 : 0));
  const batch = { tokens, mask, batchSize: B, seqLen: T };
  const weights = Float32Array.from(mask, (m, i) => (m && i % T ? (i % 3) - 0.8 : 0));
  const opt = { lr: 1e-3 };
  const gpu = GpuPolicy.create(ctx, cfg, opt);
  const cpu = new CpuPolicy(cfg, opt);
  const lpG = await gpu.logProbs(batch);
  const lpC = await cpu.logProbs(batch);
  add('policy log-probs', maxAbs(lpG.logProbs, lpC.logProbs), 1e-5);
  cpu.computeGrads(batch, weights);
  add('policy gradients', maxAbs(await gpu.computeGrads(batch, weights), cpu.grads), 1e-5);
  const sg = await gpu.trainStep(batch, weights);
  const sc = await cpu.trainStep(batch, weights);
  add('policy train step: loss', Math.abs(sg.loss - sc.loss), 1e-5);
  add('policy train step: params', maxAbs(await gpu.getParams(), cpu.params), 5e-3 * opt.lr);
  // Two micro-batches accumulated, with weights computed from each forward's log-probs, then one update.
  const half = (r: number) => ({
    tokens: tokens.slice(r * T, (r + 1) * T),
    mask: mask.slice(r * T, (r + 1) * T),
    batchSize: 1,
    seqLen: T,
  });
  const fn = (lp: { logProbs: Float32Array }) => Float32Array.from(lp.logProbs, (x, i) => (i ? 0.1 * x : 0));
  const gpu2 = GpuPolicy.create(ctx, cfg, opt);
  const cpu2 = new CpuPolicy(cfg, opt);
  for (const e of [gpu2, cpu2]) {
    await e.accumulateGrads(half(0), fn);
    await e.accumulateGrads(half(1), fn);
  }
  const ag = await gpu2.optimizerStep();
  const ac = await cpu2.optimizerStep();
  add('policy accumulated micro-batches: grad norm', Math.abs(ag.gradNorm - ac.gradNorm), 1e-5 * ac.gradNorm);
  add('policy accumulated micro-batches: params', maxAbs(await gpu2.getParams(), cpu2.params), 5e-3 * opt.lr);
  const og = await gpu2.getOptimizerState();
  add('policy optimizer state: m', maxAbs(og.m, cpu2.m), 1e-6);
  gpu2.dispose();
  const req = { promptIds: [1, 2, 3], temperature: 1, topP: 0.9, maxTokens: 6, seed: 3 };
  const a = await gpu.sample(req);
  const c = await cpu.sample(req);
  add('sampling: same tokens as CPU', a.tokenIds.join() === c.tokenIds.join() ? 0 : 1, 0);
  add('sampling: log-probs', maxAbs(a.logProbs, c.logProbs), 1e-5);
  gpu.dispose();

  // The reference gradient itself, against finite differences.
  const fd = modelGradCheck(cpu.config, cpu.layout, cpu.params, batch, weights, { eps: 1e-2, count: 40 });
  add('reference gradient vs finite differences (rel)', fd.maxRelError, 1e-2);
  return results;
}
