import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { forwardCpu, layoutOf, resolveConfig } from '../../src/engine/model';
import type { WeightPrecision } from '../../src/engine/onnx/causalLm';
import { nodeFolderReader, tempModelFolder } from '../../src/engine/onnx/folder';
import { exportHfFolder, type HfTokenizerFiles } from '../../src/engine/onnx/hfFolder';
import { mismatchStats } from '../../src/engine/onnx/mismatch';
import { OrtCausalLm } from '../../src/engine/onnx/ortLm';
import { TransformersCausalLm, transformersEnv } from '../../src/engine/onnx/transformersLm';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import type { ChatEngine } from '../../src/harness/engines';
import { createOrtChatEngine } from '../../src/harness/onnxEngine';
import { PolicyChatEngine } from '../../src/harness/policyEngine';
import { LlmProxy } from '../../src/harness/proxy';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import type { SamplerChatEngine } from '../../src/harness/samplerEngine';
import {
  createTransformersFolderEngine,
  createTransformersPolicyEngine,
} from '../../src/harness/transformersEngine';

const root = join(import.meta.dirname, '../..');
const read = (f: string) => JSON.parse(readFileSync(join(root, 'public/tokenizer', f), 'utf8'));
const tokFiles: HfTokenizerFiles = {
  tokenizerJson: read('tokenizer.json'),
  tokenizerConfig: read('tokenizer_config.json'),
};
const tok = new ChatTokenizer('policy', tokFiles.tokenizerJson, tokFiles.tokenizerConfig);
const config = resolveConfig({
  vocabSize: 1024,
  contextLength: 384,
  layers: 2,
  width: 32,
  heads: 4,
  seed: 5,
});
ort.env.wasm.numThreads = 1;

/**
 * A policy trained for a few steps to continue one chat turn, so greedy decoding has clear margins (a fresh
 * init's logits are nearly flat, where two float32 engines could legitimately pick different argmaxes).
 */
async function trainedPolicy(): Promise<{ policy: CpuPolicy; prompt: number[] }> {
  const policy = new CpuPolicy(config, { lr: 3e-3, weightDecay: 0 });
  const ids = Array.from(
    tok.encodeChat(
      [
        { role: 'user', content: 'Name three colours.' },
        { role: 'assistant', content: 'Red, green and blue are three colours.' },
      ],
      { addGenerationPrompt: false },
    ),
  );
  const T = ids.length;
  const batch = { tokens: Uint32Array.from(ids), batchSize: 1, seqLen: T, mask: new Float32Array(T).fill(1) };
  const weights = Float32Array.from(ids, (_, i) => (i ? 1 / T : 0));
  for (let s = 0; s < 60; s++) await policy.trainStep(batch, weights);
  const prompt = Array.from(
    tok.encodeChat([{ role: 'user', content: 'Name three colours.' }], { addGenerationPrompt: true }),
  );
  return { policy, prompt };
}

/** The smallest top-1/top-2 logit gap along a greedy path, from the CPU reference. */
function greedyMargin(policy: CpuPolicy, prompt: number[], generated: number[]): number {
  const seq = [...prompt, ...generated];
  const V = config.vocabSize;
  const { logits } = forwardCpu(config, layoutOf(config), policy.params, {
    tokens: Uint32Array.from(seq),
    batchSize: 1,
    seqLen: seq.length,
    mask: new Float32Array(seq.length).fill(1),
  });
  let m = Number.POSITIVE_INFINITY;
  for (let t = prompt.length - 1; t < seq.length - 1; t++) {
    const row = Array.from(logits.subarray(t * V, (t + 1) * V)).sort((a, b) => b - a);
    m = Math.min(m, row[0] - row[1]);
  }
  return m;
}

