/**
 * The agl-cpu trainer's update (train/aglStep.ts) and the policy server it pushes weights to
 * (cli/policyServer.ts): the update moves the policy the way the advantages say, the layout puts each token's
 * weight at its position, dropped rows are removed, and the server answers with vLLM's token-id fields.
 */
import { describe, expect, it } from 'vitest';
import { encodeWeightPush, PolicyServer, parseWeightPush } from '../../src/cli/policyServer';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { effectiveWeights } from '../../src/core/algos/effectiveWeights';
import type { Rollout } from '../../src/core/trace/types';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { layoutRows, updateOnRollouts, withoutDroppedRows } from '../../src/train/aglStep';

const cfg = { vocabSize: 48, contextLength: 24, layers: 1, width: 16, heads: 2, seed: 5 };

function rollout(id: string, dataId: string, prompt: number[], response: number[], reward: number): Rollout {
  return {
    rolloutId: id,
    dataId,
    isTrain: true,
    state: 'succeeded',
    calls: [
      {
        request: { messages: [], sampling: {} },
        response: null,
        promptTokenIds: Int32Array.from(prompt),
        responseTokenIds: Int32Array.from(response),
        responseLogProbs: new Float32Array(response.length).fill(-1),
        httpStatus: 200,
      },
    ],
    rewards: [{ value: reward }],
    finalReward: reward,
    metadata: {},
  };
}

/** log π of each rollout's response under the engine (summed over its tokens). */
async function responseLogProb(engine: CpuPolicy, r: Rollout): Promise<number> {
  const c = r.calls[0];
  const p = Array.from(c.promptTokenIds ?? []);
  const q = Array.from(c.responseTokenIds ?? []);
  const tokens = Uint32Array.from([...p, ...q]);
  const { logProbs } = await engine.logProbs({
    tokens,
    batchSize: 1,
    seqLen: tokens.length,
    mask: new Float32Array(tokens.length).fill(1),
  });
  let s = 0;
  for (let i = p.length; i < tokens.length; i++) s += logProbs[i];
  return s;
}

const opts = {
  level: 'trajectory' as const,
  maxPromptLength: 16,
  maxResponseLength: 8,
  advEstimator: 'grpo',
  normAdvByStd: true,
  rolloutLevel: true,
  lossMode: 'token-mean' as const,
  clipRatioLow: 0.2,
  clipRatioHigh: 0.2,
};

