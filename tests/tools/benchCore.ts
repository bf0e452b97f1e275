/**
 * Engine benchmark core, shared by the Node runner (bench-engine.ts) and the page it opens in headless
 * Chromium (bench-engine.html): tokens/s of the log-prob forward, of a full training step (forward, weighted
 * backward, AdamW) and of sampling, as medians over repetitions after one warm-up.
 */
import { type MismatchStats, mismatchStats } from '../../src/engine/onnx/mismatch';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import type { PolicyConfig, PolicyEngine, SampleRequest, SampleResult } from '../../src/engine/policy/types';

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
  /** WebGPU engines: the commands one log-prob forward and one training step hand to the queue */
  commands?: { logProbs: CommandCounts; trainStep: CommandCounts };
}

/** Compute dispatches, compute passes and queue submits (GpuContext.counts). */
export interface CommandCounts {
  dispatches: number;
  passes: number;
  submits: number;
}

async function countCommands(read: () => CommandCounts, f: () => Promise<unknown>): Promise<CommandCounts> {
  const a = { ...read() };
  await f();
  const b = read();
  return {
    dispatches: b.dispatches - a.dispatches,
    passes: b.passes - a.passes,
    submits: b.submits - a.submits,
  };
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
  /** a WebGPU engine's command counters (GpuContext.counts), read around one more call of each */
  counts?: () => CommandCounts,
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
  const commands = counts && {
    logProbs: await countCommands(counts, () => engine.logProbs(batch)),
    trainStep: await countCommands(counts, () => engine.trainStep(batch, weights)),
  };
  return {
    config: bc.name,
    backend: engine.backend,
    params: paramCount,
    commands,
    logProbs: (B * T) / tLog,
    trainStep: (B * T) / tTrain,
    sample: generated / tSample,
    seconds: { logProbs: tLog, trainStep: tTrain, sample: tSample },
  };
}

/**
 * Rollout benchmark: one rollout engine (ours, onnxruntime-web, transformers.js) sampling the same prompts from
 * the same weights, against our trainer's log-probs of what it sampled. Shared by Node and the Chromium page.
 */
export interface RolloutRow {
  config: string;
  engine: string;
  where: string;
  precision: string;
  /** generated tokens per second over all prompts, median of reps */
  tokensPerS: number;
  /** median ms of one weight sync (re-export + reload, or upload), null where the engine is the trainer */
  syncMs: number | null;
  mismatch: MismatchStats;
}

/** New tokens per rollout prompt: at least 32 (a handful per prompt is all per-call overhead), within the context. */
export function rolloutTokens(bc: BenchConfig): number {
  return Math.min(Math.max(bc.newTokens, 32), bc.model.contextLength - bc.promptLen);
}

/** The rollout benchmark's prompts: four per config, of promptLen ids. */
export function rolloutPrompts(bc: BenchConfig): number[][] {
  const V = bc.model.vocabSize;
  return Array.from({ length: 4 }, (_, k) =>
    Array.from({ length: bc.promptLen }, (_, i) => (i * 7 + 1 + 31 * k) % V),
  );
}

/**
 * Weights with some structure: the seeded init trained 30 steps on the benchmark's first row, so distributions are
 * peaked as a trained policy's are (a fresh init is nearly uniform, where no precision shows a mismatch).
 */
export async function rolloutParams(bc: BenchConfig): Promise<{ params: Float32Array; trainer: CpuPolicy }> {
  const trainer = new CpuPolicy({ ...bc.model, seed: 1 }, { lr: 1e-2, weightDecay: 0 });
  // the first row, at most 64 positions: enough structure, and seconds on the CPU even for 'laptop'
  const B = 1;
  const T = Math.min(bc.seqLen, 64);
  const tokens = benchTokens(bc).slice(0, T);
  const mask = new Float32Array(B * T).fill(1);
  const weights = Float32Array.from(mask, (_, i) => (i % T ? 1 / (B * (T - 1)) : 0));
  for (let s = 0; s < 30; s++) await trainer.trainStep({ tokens, mask, batchSize: B, seqLen: T }, weights);
  return { params: await trainer.getParams(), trainer };
}

export async function benchRollout(
  row: Omit<RolloutRow, 'tokensPerS' | 'syncMs' | 'mismatch'>,
  bc: BenchConfig,
  reps: number,
  trainer: CpuPolicy,
  sample: (req: SampleRequest) => Promise<SampleResult>,
  sync: (() => Promise<number>) | null,
): Promise<RolloutRow> {
  const prompts = rolloutPrompts(bc);
  const reqs = prompts.map((promptIds, k) => ({
    promptIds,
    temperature: 1,
    topP: 1,
    maxTokens: rolloutTokens(bc),
    seed: 100 + k,
  }));
  let results: SampleResult[] = [];
  const run = async () => {
    results = [];
    for (const r of reqs) results.push(await sample(r));
  };
  const seconds = await timeIt(reps, run);
  const generated = results.reduce((s, r) => s + r.tokenIds.length, 0);
  const engineLp: number[] = [];
  const trainerLp: number[] = [];
  for (const [k, r] of results.entries()) {
    const seq = [...prompts[k], ...r.tokenIds];
    const T = seq.length;
    const lp = await trainer.logProbs({
      tokens: Uint32Array.from(seq),
      batchSize: 1,
      seqLen: T,
      mask: new Float32Array(T).fill(1),
    });
    for (let i = 0; i < r.tokenIds.length; i++) {
      engineLp.push(r.logProbs[i]);
      trainerLp.push(lp.logProbs[prompts[k].length + i]);
    }
  }
  let syncMs: number | null = null;
  if (sync) {
    const times: number[] = [];
    await sync();
    for (let i = 0; i < reps; i++) times.push(await sync());
    syncMs = median(times);
  }
  return {
    ...row,
    tokensPerS: generated / seconds,
    syncMs,
    mismatch: mismatchStats(engineLp, trainerLp),
  };
}

export const ROLLOUT_PRECISIONS = ['f32', 'f16', 'int8'] as const;

export function formatRolloutRow(r: RolloutRow, peer: RolloutRow | undefined): string {
  const m = r.mismatch;
  const ratio = peer && peer.tokensPerS > 0 ? `${(r.tokensPerS / peer.tokensPerS).toFixed(2)}x` : 'n/a';
  return (
    `${r.config.padEnd(7)} ${`${r.engine} ${r.where}`.padEnd(32)} ${r.precision.padEnd(5)} ` +
    `${r.tokensPerS.toFixed(1).padStart(9)} tok/s (${ratio.padStart(7)} of ours-cpu)  ` +
    `sync ${r.syncMs === null ? '   n/a' : r.syncMs.toFixed(1).padStart(6)} ms  ` +
    `|Δ log-prob| mean ${m.meanAbsLogProbDiff.toExponential(2)} max ${m.maxAbsLogProbDiff.toExponential(2)} ` +
    `>${m.threshold} ${(100 * m.fracAbove).toFixed(2)}%  (${m.tokens} tokens)`
  );
}
