import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { computeTrainerAdvantages, microBatchGradient, ppoMiniBatches } from '../../../src/core/pipeline';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { PolicyChatEngine } from '../../../src/harness/policyEngine';
import { LlmProxy } from '../../../src/harness/proxy';
import { getHarness } from '../../../src/harness/registry';
import { resolveTrainConfig } from '../../../src/train/config';
import {
  gatherTokens,
  LayoutError,
  layoutRows,
  microBatches,
  paddedLength,
  scatterWeights,
} from '../../../src/train/layout';
import { buildStepRows } from '../../../src/train/objective';
import { HarnessRolloutSource, inlineRunner } from '../../../src/train/source';
import { rowLogProbs } from '../../../src/train/step';

const tok = loadTokenizer('policy');
const pc = { vocabSize: 1024, contextLength: 1024, layers: 1, width: 32, heads: 2, seed: 3 };

/** Rollouts sampled from `policy` itself through the proxy, so their engine log-probs are the policy's. */
async function sampled(policy: CpuPolicy, harness: 'search' | 'instruction-short', n: number) {
  const proxy = new LlmProxy({
    engine: new PolicyChatEngine(policy, tok, { seed: 5, temperature: 1 }),
    tokenizer: tok,
    temperature: 1,
    maxResponseTokens: 24,
    maxContextTokens: 1024,
  });
  const src = new HarnessRolloutSource({
    harness,
    behaviours: [],
    maxTurns: 2,
    proxy,
    runner: inlineRunner(proxy.handle),
  });
  const tasks = getHarness(harness).makeTasks('train', 1, n);
  src.submit(
    tasks.map((t, i) => ({
      dataId: t.id,
      task: t,
      split: 'train',
      step: 1,
      sampleIdx: i,
      rolloutIds: [`r${i}`],
    })),
  );
  const out = [];
  for (let i = 0; i < n; i++) out.push(await src.next());
  return out;
}