describe('the agl-cpu update', () => {
  it('raises the log-prob of the rewarded response and lowers the other (one GRPO group)', async () => {
    const engine = new CpuPolicy(cfg, { lr: 1e-2, weightDecay: 0 });
    const good = rollout('a', 'task', [1, 2, 3, 4], [7, 8, 9], 1);
    const bad = rollout('b', 'task', [1, 2, 3, 4], [10, 11, 12], 0);
    const before = [await responseLogProb(engine, good), await responseLogProb(engine, bad)];
    const { metrics, trained } = await updateOnRollouts(engine, [good, bad], opts);
    expect(trained).toBe(true);
    const after = [await responseLogProb(engine, good), await responseLogProb(engine, bad)];
    expect(after[0]).toBeGreaterThan(before[0]);
    expect(after[1]).toBeLessThan(before[1]);
    // GRPO over {1, 0} with the unbiased std: ±0.5/0.7071 on every token; token-mean: L = −mean(A) = 0
    expect(metrics['critic/advantages/max']).toBeCloseTo(Math.SQRT1_2, 3);
    expect(metrics['critic/advantages/min']).toBeCloseTo(-Math.SQRT1_2, 3);
    expect(metrics['critic/score/mean']).toBe(0.5);
    expect(metrics['actor/pg_loss']).toBeCloseTo(0, 6);
    expect(metrics['actor/grad_norm']).toBeGreaterThan(0);
    expect(metrics['harness_lab/rows']).toBe(2);
    expect(metrics['harness_lab/trainable_tokens']).toBe(6);
    // the rollouts' recorded log-probs (−1) against the trainer's old log-probs
    expect(metrics['training/rollout_probs_diff_max']).toBeGreaterThan(0);
  });

  it('does not update when every advantage is zero (equal rewards in the group)', async () => {
    const engine = new CpuPolicy(cfg, { lr: 1e-2, weightDecay: 0 });
    const p0 = await engine.getParams();
    const { metrics } = await updateOnRollouts(
      engine,
      [rollout('a', 't', [1, 2], [3, 4], 0), rollout('b', 't', [1, 2], [5, 6], 0)],
      opts,
    );
    expect(metrics['actor/grad_norm']).toBe(0);
    expect(Array.from(await engine.getParams())).toEqual(Array.from(p0));
  });

  it('lays weights at the positions of their response tokens and removes dropped rows first', () => {
    const rs = [
      rollout('a', 't', [1, 2, 3], [4, 5], 1),
      rollout(
        'long',
        't',
        Array.from({ length: 20 }, (_, i) => i + 1),
        [6],
        0,
      ),
      rollout('c', 't', [7], [8, 9, 10], 0),
    ];
    const built = buildTrainingBatch(rs, { ...opts, padTokenId: 0, rewardFillnaValue: 0 });
    expect(Array.from(built.batch.isDrop)).toEqual([0, 1, 0]);
    const kept = withoutDroppedRows(built.batch);
    expect(kept.rolloutIds).toEqual(['a', 'c']);
    expect(Array.from(kept.responseIds)).toEqual([4, 5, 8, 9, 10]);
    const w = Float32Array.from([0.1, 0.2, 0.3, 0.4, 0.5]);
    const { engineBatch, weights, responseIndex } = layoutRows(kept, w, 24);
    expect(engineBatch.seqLen).toBe(5);
    expect(Array.from(engineBatch.tokens)).toEqual([1, 2, 3, 4, 5, 7, 8, 9, 10, 0]);
    expect(Array.from(engineBatch.mask)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    expect(Array.from(weights).map((x) => Math.round(x * 10) / 10)).toEqual([
      0, 0, 0, 0.1, 0.2, 0, 0.3, 0.4, 0.5, 0,
    ]);
    expect(Array.from(responseIndex)).toEqual([-1, -1, -1, 0, 1, -1, 2, 3, 4, -1]);
    // the group statistics see two rows, not three
    const eff = effectiveWeights(kept, {
      advEstimator: 'grpo',
      rolloutLevel: true,
      lossAggMode: 'token-mean',
    });
    expect(eff.groups.nGroups).toBe(1);
  });
});

describe('the agl-cpu update with a failed rollout', () => {
  it('skips a rollout that produced no rows (its agent failed before any call) instead of failing', async () => {
    const engine = new CpuPolicy(cfg, { lr: 1e-2, weightDecay: 0 });
    const failed: Rollout = {
      ...rollout('f', 't', [1], [2], 0),
      calls: [],
      rewards: [],
      finalReward: null,
      state: 'failed',
    };
    const rs = [rollout('a', 't', [1, 2], [3, 4], 1), failed, rollout('c', 't', [1, 2], [5, 6], 0)];
    const { metrics, trained } = await updateOnRollouts(engine, rs, opts);
    expect(trained).toBe(true);
    expect(metrics['harness_lab/rows']).toBe(2);
    expect(metrics['training/n_rollouts']).toBe(3);
  });
});

describe('the policy server', () => {
  it('answers chat completions with vLLM token-id fields and takes weight pushes', async () => {
    const tok = loadTokenizer('policy');
    const engine = new CpuPolicy({ ...cfg, vocabSize: tok.vocabSize, contextLength: 128 });
    const server = new PolicyServer({ engine, tokenizer: tok, model: 'm', maxTokens: 6, seed: 1 });
    const res = await server.handle({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: {},
      body: {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        return_token_ids: true,
        logprobs: true,
        temperature: 1,
      },
    });
    expect(res.status).toBe(200);
    const body = res.body as {
      prompt_token_ids: number[];
      choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
    };
    expect(body.prompt_token_ids.length).toBeGreaterThan(0);
    expect(body.choices[0].token_ids.length).toBeGreaterThan(0);
    expect(body.choices[0].token_ids.length).toBeLessThanOrEqual(6);
    expect(body.choices[0].logprobs.content.map((c) => c.logprob).every((x) => x < 0)).toBe(true);
    // a new set of weights, pushed as the trainer pushes it
    const p = await engine.getParams();
    const q = p.map((x) => x * 0.5);
    const push = await server.handle({
      method: 'POST',
      path: '/weights',
      headers: {},
      body: encodeWeightPush(q, 3),
    });
    expect(push.status).toBe(200);
    expect(server.version).toBe(3);
    expect(Array.from(await engine.getParams())).toEqual(Array.from(q));
    const models = await server.handle({ method: 'GET', path: '/v1/models', headers: {} });
    expect((models.body as { data: { version: number }[] }).data[0].version).toBe(3);
    const wrong = await server.handle({
      method: 'POST',
      path: '/weights',
      headers: {},
      body: { version: 4, params_f32_base64: Buffer.from(new Float32Array(3).buffer).toString('base64') },
    });
    expect(wrong.status).toBe(400);
    expect(JSON.stringify(wrong.body)).toMatch(/holds 12 bytes; this policy has \d+ float32 parameters/);
    expect(() => parseWeightPush({ version: -1, params_f32_base64: '' }, 1)).toThrow(
      /version must be a non-negative integer/,
    );
    const nan = Float32Array.from([1, Number.NaN]);
    expect(() => parseWeightPush(encodeWeightPush(nan, 1), 2)).toThrow(/parameter 1 is not finite/);
  });
});
