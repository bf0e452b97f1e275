// The browser side of `npm run bench:engine`: runs benchCore on the WebGPU policy in this page, and
// onnxruntime-web (wasm and WebGPU EPs) on the ONNX export of the same weights on the same batch.
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { exportOnnx, maxLogProbDiff } from '../../src/engine/onnx/export';
import { CpuPolicy, createPolicyEngine } from '../../src/engine/policy';
import {
  BENCH_CONFIGS,
  type BenchConfig,
  type BenchResult,
  benchEngine,
  benchTokens,
  median,
} from './benchCore';
import { type OrtEp, openOrt } from './ortBrowser';

export interface OrtPageResult {
  ep: OrtEp;
  threads: number;
  /** median seconds of one log-prob forward of the config's batch */
  seconds: number;
  /** max |Δ log-prob| vs our WebGPU engine in this page, and vs the CPU reference, on the same batch */
  diffWebgpu: number;
  diffCpu: number;
}

declare global {
  interface Window {
    runBench: (config: string, reps: number) => Promise<BenchResult>;
    runOrtBench: (config: string, reps: number) => Promise<OrtPageResult[]>;
    benchReady: boolean;
  }
}

function find(name: string): BenchConfig {
  const bc = BENCH_CONFIGS.find((c) => c.name === name);
  if (!bc) throw new Error(`unknown benchmark config ${name}`);
  return bc;
}

window.runBench = async (name, reps) => {
  const bc = find(name);
  const config = resolveConfig({ ...bc.model, seed: 1 });
  const { engine } = await createPolicyEngine({ config, backend: 'webgpu' });
  try {
    return await benchEngine(engine, bc, reps, layoutOf(config).total);
  } finally {
    engine.dispose();
  }
};

window.runOrtBench = async (name, reps) => {
  const bc = find(name);
  const { batchSize: B, seqLen: T } = bc;
  // Same seed, same initialisation: the CPU reference's parameters are the WebGPU engine's.
  const config = resolveConfig({ ...bc.model, seed: 1 });
  const cpu = new CpuPolicy(config);
  const tokens = benchTokens(bc);
  const batch = { tokens, mask: new Float32Array(B * T).fill(1), batchSize: B, seqLen: T };
  const { engine } = await createPolicyEngine({ config, backend: 'webgpu' });
  let ours: Float32Array;
  try {
    ours = (await engine.logProbs(batch)).logProbs;
  } finally {
    engine.dispose();
  }
  const ref = (await cpu.logProbs(batch)).logProbs;
  const model = exportOnnx(config, layoutOf(config), cpu.params, B, T);
  const out: OrtPageResult[] = [];
  for (const ep of ['wasm', 'webgpu'] as OrtEp[]) {
    const session = await openOrt(ep, model, tokens, B, T);
    try {
      let got = (await session.run()).logProbs; // warm-up: kernel/shader compilation, buffer allocation
      const times: number[] = [];
      for (let i = 0; i < reps; i++) {
        const t0 = performance.now();
        got = (await session.run()).logProbs;
        times.push((performance.now() - t0) / 1000);
      }
      out.push({
        ep,
        threads: session.threads,
        seconds: median(times),
        diffWebgpu: maxLogProbDiff(got, ours, B, T),
        diffCpu: maxLogProbDiff(got, ref, B, T),
      });
    } finally {
      await session.release();
    }
  }
  return out;
};
window.benchReady = true;
