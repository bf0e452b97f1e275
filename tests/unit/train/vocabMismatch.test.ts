/**
 * The full-vocabulary train–inference mismatch: KL(π_rollout ‖ π_train) and total variation over the whole
 * vocabulary, per response token of a kept step. The reference values here are computed in the test from each
 * engine's raw logits (an onnxruntime session of its own over the exported int8 model; the CPU engine's forward
 * activations), not from the code under test.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { command as analyze } from '../../../src/cli/commands/analyze';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { parseJsonlTrace, toJsonlTrace } from '../../../src/core/trace/io';
import { readVocabMismatch } from '../../../src/core/trace/io/jsonl';
import type { Rollout } from '../../../src/core/trace/types';
import {
  tokenDivergence,
  type VocabMismatchSummary,
  vocabMismatchMetrics,
} from '../../../src/core/vocabMismatch';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { readLlamaFolder } from '../../../src/engine/llama/hfFolder';
import { forwardCpu, layoutOf } from '../../../src/engine/model';
import { exportCausalLm, pastKeyName, pastValueName } from '../../../src/engine/onnx/causalLm';
import { nodeFolderReader } from '../../../src/engine/onnx/folder';
import { OrtCausalLm } from '../../../src/engine/onnx/ortLm';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { LlamaCpuPolicy } from '../../../src/engine/policy/llamaCpuPolicy';
import { resolveTrainConfig, type TrainConfigPatch } from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { ColocatedRolloutEngine, SamplerRolloutEngine } from '../../../src/train/rolloutEngine';
import { nodeRolloutEnv } from '../../../src/train/rolloutEnvNode';
import { inlineRunner } from '../../../src/train/source';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';
import { measureVocabMismatch } from '../../../src/train/vocabMismatch';
import type { ColorBy } from '../../../src/ui/tokens/quantities';
import { callTokenView, withVocabMismatch } from '../../../src/ui/trace/tokenView';

const tok = loadTokenizer('policy');
const ck = decodeCheckpoint(
  new Uint8Array(
    readFileSync(new URL('../../../public/checkpoints/instruction-short.safetensors', import.meta.url)),
  ),
);

/** log softmax(z / T) in float64, written here for the reference */
function logSoftmax(z: ArrayLike<number>, T: number): number[] {
  let mx = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < z.length; i++) mx = Math.max(mx, z[i] / T);
  let s = 0;
  for (let i = 0; i < z.length; i++) s += Math.exp(z[i] / T - mx);
  const l = mx + Math.log(s);
  return Array.from(z, (x) => x / T - l);
}

/** the reference: KL(p ‖ q) and TV from two logits rows */
function reference(zr: ArrayLike<number>, zt: ArrayLike<number>, T: number) {
  const a = logSoftmax(zr, T);
  const b = logSoftmax(zt, T);
  let kl = 0;
  let tv = 0;
  for (let v = 0; v < a.length; v++) {
    kl += Math.exp(a[v]) * (a[v] - b[v]);
    tv += Math.abs(Math.exp(a[v]) - Math.exp(b[v]));
  }
  return { kl, tv: tv / 2, dp: a.map((x, v) => Math.abs(Math.exp(x) - Math.exp(b[v]))) };
}

/** a one-call rollout of the given ids */
function rolloutOf(prompt: number[], response: number[]): Rollout {
  return {
    rolloutId: 'r0',
    dataId: 'd0',
    isTrain: true,
    state: 'succeeded',
    finalReward: 1,
    rewards: [],
    metadata: {},
    calls: [
      {
        request: { messages: [], sampling: {} },
        response: { message: { role: 'assistant', content: '' }, finishReason: 'stop' },
        promptTokenIds: Int32Array.from(prompt),
        responseTokenIds: Int32Array.from(response),
        httpStatus: 200,
      },
    ],
  } as unknown as Rollout;
}