describe('transformers.js loads the exported folder as an ordinary text-generation model', () => {
  it('its greedy generate() and text-generation pipeline give our engine’s greedy tokens', async () => {
    const { policy, prompt } = await trainedPolicy();
    const ours = await policy.sample({ promptIds: prompt, temperature: 0, topP: 1, maxTokens: 10, seed: 0 });
    expect(ours.tokenIds).toHaveLength(10);
    // the comparison means something only if no step is a near-tie
    expect(greedyMargin(policy, prompt, ours.tokenIds)).toBeGreaterThan(1e-2);
    const { dir, remove } = await tempModelFolder(exportHfFolder(config, policy.params, tokFiles));
    try {
      const t = await transformersEnv();
      const model = await t.AutoModelForCausalLM.from_pretrained(dir, { dtype: 'fp32', device: 'cpu' });
      const out = (await model.generate({
        input_ids: new t.Tensor('int64', BigInt64Array.from(prompt, BigInt), [1, prompt.length]),
        attention_mask: new t.Tensor('int64', new BigInt64Array(prompt.length).fill(1n), [1, prompt.length]),
        max_new_tokens: 10,
        do_sample: false,
      } as never)) as { data: BigInt64Array };
      expect(Array.from(out.data, Number).slice(prompt.length)).toEqual(ours.tokenIds);
      await model.dispose();
      // the pipeline with transformers.js's own tokenizer of tokenizer.json: same prompt ids, same text
      const text = tok.decode(prompt);
      const tjTok = await t.AutoTokenizer.from_pretrained(dir);
      expect(Array.from(tjTok.encode(text, { add_special_tokens: false }))).toEqual(prompt);
      const gen = await t.pipeline('text-generation', dir, { dtype: 'fp32', device: 'cpu' });
      const res = (await gen(text, { max_new_tokens: 10, do_sample: false, return_full_text: false })) as {
        generated_text: string;
      }[];
      expect(res[0].generated_text).toBe(tok.decode(ours.tokenIds, { skipSpecialTokens: true }));
      await gen.dispose();
    } finally {
      await remove();
    }
  });
});

