import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { type LlamaFolder, readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { pastKeyName, pastValueName, presentKeyName, presentValueName } from '../../src/engine/onnx/causalLm';
import { exportLlamaHfFolder } from '../../src/engine/onnx/exportLlama';
import { nodeFolderReader, tempModelFolder } from '../../src/engine/onnx/folder';
import { type FolderFiles, mapReader, readModelFolder } from '../../src/engine/onnx/hfFolder';
import { TransformersCausalLm } from '../../src/engine/onnx/transformersLm';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { vocabLogSoftmax } from '../../src/engine/sampling';

// The Llama family in HF's ONNX decoder layout (exportLlamaCausalLm): onnxruntime-node (the runtime transformers.js
// uses in Node) must compute the committed transformers log-probs from the folder's weights, its KV cache must
// give what a recompute gives, and transformers.js's generate() on it must sample the tokens our CPU engine
// samples with the log-probs our CPU engine computes for them.
const models = resolve(__dirname, '../models');
// llama: llama3 rope scaling, tied head; llama-linear-bf16: linear scaling, untied head, bf16 storage;
// qwen2: q/k/v biases, untied head; qwen3: q_norm / k_norm, head_dim
const FOLDERS = ['llama', 'llama-linear-bf16', 'qwen2', 'qwen3'];
/** |Δ log-prob| allowed between two f32 runtimes on these 2-layer folders (measured: below 1e-5) */
const TOL = 1e-4;

interface Reference {
  sequences: { ids: number[]; logprobs: number[] }[];
  left_padded: { ids: number[][]; mask: number[][]; logprobs: number[][] };
}

const folders = new Map<string, LlamaFolder>();
async function folderOf(name: string): Promise<LlamaFolder> {
  let f = folders.get(name);
  if (!f) {
    f = await readLlamaFolder(await nodeFolderReader(join(models, name)));
    folders.set(name, f);
  }
  return f;
}

async function sessionOf(files: FolderFiles) {
  const { dir, remove } = await tempModelFolder(files);
  const session = await ort.InferenceSession.create(join(dir, 'onnx', 'model.onnx'), {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
  });
  return { session, remove };
}

/** One decoder call: `ids` (B, S) on top of `past` (its length P), mask over all P + S keys. */
async function step(
  session: ort.InferenceSession,
  f: LlamaFolder,
  ids: number[][],
  mask: number[][],
  positions: number[][],
  past: Record<string, ort.Tensor> | null,
) {
  const [B, S] = [ids.length, ids[0].length];
  const { kvHeads: KV, headDim: D, layers } = f.config;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.flat(), BigInt), [B, S]),
    attention_mask: new ort.Tensor('int64', BigInt64Array.from(mask.flat(), BigInt), [B, mask[0].length]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from(positions.flat(), BigInt), [B, S]),
  };
  for (let l = 0; l < layers; l++)
    for (const n of [pastKeyName(l), pastValueName(l)])
      feeds[n] = past?.[n] ?? new ort.Tensor('float32', new Float32Array(0), [B, KV, 0, D]);
  const out = await session.run(feeds);
  const next: Record<string, ort.Tensor> = {};
  for (let l = 0; l < layers; l++) {
    next[pastKeyName(l)] = out[presentKeyName(l)];
    next[pastValueName(l)] = out[presentValueName(l)];
  }
  return { logits: out.logits.data as Float32Array, past: next };
}

/** HF's positions from a mask: cumsum − 1, padding at 1. */
const positionsOf = (mask: number[][]) =>
  mask.map((row) => {
    let c = 0;
    return row.map((m) => (m ? c++ : 1));
  });

