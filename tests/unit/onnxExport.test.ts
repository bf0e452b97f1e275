import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { exportOnnx } from '../../src/engine/onnx/export';

// The ONNX export used by bench:engine must compute the same log-probs as our engine, or its timings and
// error figures mean nothing.
describe('ONNX export of the policy forward', () => {
  it('onnxruntime-web (wasm) reproduces the CPU reference log-probs', async () => {
    const cfg = resolveConfig({ vocabSize: 50, contextLength: 16, layers: 2, width: 24, heads: 3, seed: 4 });
    const cpu = new CpuPolicy(cfg);
    const [B, T] = [2, 10];
    const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 11 + 2) % 50);
    const targets = new BigInt64Array(B * T);
    for (let b = 0; b < B; b++)
      for (let t = 0; t < T; t++) targets[b * T + t] = BigInt(tokens[b * T + Math.min(t + 1, T - 1)]);
    ort.env.wasm.numThreads = 1;
    const session = await ort.InferenceSession.create(exportOnnx(cfg, layoutOf(cfg), cpu.params, B, T), {
      executionProviders: ['wasm'],
    });
    const out = await session.run({
      tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
      targets: new ort.Tensor('int64', targets, [B, T, 1]),
    });
    const got = out.target_logp.data as Float32Array;
    const ref = (
      await cpu.logProbs({ tokens, mask: new Float32Array(B * T).fill(1), batchSize: B, seqLen: T })
    ).logProbs;
    let maxErr = 0;
    for (let b = 0; b < B; b++)
      for (let t = 0; t + 1 < T; t++)
        maxErr = Math.max(maxErr, Math.abs(got[b * T + t] - ref[b * T + t + 1]));
    expect(maxErr).toBeLessThan(1e-5);
    expect(ref[1]).toBeLessThan(0);
    await session.release();
  });
});