describe('rollout engines that are not the trainer', () => {
  let policy: CpuPolicy;
  const engines: SamplerChatEngine[] = [];
  beforeAll(async () => {
    policy = new CpuPolicy(config);
  });
  afterAll(async () => {
    for (const e of engines) await e.dispose();
  });
  const track = (e: SamplerChatEngine) => {
    engines.push(e);
    return e;
  };
  const makers: Record<string, (precision: WeightPrecision) => Promise<SamplerChatEngine>> = {
    'ort-wasm': (precision) =>
      createOrtChatEngine(tok, { ort, ep: 'wasm', config, params: policy.params, precision, seed: 9 }),
    'transformers.js-cpu': (precision) =>
      createTransformersPolicyEngine(tok, {
        device: 'cpu',
        config,
        params: policy.params,
        tokenizerFiles: tokFiles,
        precision,
        seed: 9,
      }),
  };

  /** Runs instruction rollouts through the proxy and compares every recorded log-prob with the trainer's. */
  async function rolloutMismatch(engine: ChatEngine) {
    const proxy = new LlmProxy({ engine, tokenizer: tok, maxResponseTokens: 12, maxContextTokens: 384 });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'val',
      n: 2,
      groupSize: 2,
      seed: 3,
      behaviours: [],
    };
    const rollouts = await runInline(spec, planRollouts(spec), proxy);
    const engineLp: number[] = [];
    const trainerLp: number[] = [];
    const ids: number[][] = [];
    for (const r of rollouts) {
      expect(r.state).toBe('succeeded');
      for (const c of r.calls) {
        const p = c.promptTokenIds as Int32Array;
        const resp = c.responseTokenIds as Int32Array;
        expect(c.responseLogProbs?.length).toBe(resp.length);
        ids.push(Array.from(resp));
        const T = p.length + resp.length;
        const tokens = new Uint32Array(T);
        tokens.set(p);
        tokens.set(resp, p.length);
        const lp = await policy.logProbs({
          tokens,
          batchSize: 1,
          seqLen: T,
          mask: new Float32Array(T).fill(1),
        });
        for (let i = 0; i < resp.length; i++) {
          engineLp.push((c.responseLogProbs as Float32Array)[i]);
          trainerLp.push(lp.logProbs[p.length + i]);
        }
      }
    }
    return { stats: mismatchStats(engineLp, trainerLp), ids, model: rollouts[0].calls[0].engine?.model };
  }

  /** The ids our own engine samples on the same rollouts (same run seed, so the same per-call seeds). */
  let reference: number[][] | null = null;
  const referenceIds = async () => {
    reference ??= (await rolloutMismatch(new PolicyChatEngine(policy, tok, { seed: 9 }))).ids;
    return reference;
  };

  for (const name of Object.keys(makers))
    it(`${name}: f32 samples the trainer's ids with its log-probs (float32 rounding only); int8 does not`, async () => {
      const f32 = track(await makers[name]('f32'));
      const a = await rolloutMismatch(f32);
      expect(a.model).toBe(`${name}-f32/policy`);
      expect(a.stats.tokens).toBeGreaterThan(20);
      expect(a.stats.maxAbsLogProbDiff).toBeLessThan(1e-4);
      // same seeds, same weights: the ids our own engine samples
      expect(a.ids).toEqual(await referenceIds());
      const int8 = track(await makers[name]('int8'));
      const b = await rolloutMismatch(int8);
      expect(b.model).toBe(`${name}-int8/policy`);
      expect(b.stats.meanAbsLogProbDiff).toBeGreaterThan(10 * a.stats.meanAbsLogProbDiff);
      expect(b.stats.maxAbsLogProbDiff).toBeGreaterThan(1e-3);
      // reproducible: the same run again gives the same ids and log-probs
      const again = await rolloutMismatch(int8);
      expect(again.ids).toEqual(b.ids);
      expect(again.stats).toEqual(b.stats);
    });

  for (const name of Object.keys(makers))
    it(`${name}: syncWeights makes the engine sample what the updated trainer samples`, async () => {
      const trainer = new CpuPolicy(config, { lr: 1e-2 }, policy.params);
      const engine = track(await makers[name]('f32'));
      const req = { promptIds: [1018, 40, 41, 42], temperature: 1, topP: 1, maxTokens: 8, seed: 4 };
      const before = await engine.sampler.sample(req);
      expect(before.tokenIds).toEqual((await trainer.sample(req)).tokenIds);
      const T = 12;
      const tokens = Uint32Array.from({ length: T }, (_, i) => (i * 37 + 5) % 1000);
      for (let s = 0; s < 3; s++)
        await trainer.trainStep(
          { tokens, batchSize: 1, seqLen: T, mask: new Float32Array(T).fill(1) },
          new Float32Array(T).fill(1),
        );
      const want = await trainer.sample(req);
      expect(want.logProbs).not.toEqual(before.logProbs);
      const cost = await engine.syncWeights(await trainer.getParams());
      expect(engine.syncs).toBe(1);
      expect(cost.bytes).toBeGreaterThan(4 * layoutOf(config).total);
      expect(cost.totalMs).toBeGreaterThanOrEqual(cost.exportMs);
      const after = await engine.sampler.sample(req);
      expect(after.tokenIds).toEqual(want.tokenIds);
      for (let i = 0; i < want.logProbs.length; i++)
        expect(after.logProbs[i]).toBeCloseTo(want.logProbs[i], 4);
    });

  it('a brought folder runs as an engine with its own tokenizer and refuses weight syncs', async () => {
    const { dir, remove } = await tempModelFolder(exportHfFolder(config, policy.params, tokFiles));
    try {
      const { engine, tokenizer } = await createTransformersFolderEngine(await nodeFolderReader(dir), {
        device: 'cpu',
        tokenizer: (f) => new ChatTokenizer('brought', f.tokenizerJson, f.tokenizerConfig),
      });
      track(engine);
      expect(tokenizer.name).toBe('brought');
      expect(engine.model).toBe('transformers.js-cpu-fp32/brought');
      const out = await engine.generate({
        rolloutId: 'r',
        callIndex: 0,
        messages: [{ role: 'user', content: 'hi' }],
        promptIds: null,
        maxTokens: 5,
      });
      expect(out.tokenIds.length).toBeGreaterThan(0);
      expect(out.logProbs.length).toBe(out.tokenIds.length);
      await expect(engine.syncWeights(policy.params)).rejects.toThrow(/inference only/);
    } finally {
      await remove();
    }
  });

  it('a folder whose model file is not ONNX fails naming the file', async () => {
    const files = exportHfFolder(config, policy.params, tokFiles);
    files.set('onnx/model.onnx', new TextEncoder().encode('not a model'));
    const { dir, remove } = await tempModelFolder(files);
    try {
      await expect(TransformersCausalLm.load(await nodeFolderReader(dir), { device: 'cpu' })).rejects.toThrow(
        /^onnx\/model\.onnx: could not be loaded by transformers\.js: /,
      );
    } finally {
      await remove();
    }
  });

  it('OrtCausalLm checks requests before running them', async () => {
    const lm = await OrtCausalLm.create({ ort, ep: 'wasm', config }, policy.params);
    await expect(
      lm.sample({ promptIds: [2000], temperature: 1, topP: 1, maxTokens: 2, seed: 0 }),
    ).rejects.toThrow('promptIds[0] = 2000 is not a token id in [0, 1024)');
    await lm.dispose();
  });
});