describe('Llama-family ONNX causal LM with KV cache (HF layout)', () => {
  for (const name of FOLDERS) {
    it(`${name}: onnxruntime-node matches transformers' log-probs (each sequence, left-padded batch) to ${TOL}`, async () => {
      const f = await folderOf(name);
      const ref: Reference = JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));
      const { session, remove } = await sessionOf(exportLlamaHfFolder(f));
      const V = f.config.vocabSize;
      try {
        for (const s of ref.sequences) {
          const ones = [s.ids.map(() => 1)];
          const { logits } = await step(session, f, [s.ids], ones, positionsOf(ones), null);
          let m = 0;
          for (let t = 1; t < s.ids.length; t++)
            m = Math.max(
              m,
              Math.abs(vocabLogSoftmax(logits.subarray((t - 1) * V, t * V), 1)[s.ids[t]] - s.logprobs[t]),
            );
          expect(m).toBeLessThan(TOL);
        }
        const lp = ref.left_padded;
        const T = lp.ids[0].length;
        const { logits } = await step(session, f, lp.ids, lp.mask, positionsOf(lp.mask), null);
        let m = 0;
        let n = 0;
        lp.ids.forEach((row, b) => {
          for (let t = 1; t < T; t++) {
            if (!lp.mask[b][t] || !lp.mask[b][t - 1]) continue;
            const o = (b * T + t - 1) * V;
            m = Math.max(
              m,
              Math.abs(vocabLogSoftmax(logits.subarray(o, o + V), 1)[row[t]] - lp.logprobs[b][t]),
            );
            n++;
          }
        });
        expect(n).toBeGreaterThan(T);
        expect(m).toBeLessThan(TOL);
      } finally {
        await session.release();
        await remove();
      }
    });

    it(`${name}: decoding with the KV cache (left-padded batch, one token a step) gives the recompute's logits`, async () => {
      const f = await folderOf(name);
      const ref: Reference = JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));
      const { ids, mask } = ref.left_padded;
      const [B, T] = [ids.length, ids[0].length];
      const V = f.config.vocabSize;
      const { session, remove } = await sessionOf(exportLlamaHfFolder(f));
      try {
        const pos = positionsOf(mask);
        const full = (await step(session, f, ids, mask, pos, null)).logits;
        const k = Math.floor(T / 2);
        const cut = (a: number[][], from: number, to: number) => a.map((r) => r.slice(from, to));
        let r = await step(session, f, cut(ids, 0, k), cut(mask, 0, k), cut(pos, 0, k), null);
        let m = 0;
        const compare = (logits: Float32Array, from: number, S: number) => {
          for (let b = 0; b < B; b++)
            for (let s = 0; s < S; s++) {
              if (!mask[b][from + s]) continue;
              for (let v = 0; v < V; v++)
                m = Math.max(m, Math.abs(logits[(b * S + s) * V + v] - full[(b * T + from + s) * V + v]));
            }
        };
        compare(r.logits, 0, k);
        for (let t = k; t < T; t++) {
          r = await step(session, f, cut(ids, t, t + 1), cut(mask, 0, t + 1), cut(pos, t, t + 1), r.past);
          expect(r.past[pastKeyName(0)].dims).toEqual([B, f.config.kvHeads, t + 1, f.config.headDim]);
          compare(r.logits, t, 1);
        }
        expect(m).toBeLessThan(1e-5);
      } finally {
        await session.release();
        await remove();
      }
    });

    it(`${name}: transformers.js generate() samples our CPU engine's tokens, log-probs within ${TOL}`, async () => {
      const f = await folderOf(name);
      const ref: Reference = JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));
      const lm = await TransformersCausalLm.load(mapReader(exportLlamaHfFolder(f)), { device: 'cpu' });
      const cpu = new LlamaCpuPolicy(f.config, f.params);
      try {
        expect(lm.vocabSize).toBe(f.config.vocabSize);
        for (const [i, seed] of [3, 11].entries()) {
          const req = { promptIds: ref.sequences[i].ids, temperature: 1, topP: 1, maxTokens: 12, seed };
          const got = await lm.sample(req);
          const ours = await cpu.sample(req);
          expect(got.tokenIds).toEqual(ours.tokenIds);
          // the trainer's view: our engine's log-probs of the sampled sequence, no cache
          const seq = [...req.promptIds, ...got.tokenIds];
          const lp = await cpu.logProbs({
            tokens: Uint32Array.from(seq),
            mask: new Float32Array(seq.length).fill(1),
            batchSize: 1,
            seqLen: seq.length,
          });
          const n = req.promptIds.length;
          const gap = got.logProbs.map((v, j) => Math.abs(v - lp.logProbs[n + j]));
          expect(gap.length).toBe(12);
          expect(Math.max(...gap)).toBeLessThan(TOL);
        }
      } finally {
        await lm.dispose();
        await cpu.dispose?.();
      }
    });
  }

  it('qwen3 with its weights in onnx/model.onnx_data (external data) loads in transformers.js and samples the same', async () => {
    const f = await folderOf('qwen3');
    const inline = exportLlamaHfFolder(f);
    const ext = exportLlamaHfFolder(f, { externalAbove: 0 });
    expect(inline.has('onnx/model.onnx_data')).toBe(false);
    const data = ext.get('onnx/model.onnx_data');
    expect(data?.length).toBeGreaterThanOrEqual(f.layout.total * 4);
    expect((ext.get('onnx/model.onnx') as Uint8Array).length).toBeLessThan(f.layout.total);
    const checked = await readModelFolder(mapReader(ext));
    expect(checked.externalData.fp32).toEqual(['onnx/model.onnx_data']);
    const req = { promptIds: [5, 9, 17, 33], temperature: 1, topP: 1, maxTokens: 10, seed: 7 };
    const a = await TransformersCausalLm.load(mapReader(inline), { device: 'cpu' });
    const b = await TransformersCausalLm.load(mapReader(ext), { device: 'cpu' });
    try {
      const ra = await a.sample(req);
      const rb = await b.sample(req);
      expect(rb.tokenIds).toEqual(ra.tokenIds);
      expect(rb.logProbs).toEqual(ra.logProbs);
    } finally {
      await a.dispose();
      await b.dispose();
    }
  });
});
