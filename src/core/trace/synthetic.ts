/**
 * A seeded synthetic batch shaped like a real multi-turn agent's trace: each rollout makes `callsPerRollout`
 * calls; call k's prompt is call k−1's prompt + its response + a tool observation, so prompts grow the way a
 * harness's context does and trajectory merging applies. A fraction of calls re-render their context
 * (`mismatchRate`), which breaks the prefix rule the way truncation or a changed system prompt does.
 * Used by the core benchmark and by responsiveness tests; no tokenizer is involved (ids are arbitrary).
 */
import { mulberry32 } from '../random';
import type { ModelCall, Rollout } from './types';

export interface SyntheticShape {
  rollouts: number;
  callsPerRollout: number;
  groupSize: number;
  /** first prompt length range (tokens) */
  promptTokens: [number, number];
  responseTokens: [number, number];
  observationTokens: [number, number];
  mismatchRate: number;
  vocabSize: number;
  seed: number;
}

/** 1,024 rollouts × 16 calls, ≈ 8.5M prompt+response tokens in all. */
export const AGENT_BATCH_SHAPE: SyntheticShape = {
  rollouts: 1024,
  callsPerRollout: 16,
  groupSize: 8,
  promptTokens: [120, 180],
  responseTokens: [20, 50],
  observationTokens: [5, 15],
  mismatchRate: 0.02,
  vocabSize: 151_643,
  seed: 1,
};

export function syntheticAgentBatch(shape: SyntheticShape = AGENT_BATCH_SHAPE): Rollout[] {
  const rand = mulberry32(shape.seed);
  const between = ([lo, hi]: [number, number]) => lo + Math.floor(rand() * (hi - lo + 1));
  const ids = (n: number) => {
    const a = new Int32Array(n);
    for (let i = 0; i < n; i++) a[i] = Math.floor(rand() * shape.vocabSize);
    return a;
  };
  const rollouts: Rollout[] = [];
  for (let r = 0; r < shape.rollouts; r++) {
    const calls: ModelCall[] = [];
    let prompt = ids(between(shape.promptTokens));
    for (let k = 0; k < shape.callsPerRollout; k++) {
      const n = between(shape.responseTokens);
      const response = ids(n);
      const logProbs = new Float32Array(n);
      for (let i = 0; i < n; i++) logProbs[i] = Math.fround(Math.log(0.05 + 0.95 * rand()));
      calls.push({
        request: { messages: [], sampling: {} },
        response: { message: { role: 'assistant', content: null }, finishReason: 'stop' },
        promptTokenIds: prompt,
        responseTokenIds: response,
        responseLogProbs: logProbs,
        httpStatus: 200,
      });
      const obs = ids(between(shape.observationTokens));
      const next = new Int32Array(prompt.length + n + obs.length);
      next.set(prompt, 0);
      next.set(response, prompt.length);
      next.set(obs, prompt.length + n);
      // A re-rendered context: the same length, one early token changed, so the prefix rule fails.
      if (rand() < shape.mismatchRate) next[Math.floor(rand() * Math.min(8, next.length))] ^= 1;
      prompt = next;
    }
    const reward = Math.round(rand() * 4) / 4;
    rollouts.push({
      rolloutId: `ro-${r}`,
      dataId: `task-${Math.floor(r / shape.groupSize)}`,
      isTrain: true,
      state: 'succeeded',
      calls,
      rewards: [{ value: reward }],
      finalReward: reward,
      step: 0,
      sampleIdxInStep: r,
      metadata: {},
    });
  }
  return rollouts;
}

/** Prompt + response tokens over all calls (what "tokens" means in throughput figures). */
export function countCallTokens(rollouts: Rollout[]): number {
  let n = 0;
  for (const r of rollouts)
    for (const c of r.calls) n += (c.promptTokenIds?.length ?? 0) + (c.responseTokenIds?.length ?? 0);
  return n;
}
