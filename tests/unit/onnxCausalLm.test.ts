import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { forwardCpu, initParams, layoutOf, resolveConfig } from '../../src/engine/model';
import {
  exportCausalLm,
  pastKeyName,
  pastValueName,
  presentKeyName,
  presentValueName,
  quantizeInt8,
  roundWeights,
  WEIGHT_PRECISIONS,
  type WeightPrecision,
} from '../../src/engine/onnx/causalLm';

// The HF-layout export must compute our CPU reference's logits, with and without a KV cache, at every weight
// precision (against the reference run on the weights that precision rounds to), or nothing an ORT or
// transformers.js engine reports means anything.
const cfg = resolveConfig({ vocabSize: 50, contextLength: 16, layers: 2, width: 24, heads: 3, seed: 4 });
const params = initParams(cfg);
const H = cfg.heads;
const hs = cfg.width / cfg.heads;
ort.env.wasm.numThreads = 1;

type Feeds = Record<string, ort.Tensor>;
const i64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v, BigInt), dims);
const empty = (B: number): Feeds => {
  const out: Feeds = {};
  for (let l = 0; l < cfg.layers; l++)
    for (const n of [pastKeyName(l), pastValueName(l)])
      out[n] = new ort.Tensor('float32', new Float32Array(0), [B, H, 0, hs]);
  return out;
};
const pastOf = (out: Record<string, ort.Tensor>): Feeds => {
  const p: Feeds = {};
  for (let l = 0; l < cfg.layers; l++) {
    p[pastKeyName(l)] = out[presentKeyName(l)];
    p[pastValueName(l)] = out[presentValueName(l)];
  }
  return p;
};
const refLogits = (ids: number[], w = params) =>
  forwardCpu(cfg, layoutOf(cfg), w, {
    tokens: Uint32Array.from(ids),
    batchSize: 1,
    seqLen: ids.length,
    mask: new Float32Array(ids.length).fill(1),
  }).logits;
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};
const session = (p: WeightPrecision) =>
  ort.InferenceSession.create(exportCausalLm(cfg, params, { precision: p }), {
    executionProviders: ['wasm'],
  });

const ids = [3, 17, 42, 8, 8, 29, 1, 44, 13, 5];

