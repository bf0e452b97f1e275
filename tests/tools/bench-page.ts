// The browser side of `npm run bench:engine`: runs benchCore on the WebGPU policy in this page, and
// onnxruntime-web (wasm and WebGPU EPs) on the ONNX export of the same weights on the same batch.
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { exportOnnx, maxLogProbDiff } from '../../src/engine/onnx/export';
import { type OrtEp as LmEp, OrtCausalLm } from '../../src/engine/onnx/ortLm';
import { ortForEp, pageTransformers } from '../../src/engine/onnx/ortWeb';
import { TransformersCausalLm } from '../../src/engine/onnx/transformersLm';
import { CpuPolicy, createPolicyEngine } from '../../src/engine/policy';
import {
  BENCH_CONFIGS,
  type BenchConfig,
  type BenchResult,
  benchEngine,
  benchRollout,
  benchTokens,
  median,
  ROLLOUT_PRECISIONS,
  type RolloutRow,
  rolloutParams,
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
    runRolloutBench: (config: string, reps: number) => Promise<RolloutRow[]>;
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
/** Rollout engines in this page on the same prompts and weights: ours (WebGPU), ORT wasm/webgpu, transformers.js. */
window.runRolloutBench = async (name, reps) => {
  const bc = find(name);
  const config = resolveConfig({ ...bc.model, seed: 1 });
  const { params, trainer } = await rolloutParams(bc);
  const rows: RolloutRow[] = [];
  const base = { config: bc.name, where: 'chromium' };
  const { engine } = await createPolicyEngine({ config, backend: 'webgpu', params });
  try {
    rows.push(
      await benchRollout(
        { ...base, engine: 'ours-webgpu', precision: 'f32' },
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
  } finally {
    engine.dispose();
  }
  for (const ep of ['wasm', 'webgpu'] as LmEp[])
    for (const precision of ROLLOUT_PRECISIONS) {
      const lm = await OrtCausalLm.create({ ort: ortForEp(ep), ep, config, precision }, params);
      try {
        rows.push(
          await benchRollout(
            { ...base, engine: `ort-${ep}`, precision },
            bc,
            reps,
            trainer,
            (r) => lm.sample(r),
            async () => (await lm.syncWeights(params)).totalMs,
          ),
        );
      } finally {
        await lm.dispose();
      }
    }
  await pageTransformers();
  const get = async (f: string) => (await (await fetch(`/tokenizer/${f}`)).json()) as Record<string, unknown>;
  // the folder carries the policy tokenizer's files; the benchmark drives the engine by ids and never reads them
  const tokenizer = {
    tokenizerJson: await get('tokenizer.json'),
    tokenizerConfig: await get('tokenizer_config.json'),
  };
  for (const device of ['wasm', 'webgpu'] as const)
    for (const precision of ROLLOUT_PRECISIONS) {
      const lm = await TransformersCausalLm.fromPolicy(params, {
        device,
        policy: { config, tokenizer, precision },
      });
      try {
        rows.push(
          await benchRollout(
            { ...base, engine: `transformers.js-${device}`, precision },
            bc,
            reps,
            trainer,
            (r) => lm.sample(r),
            async () => (await lm.syncWeights(params)).totalMs,
          ),
        );
      } finally {
        await lm.dispose();
      }
    }
  return rows;
};
window.benchReady = true;
