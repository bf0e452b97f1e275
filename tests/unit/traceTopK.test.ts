import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { parseJsonlTrace, toJsonlTrace } from '../../src/core/trace/io';
import { formatIssue, type Rollout } from '../../src/core/trace/types';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { createPolicyEngine } from '../../src/engine/policy';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { topKLogProbs } from '../../src/engine/sampling';
import { DEFAULT_TRACE_TOP_K, PolicyChatEngine } from '../../src/harness/policyEngine';
import { LlmProxy } from '../../src/harness/proxy';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import { alternativeLines, callTokenView } from '../../src/ui/trace/tokenView';

const root = join(import.meta.dirname, '../..');

describe('top-k alternatives per sampled token', () => {
  it('topKLogProbs is the head of the fully sorted log-softmax at the temperature (ties by id)', () => {
    const logits = Float32Array.from([0.5, 2, -1, 2, 0.25, 3, -4, 0.5]);
    const t = 0.7;
    const lse = Math.log(logits.reduce((s, x) => s + Math.exp(x / t), 0));
    const order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b);
    const r = topKLogProbs(logits, t, 4);
    expect(r.ids).toEqual(order.slice(0, 4));
    expect(r.ids).toEqual([5, 1, 3, 0]);
    r.logProbs.forEach((lp, j) => {
      expect(lp).toBeCloseTo(logits[order[j]] / t - lse, 10);
    });
    // greedy (temperature 0) reports the temperature-1 distribution, as the sampled log-prob does
    const g = topKLogProbs(logits, 0, 2);
    const lse1 = Math.log(logits.reduce((s, x) => s + Math.exp(x), 0));
    expect(g.logProbs[0]).toBeCloseTo(3 - lse1, 10);
    expect(topKLogProbs(logits, 1, 20).ids).toHaveLength(8);
  });

  it('LlamaCpuPolicy records the top-5 of the full next-token distribution at every sampled position', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(root, 'tests/models/qwen3')));
    const engine = new LlamaCpuPolicy(folder.config, folder.params);
    const promptIds = [5, 17, 3, 99, 42, 8];
    const temperature = 0.8;
    const s = await engine.sample({ promptIds, temperature, topP: 0.9, maxTokens: 10, seed: 3, topK: 5 });
    expect(s.topK).toHaveLength(s.tokenIds.length);
    // an independent path: one full forward over prompt + continuation, its fused head's top-k at each position
    const all = [...promptIds, ...s.tokenIds];
    const T = all.length;
    const positions = s.tokenIds.map((_, i) => promptIds.length - 1 + i);
    const full = await engine.topK(
      {
        tokens: Uint32Array.from(all),
        mask: new Float32Array(T).fill(1),
        batchSize: 1,
        seqLen: T,
        temperature,
      },
      positions,
      5,
    );
    s.topK!.forEach((a, i) => {
      expect(a.ids).toEqual(full.topk[i].ids);
      a.logProbs.forEach((lp, j) => {
        expect(lp).toBeCloseTo(full.topk[i].logprobs[j], 4);
      });
      // the sampled token's log-prob is its entry where it is among the alternatives, else below them all
      const at = a.ids.indexOf(s.tokenIds[i]);
      if (at >= 0) expect(s.logProbs[i]).toBeCloseTo(a.logProbs[at], 5);
      else expect(s.logProbs[i]).toBeLessThanOrEqual(a.logProbs[4] + 1e-6);
    });
    const none = await engine.sample({ promptIds, temperature, topP: 1, maxTokens: 3, seed: 3 });
    expect(none.topK).toBeUndefined();
    await expect(
      engine.sample({ promptIds, temperature, topP: 1, maxTokens: 3, seed: 3, topK: 1.5 }),
    ).rejects.toThrow(/topK must be an integer in \[0, \d+\], got 1.5/);
  });

  it('the proxy puts them in the trace call, they survive the JSONL round trip, and the tooltip lists them', async () => {
    const read = (f: string) => JSON.parse(readFileSync(join(root, 'public/tokenizer', f), 'utf8'));
    const tok = new ChatTokenizer('policy', read('tokenizer.json'), read('tokenizer_config.json'));
    const config = { vocabSize: 1024, contextLength: 512, layers: 1, width: 32, heads: 2, seed: 5 };
    const { engine: policy } = await createPolicyEngine({ backend: 'cpu', config });
    const proxy = new LlmProxy({
      engine: new PolicyChatEngine(policy, tok, { seed: 2 }),
      tokenizer: tok,
      maxResponseTokens: 8,
      maxContextTokens: 512,
    });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'val',
      n: 1,
      groupSize: 2,
      seed: 1,
      behaviours: [],
    };
    const rollouts = await runInline(spec, planRollouts(spec), proxy);
    const calls = rollouts.flatMap((r) => r.calls);
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      const n = c.responseTokenIds!.length;
      const a = c.responseTopK!;
      expect(a.k).toBe(DEFAULT_TRACE_TOP_K);
      expect(a.ids).toHaveLength(n * a.k);
      for (let i = 0; i < n; i++) {
        const at = Array.from(a.ids.subarray(i * a.k, (i + 1) * a.k)).indexOf(c.responseTokenIds![i]);
        if (at >= 0) expect(c.responseLogProbs![i]).toBeCloseTo(a.logProbs[i * a.k + at], 5);
      }
    }
    const back = parseJsonlTrace(toJsonlTrace(rollouts));
    expect(back.issues).toEqual([]);
    expect(back.rollouts).toEqual(rollouts);
    expect(back.rollouts[0].calls[0].responseTopK!.ids).toBeInstanceOf(Int32Array);

    const c = back.rollouts[0].calls[0];
    const text = new Map<number, string>([[c.responseTopK!.ids[0], 'hello']]);
    const lines = alternativeLines(c, 0, text);
    expect(lines).toHaveLength(1 + DEFAULT_TRACE_TOP_K);
    expect(lines[0]).toBe('top-5 (engine)');
    expect(lines[1]).toBe(
      `1. "hello" · id ${c.responseTopK!.ids[0]} · p ${Math.exp(c.responseTopK!.logProbs[0]).toFixed(4)}`,
    );
    expect(lines[2]).toMatch(
      new RegExp(`^2\\. "<${c.responseTopK!.ids[1]}>" · id ${c.responseTopK!.ids[1]} · p `),
    );
    expect(callTokenView(c, text).alternatives?.(0)).toEqual(lines);
    expect(alternativeLines(c, c.responseTokenIds!.length, text)).toEqual([]);
  });

  it('the reader refuses a malformed response_top_k, naming the field', () => {
    const base: Rollout = {
      rolloutId: 'r',
      dataId: 'd',
      isTrain: true,
      state: 'succeeded',
      calls: [
        {
          request: { model: 'm', messages: [{ role: 'user', content: 'hi' }], sampling: {} },
          response: { message: { role: 'assistant', content: 'ab' }, finishReason: 'stop' },
          promptTokenIds: Int32Array.from([1, 2]),
          responseTokenIds: Int32Array.from([3, 4]),
          responseLogProbs: Float32Array.from([-0.5, -0.25]),
          responseTopK: {
            k: 2,
            ids: Int32Array.from([3, 7, 4, 3]),
            logProbs: Float32Array.from([-0.5, -1, -0.25, -2]),
          },
          httpStatus: 200,
        },
      ],
      rewards: [],
      finalReward: null,
      metadata: {},
    };
    const rec = JSON.parse(toJsonlTrace([base]));
    expect(rec.calls[0].response_top_k).toEqual({
      k: 2,
      ids: [3, 7, 4, 3],
      log_probs: [-0.5, -1, -0.25, -2],
    });
    const bad = (edit: (t: Record<string, unknown>, call: Record<string, unknown>) => void) => {
      const r = structuredClone(rec);
      edit(r.calls[0].response_top_k, r.calls[0]);
      return parseJsonlTrace(JSON.stringify(r)).issues.map(formatIssue);
    };
    expect(bad(() => {})).toEqual([]);
    expect(bad((t) => (t.k = 0))).toEqual([
      'line 1: calls[0].response_top_k.k must be an integer in [1, 64], got 0',
    ]);
    expect(bad((t) => (t.ids = [3, 7, 4]))).toEqual([
      'line 1: calls[0].response_top_k.ids has 3 values; k = 2 alternatives for each of the 2 response tokens make 4',
    ]);
    expect(bad((t) => (t.log_probs = [-0.5, -1, -0.25, null]))).toEqual([
      'line 1: calls[0].response_top_k.log_probs[3] must be a finite log-prob ≤ 0, got a non-finite value',
    ]);
    expect(bad((t) => (t.log_probs = [-0.5, 0.5, -0.25, -2]))).toEqual([
      'line 1: calls[0].response_top_k.log_probs[1] must be a finite log-prob ≤ 0, got 0.5',
    ]);
    expect(bad((t) => (t.log_probs = [-1, -0.5, -0.25, -2]))).toEqual([
      "line 1: calls[0].response_top_k.log_probs[1] is -0.5, above the previous alternative's -1: a position's alternatives are in descending order",
    ]);
    expect(bad((t) => (t.ids = [3, -7, 4, 3]))).toEqual([
      'line 1: calls[0].response_top_k.ids[1] must be a token id (integer ≥ 0), got -7',
    ]);
    expect(bad((_t, call) => (call.response_top_k = [1, 2]))).toHaveLength(1);
  });
});
