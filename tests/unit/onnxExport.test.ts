import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { exportOnnx, maxLogProbDiff, onnxTargets } from '../../src/engine/onnx/export';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';

// The ONNX export used by bench:engine must compute the same log-probs as our engine, or its timings and
// error figures mean nothing.
describe('ONNX export of the policy forward', () => {
  it('onnxruntime-web (wasm) reproduces the CPU reference log-probs', async () => {
    const cfg = resolveConfig({ vocabSize: 50, contextLength: 16, layers: 2, width: 24, heads: 3, seed: 4 });
    const cpu = new CpuPolicy(cfg);
    const [B, T] = [2, 10];
    const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 11 + 2) % 50);
    ort.env.wasm.numThreads = 1;
    const session = await ort.InferenceSession.create(exportOnnx(cfg, layoutOf(cfg), cpu.params, B, T), {
      executionProviders: ['wasm'],
    });
    const out = await session.run({
      tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
      targets: new ort.Tensor('int64', onnxTargets(tokens, B, T), [B, T, 1]),
    });
    const got = out.target_logp.data as Float32Array;
    const ref = (
      await cpu.logProbs({ tokens, mask: new Float32Array(B * T).fill(1), batchSize: B, seqLen: T })
    ).logProbs;
    expect(maxLogProbDiff(got, ref, B, T)).toBeLessThan(1e-5);
    expect(ref[1]).toBeLessThan(0);
    await session.release();
  });

  it('rejects a batch whose sizes do not match', () => {
    expect(() => onnxTargets(new Uint32Array(5), 2, 3)).toThrow('onnx targets: 5 tokens for a 2x3 batch');
    expect(() => maxLogProbDiff(new Float32Array(6), new Float32Array(4), 2, 3)).toThrow(
      'log-prob diff: 6 and 4 values for a 2x3 batch',
    );
  });

  it('counts a NaN log-prob as an infinite difference', () => {
    const ours = Float32Array.of(0, -1, -2, 0, -1, -2);
    expect(maxLogProbDiff(Float32Array.of(-1, -2.5, 0, -1, -2, 0), ours, 2, 3)).toBeCloseTo(0.5, 6);
    expect(maxLogProbDiff(Float32Array.of(-1, Number.NaN, 0, -1, -2, 0), ours, 2, 3)).toBe(
      Number.POSITIVE_INFINITY,
    );
  });
});