describe('full-vocabulary divergence (core)', () => {
  it('is KL and TV of the two distributions, the k most disagreeing tokens first; zero on equal inputs', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const za = Array.from({ length: 40 }, () => 4 * rand() - 2);
    const zb = za.map((x) => x + 0.3 * (rand() - 0.5));
    const ref = reference(za, zb, 1);
    const d = tokenDivergence(Float32Array.from(logSoftmax(za, 1)), Float32Array.from(logSoftmax(zb, 1)), 3);
    expect(d.kl).toBeGreaterThan(0);
    expect(d.kl).toBeCloseTo(ref.kl, 6);
    expect(d.tv).toBeCloseTo(ref.tv, 6);
    const order = ref.dp.map((x, v) => [x, v]).sort((p, q) => q[0] - p[0]);
    expect(d.ids).toEqual(order.slice(0, 3).map((p) => p[1]));
    expect(d.rolloutLogProbs[0]).toBeCloseTo(logSoftmax(za, 1)[d.ids[0]], 6);
    const same = Float32Array.from(logSoftmax(za, 1));
    const z = tokenDivergence(same, Float32Array.from(same), 3);
    expect(z.kl).toBe(0);
    expect(z.tv).toBe(0);
  });

  it('refuses inputs that are not two distributions over one vocabulary', () => {
    const p = Float32Array.from(logSoftmax([0, 1, 2], 1));
    expect(() => tokenDivergence(p, p.subarray(0, 2))).toThrow(
      "vocab mismatch: the rollout distribution has 3 tokens, the trainer's 2",
    );
    expect(() => tokenDivergence(p, Float32Array.of(0, 0, 0), 1)).toThrow(
      'vocab mismatch: the trainer log-probs are not a distribution (their probabilities sum to 3)',
    );
    expect(() => tokenDivergence(Float32Array.of(0, Number.NaN, -1), p, 1)).toThrow(
      'vocab mismatch: the rollout log-prob of token 1 is NaN',
    );
    expect(() => tokenDivergence(p, p, 4)).toThrow('vocab mismatch: k must be an integer in [1, 3], got 4');
  });

  it('reads back what it writes, and refuses a malformed vocab_mismatch field', () => {
    const base = {
      kl: [0.1, 0],
      tv: [0.05, 0],
      k: 1,
      ids: [3, 4],
      rollout_log_probs: [-1, -2],
      trainer_log_probs: [-1.1, -2],
    };
    const m = readVocabMismatch(base, 'calls[0].vocab_mismatch', 2);
    expect(Array.from(m.ids)).toEqual([3, 4]);
    expect(m.kl[0]).toBeCloseTo(0.1, 7);
    expect(() => readVocabMismatch(base, 'c', 3)).toThrow('c.kl has 2 values but response_token_ids has 3');
    expect(() => readVocabMismatch({ ...base, tv: [1.5, 0] }, 'c', 2)).toThrow(
      'c.tv[0] must be a finite distance in [0, 1], got 1.5',
    );
    expect(() => readVocabMismatch({ ...base, kl: [-0.5, 0] }, 'c', 2)).toThrow(
      'c.kl[0] must be a finite divergence ≥ 0, got -0.5',
    );
    expect(() => readVocabMismatch({ ...base, ids: [3] }, 'c', 2)).toThrow(
      'c.ids has 1 values; k = 1 tokens for each of the 2 response tokens make 2',
    );
    expect(() => readVocabMismatch({ ...base, trainer_log_probs: [0.5, -2] }, 'c', 2)).toThrow(
      'c.trainer_log_probs[0] must be a finite log-prob ≤ 0, got 0.5',
    );
    expect(() => readVocabMismatch(base, 'c', undefined)).toThrow(
      'c is present but response_token_ids is missing',
    );
  });
});

