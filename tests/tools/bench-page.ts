// The browser side of `npm run bench:engine`: runs benchCore on the WebGPU policy in this page.
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { createPolicyEngine } from '../../src/engine/policy';
import { BENCH_CONFIGS, type BenchResult, benchEngine } from './benchCore';

declare global {
  interface Window {
    runBench: (config: string, reps: number) => Promise<BenchResult>;
    benchReady: boolean;
  }
}

window.runBench = async (name, reps) => {
  const bc = BENCH_CONFIGS.find((c) => c.name === name);
  if (!bc) throw new Error(`unknown benchmark config ${name}`);
  const config = resolveConfig({ ...bc.model, seed: 1 });
  const { engine } = await createPolicyEngine({ config, backend: 'webgpu' });
  try {
    return await benchEngine(engine, bc, reps, layoutOf(config).total);
  } finally {
    engine.dispose();
  }
};
window.benchReady = true;
