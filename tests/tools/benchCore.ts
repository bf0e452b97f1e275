/**
 * Engine benchmark core, shared by the Node runner (bench-engine.ts) and the page it opens in headless
 * Chromium (bench-engine.html): tokens/s of the log-prob forward, of a full training step (forward, weighted
 * backward, AdamW) and of sampling, as medians over repetitions after one warm-up.
 */
import type { PolicyConfig, PolicyEngine } from '../../src/engine/policy/types';

export interface BenchConfig {
  name: string;
  model: Omit<PolicyConfig, 'seed'>;
  batchSize: number;
  seqLen: number;
  promptLen: number;
  newTokens: number;
}

export const BENCH_CONFIGS: BenchConfig[] = [
  {
    name: 'ci',
    model: { vocabSize: 256, contextLength: 64, layers: 2, width: 64, heads: 4 },
    batchSize: 2,
    seqLen: 32,
    promptLen: 8,
    newTokens: 8,
  },
  {
    name: 'laptop',
    model: { vocabSize: 1024, contextLength: 256, layers: 4, width: 128, heads: 4 },
    batchSize: 4,
    seqLen: 256,
    promptLen: 32,
    newTokens: 32,
  },
];

export interface BenchResult {
  config: string;
  backend: string;
  params: number;
  /** tokens per second, medians */
  logProbs: number;
  trainStep: number;
  sample: number;
  /** median seconds per call */
  seconds: { logProbs: number; trainStep: number; sample: number };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function timeIt(reps: number, f: () => Promise<unknown>): Promise<number> {
  await f(); // warm-up: pipeline compilation, buffer allocation
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await f();
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

/** The benchmark's token batch for a config: the same ids in every backend, ORT included. */
export function benchTokens(bc: BenchConfig): Uint32Array {
  const V = bc.model.vocabSize;
  return Uint32Array.from({ length: bc.batchSize * bc.seqLen }, (_, i) => (i * 2654435761) % V);
}

export async function benchEngine(
  engine: PolicyEngine,
  bc: BenchConfig,
  reps: number,
  paramCount: number,
): Promise<BenchResult> {
  const { batchSize: B, seqLen: T } = bc;
  const V = bc.model.vocabSize;
  const tokens = benchTokens(bc);
  const mask = new Float32Array(B * T).fill(1);
  const weights = Float32Array.from(mask, (_, i) => (i % T ? 1 / (B * (T - 1)) : 0));
  const batch = { tokens, mask, batchSize: B, seqLen: T };
  const tLog = await timeIt(reps, () => engine.logProbs(batch));
  const tTrain = await timeIt(reps, () => engine.trainStep(batch, weights));
  const promptIds = Array.from({ length: bc.promptLen }, (_, i) => (i * 7 + 1) % V);
  let generated = 0;
  const tSample = await timeIt(reps, async () => {
    // stopIds empty and temperature 1: always generates exactly newTokens tokens
    const r = await engine.sample({ promptIds, temperature: 1, topP: 1, maxTokens: bc.newTokens, seed: 1 });
    generated = r.tokenIds.length;
  });
  return {
    config: bc.name,
    backend: engine.backend,
    params: paramCount,
    logProbs: (B * T) / tLog,
    trainStep: (B * T) / tTrain,
    sample: generated / tSample,
    seconds: { logProbs: tLog, trainStep: tTrain, sample: tSample },
  };
}