describe('the policy as an ONNX causal LM with KV cache (onnxruntime-web wasm)', () => {
  it('has the Hugging Face input and output names', async () => {
    const s = await session('f32');
    const cache = (prefix: string) =>
      Array.from({ length: cfg.layers }, (_, l) => [`${prefix}.${l}.key`, `${prefix}.${l}.value`]).flat();
    expect(s.inputNames).toEqual([
      'input_ids',
      'attention_mask',
      'position_ids',
      ...cache('past_key_values'),
    ]);
    expect(s.outputNames).toEqual(['logits', ...cache('present')]);
    await s.release();
  });

  for (const precision of WEIGHT_PRECISIONS)
    it(`${precision}: logits without and with past equal the CPU reference on the ${precision} weights`, async () => {
      const s = await session(precision);
      const w = roundWeights(cfg, params, precision);
      const ref = refLogits(ids, w);
      const full = await s.run({
        input_ids: i64(ids, [1, ids.length]),
        attention_mask: i64(
          ids.map(() => 1),
          [1, ids.length],
        ),
        position_ids: i64(
          ids.map((_, i) => i),
          [1, ids.length],
        ),
        ...empty(1),
      });
      expect(full.logits.dims).toEqual([1, ids.length, cfg.vocabSize]);
      expect(maxDiff(full.logits.data as Float32Array, ref)).toBeLessThan(1e-4);
      expect(full[presentKeyName(1)].dims).toEqual([1, H, ids.length, hs]);
      // prefix of 6, then 3 more tokens on the cache, then 1: the same logits as the full pass
      let past = empty(1);
      const chunks = [ids.slice(0, 6), ids.slice(6, 9), ids.slice(9)];
      let pos = 0;
      for (const chunk of chunks) {
        const out = await s.run({
          input_ids: i64(chunk, [1, chunk.length]),
          attention_mask: i64(
            Array.from({ length: pos + chunk.length }, () => 1),
            [1, pos + chunk.length],
          ),
          position_ids: i64(
            chunk.map((_, i) => pos + i),
            [1, chunk.length],
          ),
          ...past,
        });
        const want = ref.subarray(pos * cfg.vocabSize, (pos + chunk.length) * cfg.vocabSize);
        expect(maxDiff(out.logits.data as Float32Array, want)).toBeLessThan(1e-4);
        past = pastOf(out);
        pos += chunk.length;
      }
      expect(past[pastKeyName(0)].dims).toEqual([1, H, ids.length, hs]);
      await s.release();
    });

  it('f16 and int8 weights change the logits (the precision knob is real), f32 does not', async () => {
    const f32 = refLogits(ids);
    expect(maxDiff(refLogits(ids, roundWeights(cfg, params, 'f32')), f32)).toBe(0);
    const d16 = maxDiff(refLogits(ids, roundWeights(cfg, params, 'f16')), f32);
    const d8 = maxDiff(refLogits(ids, roundWeights(cfg, params, 'int8')), f32);
    expect(d16).toBeGreaterThan(1e-6);
    expect(d8).toBeGreaterThan(d16);
  });

  it('a left-padded row (attention_mask 0, HF position ids) gives the unpadded row its logits', async () => {
    const s = await session('f32');
    const short = ids.slice(0, 7);
    const pad = 3;
    const out = await s.run({
      input_ids: i64([0, 0, 0, ...short, ...ids], [2, 10]),
      attention_mask: i64([0, 0, 0, ...short.map(() => 1), ...ids.map(() => 1)], [2, 10]),
      // cumsum(mask) - 1, padding at 1 (what transformers computes)
      position_ids: i64([1, 1, 1, ...short.map((_, i) => i), ...ids.map((_, i) => i)], [2, 10]),
      ...empty(2),
    });
    const V = cfg.vocabSize;
    const got = out.logits.data as Float32Array;
    expect(maxDiff(got.subarray(pad * V, 10 * V), refLogits(short))).toBeLessThan(1e-4);
    expect(maxDiff(got.subarray(10 * V, 20 * V), refLogits(ids))).toBeLessThan(1e-4);
    await s.release();
  });

  it('refuses parameters of the wrong size or with a non-finite value, naming the tensor', () => {
    expect(() => exportCausalLm(cfg, new Float32Array(10))).toThrow(
      `params has 10 values, the layout needs ${layoutOf(cfg).total}`,
    );
    const bad = new Float32Array(params);
    const t = layoutOf(cfg).byName.get('h1.mlp.fc.w');
    bad[(t?.offset ?? 0) + 5] = Number.NaN;
    expect(() => exportCausalLm(cfg, bad)).toThrow('parameter h1.mlp.fc.w[5] is NaN');
  });
});

describe('weight rounding', () => {
  it('int8 quantization is per output channel, symmetric, within half a step', () => {
    const w = Float32Array.of(0.5, -1, 0.25, 2, 0.01, -0.02); // (2, 3)
    const byCol = quantizeInt8(w, 2, 3, 1);
    expect(Array.from(byCol.scale)).toEqual(Array.from(Float32Array.of(2 / 127, 1 / 127, 0.25 / 127)));
    expect(byCol.q[3]).toBe(127); // the column max maps to ±127
    const byRow = quantizeInt8(w, 2, 3, 0);
    expect(byRow.q[1]).toBe(-127);
    for (let i = 0; i < 6; i++)
      expect(Math.abs(byRow.q[i] * byRow.scale[i < 3 ? 0 : 1] - w[i])).toBeLessThanOrEqual(
        byRow.scale[i < 3 ? 0 : 1] / 2 + 1e-9,
      );
  });
});