describe('full-vocabulary mismatch between the rollout engine and the trainer', () => {
  it("int8 onnxruntime-web against the CPU trainer: positive, and equal to the divergence of both engines' own logits", {
    timeout: 60_000,
  }, async () => {
    const cfg = ck.config;
    const T = 0.8;
    const env = nodeRolloutEnv();
    const ort = await env.ort('wasm');
    const lm = await OrtCausalLm.create({ ort, ep: 'wasm', config: cfg, precision: 'int8' }, ck.params);
    const engine = new SamplerRolloutEngine('onnxruntime-web', lm, tok, { seed: 1 });
    const policy = new CpuPolicy(cfg, {}, ck.params);
    const prompt = Array.from(tok.encode('Write the word seven.')).slice(0, 12);
    const sampled = await lm.sample({ promptIds: prompt, temperature: T, topP: 1, maxTokens: 8, seed: 3 });
    const response = sampled.tokenIds;
    const [measured] = await measureVocabMismatch([rolloutOf(prompt, response)], {
      policy,
      rolloutEngine: engine,
      rolloutName: 'onnxruntime-web',
      temperature: T,
      contextLength: cfg.contextLength,
    });
    const m = measured.calls[0].vocabMismatch;
    if (!m) throw new Error('no vocab mismatch measured');
    expect(m.kl.length).toBe(response.length);

    // the reference: an onnxruntime session of our own over the same int8 export, and the CPU forward's logits
    const ids = [...prompt, ...response];
    const session = await ort.InferenceSession.create(exportCausalLm(cfg, ck.params, { precision: 'int8' }), {
      executionProviders: ['wasm'],
    });
    const n = ids.length;
    const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from(ids, (_, i) => BigInt(i)),
        [1, n],
      ),
    };
    for (let l = 0; l < cfg.layers; l++)
      for (const name of [pastKeyName(l), pastValueName(l)])
        feeds[name] = new ort.Tensor('float32', new Float32Array(0), [
          1,
          cfg.heads,
          0,
          cfg.width / cfg.heads,
        ]);
    const ortLogits = (await (await session.run(feeds)).logits.getData()) as Float32Array;
    await session.release();
    const cpu = forwardCpu(cfg, layoutOf(cfg), ck.params, {
      tokens: Uint32Array.from(ids),
      mask: new Float32Array(n).fill(1),
      batchSize: 1,
      seqLen: n,
    });
    const V = cfg.vocabSize;
    let positive = 0;
    response.forEach((_, j) => {
      const row = prompt.length + j - 1;
      const ref = reference(
        ortLogits.subarray(row * V, (row + 1) * V),
        cpu.logits.subarray(row * V, (row + 1) * V),
        T,
      );
      // agreement to float32 storage of the log-probs (the reference is float64 from the logits)
      expect(Math.abs(m.kl[j] - ref.kl)).toBeLessThanOrEqual(2e-6 + 1e-3 * ref.kl);
      expect(Math.abs(m.tv[j] - ref.tv)).toBeLessThanOrEqual(2e-6 + 1e-3 * ref.tv);
      if (ref.kl > 1e-7) positive++;
      // the most disagreeing token is the reference's
      const top = ref.dp.indexOf(Math.max(...ref.dp));
      expect(m.ids[j * m.k]).toBe(top);
    });
    // int8 weight-only quantisation moves every position's distribution
    expect(positive).toBe(response.length);
    const metrics = vocabMismatchMetrics(measured.calls);
    expect(metrics['lab/rollout_vocab_kl/mean']).toBeGreaterThan(0);
    expect(metrics['lab/rollout_vocab_tokens']).toBe(response.length);
    await lm.dispose();
  });

  it('the colocated engine is the trainer: KL and TV exactly zero at every token', async () => {
    const policy = new CpuPolicy(ck.config, {}, ck.params);
    const engine = new ColocatedRolloutEngine(policy, tok, { seed: 1 });
    const prompt = Array.from(tok.encode('Write the word seven.')).slice(0, 12);
    const response = (
      await policy.sample({ promptIds: prompt, temperature: 1, topP: 1, maxTokens: 6, seed: 2 })
    ).tokenIds;
    const [measured] = await measureVocabMismatch([rolloutOf(prompt, response)], {
      policy,
      rolloutEngine: engine,
      rolloutName: 'policy',
      temperature: 1,
      contextLength: ck.config.contextLength,
    });
    const m = measured.calls[0].vocabMismatch;
    expect(m && Array.from(m.kl)).toEqual(response.map(() => 0));
    expect(m && Array.from(m.tv)).toEqual(response.map(() => 0));
    // the trainer's distribution at each position holds its own log-prob of the sampled token
    const ids = [...prompt, ...response];
    const batch = {
      tokens: Uint32Array.from(ids),
      mask: new Float32Array(ids.length).fill(1),
      batchSize: 1,
      seqLen: ids.length,
    };
    const lp = (await policy.logProbs(batch)).logProbs;
    const pos = response.map((_, j) => prompt.length + j);
    const dists = await policy.vocabLogProbs(batch, pos);
    pos.forEach((p, j) => {
      expect(dists[j][ids[p]]).toBeCloseTo(lp[p], 5);
    });
    await expect(policy.vocabLogProbs(batch, [0])).rejects.toThrow(
      `vocabLogProbs: position 0 must be a flat index b·${ids.length} + t with 1 ≤ t < ${ids.length}`,
    );
  });

  it('the Llama-family CPU engine gives the whole distribution too: its log-prob of each token, total mass 1', async () => {
    const folder = await readLlamaFolder(
      await nodeFolderReader(fileURLToPath(new URL('../../models/qwen3', import.meta.url))),
    );
    const engine = new LlamaCpuPolicy(folder.config, folder.params);
    const V = folder.config.vocabSize;
    const ids = Array.from({ length: 9 }, (_, i) => (i * 37 + 5) % V);
    const batch = {
      tokens: Uint32Array.from([...ids, ...ids.slice().reverse()]),
      mask: new Float32Array(2 * ids.length).fill(1),
      batchSize: 2,
      seqLen: ids.length,
      temperature: 0.7,
    };
    const lp = (await engine.logProbs(batch)).logProbs;
    const positions = [1, 4, 8, ids.length + 1, 2 * ids.length - 1];
    const dists = await engine.vocabLogProbs(batch, positions);
    positions.forEach((p, j) => {
      expect(dists[j].length).toBe(V);
      expect(dists[j][batch.tokens[p]]).toBeCloseTo(lp[p], 5);
      expect(dists[j].reduce((s, x) => s + Math.exp(x), 0)).toBeCloseTo(1, 5);
    });
    // the colocated engine over it: zero divergence against the trainer's own distributions
    const d = tokenDivergence(dists[0], (await engine.vocabLogProbs(batch, [1]))[0]);
    expect([d.kl, d.tv]).toEqual([0, 0]);
    await expect(engine.vocabLogProbs(batch, [ids.length])).rejects.toThrow(
      `vocabLogProbs: position ${ids.length} must be a flat index b·${ids.length} + t`,
    );
  });

  it("a run with lab.vocab_mismatch writes the step metrics and each kept call's comparison", {
    timeout: 120_000,
  }, async () => {
    const run = async (patch: TrainConfigPatch) => {
      const cfg = resolveTrainConfig({
        ...patch,
        lab: {
          harness: 'instruction-short',
          train_tasks: 8,
          val_tasks: 2,
          seed: 1,
          vocab_mismatch: true,
          ...patch.lab,
        },
        data: { train_batch_size: 2, max_response_length: 16 },
        actor_rollout_ref: {
          actor: { ppo_mini_batch_size: 2, ppo_micro_batch_size_per_gpu: 8 },
          rollout: { n: 2, ...patch.actor_rollout_ref?.rollout },
        },
        trainer: { total_training_steps: 1, test_freq: 0, val_before_train: false },
      });
      const storage = new MemoryStorage();
      const local = createLocalRun({
        config: cfg,
        policy: new CpuPolicy(ck.config, {}, ck.params),
        tokenizer: tok,
        storage,
        rolloutEnv: nodeRolloutEnv(),
        makeRunner: (h) => inlineRunner(h),
      });
      await local.run.run();
      local.close();
      const metrics = parseFileLogger(storage.text('metrics.jsonl'))[0].data as Record<string, number>;
      const trace = parseJsonlTrace(storage.text('traces/step_000001.jsonl'));
      expect(trace.issues).toEqual([]);
      return { metrics, rollouts: trace.rollouts, text: storage.text('traces/step_000001.jsonl') };
    };
    const int8 = await run({
      lab: { rollout_precision: 'int8' },
      actor_rollout_ref: { rollout: { name: 'onnxruntime-web' } },
    });
    const colocated = await run({ actor_rollout_ref: { rollout: { name: 'policy' } } });
    for (const r of [int8, colocated]) {
      const calls = r.rollouts.flatMap((x) => x.calls).filter((c) => c.responseTokenIds?.length);
      expect(calls.length).toBeGreaterThan(0);
      for (const c of calls) expect(c.vocabMismatch?.kl.length).toBe(c.responseTokenIds?.length);
      // the trace's per-token values are the step metrics'
      expect(vocabMismatchMetrics(calls)['lab/rollout_vocab_kl/mean']).toBeCloseTo(
        r.metrics['lab/rollout_vocab_kl/mean'],
        6,
      );
      expect(r.metrics['timing_s/vocab_mismatch']).toBeGreaterThan(0);
      // lossless round trip of the field
      expect(parseJsonlTrace(toJsonlTrace(r.rollouts)).rollouts[0].calls[0].vocabMismatch).toEqual(
        r.rollouts[0].calls[0].vocabMismatch,
      );
    }
    expect(int8.metrics['lab/rollout_vocab_kl/mean']).toBeGreaterThan(0);
    expect(int8.metrics['lab/rollout_vocab_tv/max']).toBeGreaterThan(0);
    expect(colocated.metrics['lab/rollout_vocab_kl/max']).toBe(0);
    expect(colocated.metrics['lab/rollout_vocab_tv/max']).toBe(0);
    expect(int8.text).toContain('"vocab_mismatch":{"kl":[');

    // lab analyze reports it from the kept trace; the page's Trace view colours and explains each token by it
    const dir = mkdtempSync(join(tmpdir(), 'lab-vocab-'));
    const file = join(dir, 'step.jsonl');
    writeFileSync(file, int8.text);
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((m: string) => void out.push(m));
    try {
      expect(await analyze.run([file, '--json'])).toBe(0);
      const a = JSON.parse(out.join('\n')) as { vocabMismatch: VocabMismatchSummary };
      expect(a.vocabMismatch.metrics).toEqual(vocabMismatchMetrics(int8.rollouts.flatMap((r) => r.calls)));
      const w = a.vocabMismatch.worst;
      expect(w.length).toBe(5);
      for (let i = 1; i < w.length; i++) expect(w[i].kl).toBeLessThanOrEqual(w[i - 1].kl);
      const kls = int8.rollouts.flatMap((r) => r.calls.flatMap((c) => Array.from(c.vocabMismatch?.kl ?? [])));
      expect(w[0].kl).toBe(Math.max(...kls));
      out.length = 0;
      expect(await analyze.run([file])).toBe(0);
      expect(out.join('\n')).toMatch(
        /full-vocabulary mismatch \(rollout engine vs trainer, \d+ tokens of \d+ calls\): KL mean [0-9.]+e-\d+ max/,
      );
    } finally {
      log.mockRestore();
    }
    const call = int8.rollouts[0].calls[0];
    const m = call.vocabMismatch as NonNullable<typeof call.vocabMismatch>;
    const v = callTokenView(call, new Map([[m.ids[0], 'tok']]));
    expect(v.available.has('vocabKl')).toBe(true);
    expect(v.quantities.find((q) => q.key === 'vocabKl')?.values).toBe(m.kl);
    const lines = v.alternatives?.(0) ?? [];
    expect(lines).toContain(
      `whole vocabulary: KL(rollout ‖ trainer) ${m.kl[0].toExponential(3)} · TV ${m.tv[0].toExponential(3)}`,
    );
    expect(lines).toContain(
      `1. "tok" · id ${m.ids[0]} · ${Math.exp(m.rolloutLogProbs[0]).toFixed(4)} / ${Math.exp(m.trainerLogProbs[0]).toFixed(4)}`,
    );
    // a view of other tokens than the call's response ids gets none
    const other = { ...v, ids: v.ids.slice(1), quantities: [], available: new Set<ColorBy>() };
    expect(withVocabMismatch(other, call, new Map()).available.size).toBe(0);
  });
});
