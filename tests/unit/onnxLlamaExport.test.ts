import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { onnxTargets } from '../../src/engine/onnx/export';
import { exportLlamaOnnx } from '../../src/engine/onnx/exportLlama';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { DT, encodeModel, encodeModelFiles, GraphBuilder } from '../../src/engine/onnx/proto';

// onnxruntime-web must compute the committed transformers log-probs from the same folder's weights, or its rows
// in bench:engine compare runtimes on different models.
const models = resolve(__dirname, '../models');
// llama: llama3 rope scaling, tied head; llama-linear-bf16: linear scaling, untied head, bf16 storage;
// qwen2: q/k/v biases, untied head; qwen3: q_norm / k_norm, explicit head_dim
const FOLDERS = ['llama', 'llama-linear-bf16', 'qwen2', 'qwen3'];

interface Reference {
  sequences: { ids: number[]; logprobs: number[]; entropy: number[] }[];
  left_padded: { ids: number[][]; mask: number[][]; logprobs: number[][]; entropy: number[][] };
}

async function run(name: string, ids: number[][], mask: number[][], externalAbove?: number) {
  const folder = await readLlamaFolder(await nodeFolderReader(join(models, name)));
  const [B, T] = [ids.length, ids[0].length];
  const tokens = Uint32Array.from(ids.flat());
  ort.env.wasm.numThreads = 1;
  const files = exportLlamaOnnx(folder.config, folder.layout, folder.params, B, T, { externalAbove });
  if (externalAbove !== undefined) expect(files.data?.length).toBeGreaterThan(folder.layout.total * 4);
  else expect(files.data).toBeNull();
  const session = await ort.InferenceSession.create(files.model, {
    executionProviders: ['wasm'],
    ...(files.data && files.location ? { externalData: [{ path: files.location, data: files.data }] } : {}),
  });
  const out = await session.run({
    tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
    mask: new ort.Tensor('float32', Float32Array.from(mask.flat()), [B, T]),
    targets: new ort.Tensor('int64', onnxTargets(tokens, B, T), [B, T, 1]),
  });
  await session.release();
  return { logp: out.target_logp.data as Float32Array, entropy: out.entropy.data as Float32Array, T };
}

/** Max |Δ| over the real (t−1, t) pairs: the export's row t−1 predicts token t, the reference's position t. */
function gap(got: Float32Array, ref: number[][], mask: number[][], T: number) {
  let m = 0;
  let n = 0;
  ref.forEach((r, b) => {
    for (let t = 1; t < T; t++)
      if (mask[b][t] && mask[b][t - 1]) {
        m = Math.max(m, Math.abs(got[b * T + t - 1] - r[t]));
        n++;
      }
  });
  return { m, n };
}

describe('ONNX export of the Llama-family log-prob forward (onnxruntime-web, wasm)', () => {
  for (const name of FOLDERS)
    it(`${name}: log-probs and entropies of each sequence and of the left-padded batch match transformers to 1e-4`, async () => {
      const ref: Reference = JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));
      for (const s of ref.sequences) {
        const ones = [s.ids.map(() => 1)];
        const r = await run(name, [s.ids], ones);
        const lp = gap(r.logp, [s.logprobs], ones, r.T);
        expect(lp.n).toBe(s.ids.length - 1);
        expect(lp.m).toBeLessThan(1e-4);
        expect(gap(r.entropy, [s.entropy], ones, r.T).m).toBeLessThan(1e-4);
      }
      const lpRef = ref.left_padded;
      const r = await run(name, lpRef.ids, lpRef.mask);
      const lp = gap(r.logp, lpRef.logprobs, lpRef.mask, r.T);
      expect(lp.n).toBeGreaterThan(lpRef.ids[0].length);
      expect(lp.m).toBeLessThan(1e-4);
      expect(gap(r.entropy, lpRef.entropy, lpRef.mask, r.T).m).toBeLessThan(1e-4);
    });

  it('qwen3 with its weights in external data (model.onnx_data) gives the same log-probs as inline', async () => {
    const ref: Reference = JSON.parse(readFileSync(join(models, 'qwen3', 'reference.json'), 'utf8'));
    const lpRef = ref.left_padded;
    const inline = await run('qwen3', lpRef.ids, lpRef.mask);
    const ext = await run('qwen3', lpRef.ids, lpRef.mask, 0);
    expect(Array.from(ext.logp)).toEqual(Array.from(inline.logp));
    expect(gap(ext.logp, lpRef.logprobs, lpRef.mask, ext.T).m).toBeLessThan(1e-4);
  });

  it('refuses a bad batch and a parameter buffer of the wrong size', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const { config: cfg, layout, params } = folder;
    expect(() => exportLlamaOnnx(cfg, layout, params, 0, 4)).toThrow(
      'llama onnx export: batch 0x4 must be positive integers',
    );
    expect(() => exportLlamaOnnx(cfg, layout, params.subarray(1), 1, 4)).toThrow(
      `llama onnx export: ${layout.total - 1} parameters for a layout of ${layout.total}`,
    );
  });

  it('encodeModel refuses initializers past the inline limit; encodeModelFiles puts them in the data file', () => {
    // 2 GiB of zero pages the encoder never touches before it refuses
    const g = new GraphBuilder();
    g.raw('big', [2 ** 31], DT.INT8, new Uint8Array(2 ** 31));
    const io = { name: 'm', inputs: [], outputs: [] };
    expect(() => encodeModel(g, io)).toThrow(
      /^onnx export: 2048 MiB of initializers exceed what one ONNX protobuf can hold inline \(2032 MiB; write it with external data\)$/,
    );
    const small = new GraphBuilder();
    small.f32('w', [300], new Float32Array(300).fill(2));
    small.f32('b', [3], Float32Array.of(1, 2, 3));
    small.f32('v', [500], new Float32Array(500).fill(3));
    const files = encodeModelFiles(small, io, { location: 'model.onnx_data', above: 0 });
    expect(files.location).toBe('model.onnx_data');
    // w at 0, v at the next 4 KiB boundary; b (12 bytes) stays inline
    expect(files.data?.length).toBe(4096 + 2000);
    expect(new Float32Array((files.data as Uint8Array).buffer, 4096, 500)[499]).toBe(3);
    expect(encodeModelFiles(small, io, { location: 'model.onnx_data' }).data).toBeNull();
  });
});
