/**
 * The log-prob gap of a second rollout engine (transformers.js, onnxruntime) against our engine on the same
 * weights: our engine recomputes each call's response ids (one forward over prompt + response, no cache, at the
 * call's temperature), as the trainer does in a step, and writes them onto the call as `trainerLogProbs` /
 * `trainerEntropy`, so the Trace view colours the engine − trainer gap exactly as for a kept training step; the
 * |Δ log-prob| statistics over all tokens come back (engine/onnx/mismatch.ts, the figures bench:engine prints).
 */
import type { Rollout } from '../core/trace/types';
import { type MismatchStats, mismatchStats } from '../engine/onnx/mismatch';
import type { PolicyEngine } from '../engine/policy/types';

export interface EngineGap {
  stats: MismatchStats;
  /** calls scored / calls with response ids and log-probs (a call past our context length is not scored) */
  scored: number;
  calls: number;
}

/** Scores every call that has prompt ids, response ids and the engine's log-probs; mutates the calls. */
export async function annotateEngineGap(rollouts: Rollout[], ours: PolicyEngine): Promise<EngineGap> {
  for (const r of rollouts)
    for (const call of r.calls) {
      const prompt = call.promptTokenIds;
      const ids = call.responseTokenIds;
      if (!prompt || !ids || !call.responseLogProbs || ids.length === 0 || call.trainerLogProbs) continue;
      const T = prompt.length + ids.length;
      if (T > ours.config.contextLength) continue;
      const tokens = new Uint32Array(T);
      tokens.set(prompt);
      tokens.set(ids, prompt.length);
      const res = await ours.logProbs({
        tokens,
        mask: new Float32Array(T).fill(1),
        batchSize: 1,
        seqLen: T,
        temperature: call.request.sampling.temperature || 1,
      });
      call.trainerLogProbs = res.logProbs.slice(prompt.length);
      call.trainerEntropy = res.entropy.slice(prompt.length);
    }
  return engineGapOf(rollouts);
}

/** The gap over calls already scored (annotateEngineGap, or a trace that carries trainer log-probs). */
export function engineGapOf(rollouts: Rollout[]): EngineGap {
  const engine: number[] = [];
  const trainer: number[] = [];
  let scored = 0;
  let calls = 0;
  for (const r of rollouts)
    for (const call of r.calls) {
      const ids = call.responseTokenIds;
      const lp = call.responseLogProbs;
      if (!call.promptTokenIds || !ids || !lp || ids.length === 0) continue;
      calls++;
      const t = call.trainerLogProbs;
      if (!t) continue;
      scored++;
      for (let j = 0; j < ids.length; j++)
        if (Number.isFinite(lp[j]) && Number.isFinite(t[j])) {
          engine.push(lp[j]);
          trainer.push(t[j]);
        }
    }
  return { stats: mismatchStats(engine, trainer), scored, calls };
}

/** One line: `max |Δ log-prob| 3.1e-6, mean 8.2e-7 over 412 tokens (12 / 12 calls)`. */
export function engineGapLine(g: EngineGap): string {
  return (
    `max |Δ log-prob| ${g.stats.maxAbsLogProbDiff.toExponential(2)}, mean ${g.stats.meanAbsLogProbDiff.toExponential(2)} ` +
    `over ${g.stats.tokens} tokens (${g.scored} / ${g.calls} calls scored)`
  );
}
