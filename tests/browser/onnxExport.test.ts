import { describe, expect, it } from 'vitest';
import { layoutOf, resolveConfig } from '../../src/engine/model';
import { exportOnnx, maxLogProbDiff } from '../../src/engine/onnx/export';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { type OrtEp, openOrt, setOrtThreads } from '../tools/ortBrowser';

// The ONNX export is a tested artifact: onnxruntime-web, on each execution provider bench:engine times, must
// give the CPU reference's per-token log-probs. An EP that cannot start fails the test (openOrt throws).
const cfg = resolveConfig({ vocabSize: 50, contextLength: 16, layers: 2, width: 24, heads: 3, seed: 4 });
const [B, T] = [2, 10];
const TOLERANCE = 1e-4;

describe('ONNX export of the policy forward in onnxruntime-web (Chromium)', () => {
  const cpu = new CpuPolicy(cfg);
  const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 11 + 2) % cfg.vocabSize);
  const model = exportOnnx(cfg, layoutOf(cfg), cpu.params, B, T);
  setOrtThreads(1); // numerics do not depend on it; one thread keeps the test's start-up short

  for (const ep of ['wasm', 'webgpu'] as OrtEp[])
    it(`the ${ep} EP reproduces the CPU reference log-probs within ${TOLERANCE}`, async () => {
      const ref = (
        await cpu.logProbs({ tokens, mask: new Float32Array(B * T).fill(1), batchSize: B, seqLen: T })
      ).logProbs;
      const session = await openOrt(ep, model, tokens, B, T);
      try {
        const { logProbs: got, location } = await session.run();
        // The WebGPU EP computed the output (a fallback to the CPU EP would leave it on the host).
        expect(location).toBe(ep === 'webgpu' ? 'gpu-buffer' : 'cpu');
        expect(got.length).toBe(B * T);
        expect(maxLogProbDiff(got, ref, B, T)).toBeLessThanOrEqual(TOLERANCE);
        // A log-prob over 50 tokens of a near-uniform init sits near -ln 50; a constant output cannot pass.
        expect(Math.min(...got)).toBeLessThan(-1);
      } finally {
        await session.release();
      }
    });
});