describe('rows → engine batch layout', () => {
  it('puts response token j of row r at |prompt_r| + j and gathers the trainer log-probs the engine sampled with', async () => {
    const policy = new CpuPolicy(pc);
    const rollouts = await sampled(policy, 'search', 3);
    const cfg = resolveTrainConfig({
      actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 1 } },
      data: { train_batch_size: 1 },
      lab: { train_tasks: 1 },
    });
    const rows = buildStepRows(rollouts, cfg, { trimSeed: 0 }).batch;
    expect(rows.nRows).toBeGreaterThan(0);
    const all = Array.from({ length: rows.nRows }, (_, i) => i);
    const lay = layoutRows(rows, all, { contextLength: 1024 });
    const T = lay.batch.seqLen;
    for (let b = 0; b < rows.nRows; b++) {
      const p = rows.promptOffsets[b + 1] - rows.promptOffsets[b];
      expect(lay.batch.tokens[b * T]).toBe(rows.promptIds[rows.promptOffsets[b]]);
      expect(lay.batch.tokens[b * T + p]).toBe(rows.responseIds[rows.offsets[b]]);
    }
    // the recomputed log-probs (padded batch, micro-batches) equal the ones recorded while sampling
    const { logProbs } = await rowLogProbs(policy, rows, all, 2, 1);
    const rec = rows.responseLogProbs as Float32Array;
    let checked = 0;
    for (let t = 0; t < rows.mask.length; t++) {
      if (!rows.mask[t]) continue;
      expect(Math.abs(logProbs[t] - rec[t])).toBeLessThan(2e-4);
      checked++;
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('weights go in negated (the engine minimises −Σ w·logπ), so the engine gradient is core’s ∂L/∂θ', async () => {
    const policy = new CpuPolicy(pc);
    const rollouts = await sampled(policy, 'instruction-short', 4);
    rollouts.forEach((r, i) => {
      r.finalReward = [1, 0, 0.5, 0][i];
      r.dataId = 'g';
    });
    const cfg = resolveTrainConfig({
      actor_rollout_ref: {
        actor: { ppo_mini_batch_size: 1, policy_loss: { loss_mode: 'vanilla' } },
        rollout: { n: 4 },
      },
      data: { train_batch_size: 1 },
      lab: { train_tasks: 1, reward_dtype: 'float32' },
      algorithm: { adv_estimator: 'rloo' },
    });
    const step = buildStepRows(rollouts, cfg, { trimSeed: 0 });
    const rows = step.batch;
    const all = Array.from({ length: rows.nRows }, (_, i) => i);
    const lay = layoutRows(rows, all, { contextLength: 1024 });
    const { logProbs: old } = await rowLogProbs(policy, rows, all, 8, 1);
    const adv = new Float32Array(rows.mask.length);
    for (let r = 0; r < rows.nRows; r++)
      for (let t = rows.offsets[r]; t < rows.offsets[r + 1]; t++)
        adv[t] = rows.mask[t] ? (r % 2 ? -1 : 1) * 0.7 : 0;
    // core's advantages for these rows, with the estimator's replaced by fixed ones of both signs
    const ta = { ...computeTrainerAdvantages(step.trainer, { oldLogProbs: old }), advantages: adv };
    const [plan] = ppoMiniBatches(step.trainer, ta);
    expect(Array.from(plan.rows)).toEqual(all);
    // L(θ) = the mini-batch's PPO loss at the current log-probs (core's); its gradient by finite differences
    const loss = async () => {
      const cur = gatherTokens((await policy.logProbs(lay.batch)).logProbs, lay);
      return microBatchGradient(step.trainer, ta, plan, all, cur).pgLoss;
    };
    const res = microBatchGradient(step.trainer, ta, plan, all, old);
    policy.computeGrads(lay.batch, scatterWeights(res.grad, lay));
    const g = new Float32Array(policy.grads);
    const order = Array.from(g.keys())
      .sort((a, b) => Math.abs(g[b]) - Math.abs(g[a]))
      .slice(0, 6);
    for (const i of order) {
      const x = policy.params[i];
      const eps = 1e-2;
      policy.params[i] = x + eps;
      const up = await loss();
      policy.params[i] = x - eps;
      const down = await loss();
      policy.params[i] = x;
      const fd = (up - down) / (2 * eps);
      expect(Math.abs(fd - g[i])).toBeLessThanOrEqual(0.05 * Math.abs(g[i]) + 1e-6);
    }
  });

  it('multi-turn expert rows: observation tokens sit in the response with mask 0 and get no weight', async () => {
    const { expertRollouts } = await import('../../../src/train/sft');
    const rollouts = await expertRollouts('search', tok, 'train', 2, 3);
    const cfg = resolveTrainConfig({
      actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 1 } },
      data: { train_batch_size: 1 },
      lab: { train_tasks: 1 },
    });
    const rows = buildStepRows(rollouts, cfg, { trimSeed: 0 }).batch;
    expect(rows.nRows).toBe(3); // each expert rollout merges into one row
    const obs = Array.from(rows.mask).filter((m) => m === 0).length;
    expect(obs).toBeGreaterThan(100);
    const lay = layoutRows(rows, [0, 1, 2], { contextLength: 1024 });
    const grads = Float32Array.from(rows.mask, (m) => (m ? 1 : 0));
    const w = scatterWeights(grads, lay);
    let nonzero = 0;
    for (let i = 0; i < w.length; i++) if (w[i] !== 0) nonzero++;
    expect(nonzero).toBe(rows.mask.length - obs);
    // and those positions are mask-1 response positions of the engine batch
    for (let i = 0; i < w.length; i++) if (w[i] !== 0) expect(lay.batch.mask[i]).toBe(1);
  });

  it('pads to few lengths, sorts micro-batches by length and refuses rows past the context', () => {
    expect(paddedLength(17, 1024)).toBe(32);
    expect(paddedLength(1000, 1024)).toBe(1024);
    expect(paddedLength(900, 512)).toBe(512);
    const src = {
      nRows: 3,
      offsets: Int32Array.from([0, 3, 4, 9]),
      mask: new Uint8Array(9).fill(1),
      promptOffsets: Int32Array.from([0, 2, 3, 5]),
      promptIds: Int32Array.from([1, 2, 3, 4, 5]),
      responseIds: Int32Array.from([6, 7, 8, 9, 10, 11, 12, 13, 14]),
    };
    expect(microBatches(src, [0, 1, 2], 2)).toEqual([[1, 0], [2]]);
    const lay = layoutRows(src, [1, 0], { contextLength: 16 });
    expect(Array.from(lay.index)).toEqual([1, 16 + 2, 16 + 3, 16 + 4]);
    const w = scatterWeights(Float32Array.from([1, 2, 3, 4]), lay);
    expect(w[1]).toBe(-1);
    expect(w[16 + 4]).toBe(-4);
    expect(w.reduce((a, b) => a + b, 0)).toBe(-10);
    expect(() => layoutRows(src, [2], { contextLength: 6, rolloutIds: ['a', 'b', 'c'] })).toThrow(
      LayoutError,
    );
    expect(() => layoutRows(src, [2], { contextLength: 6, rolloutIds: ['a', 'b', 'c'] })).toThrow(
      "row 2 (rollout c) has 7 tokens (prompt 2 + response 5); the policy's context is 6",
    );
  });
});
