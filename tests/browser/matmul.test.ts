import { describe, expect, it } from 'vitest';
import { uniformF32 } from '../../src/core/random';
import { matmulCpu } from '../../src/engine/cpu/matmul';
import { createGpuContext, type GpuContext } from '../../src/engine/gpu/device';
import { matmulGpu } from '../../src/engine/gpu/matmul';

// This suite must run on a real adapter: no adapter is a failure, never a skip.
async function context(): Promise<GpuContext> {
  const ctx = await createGpuContext();
  if (!('device' in ctx)) throw new Error(`no WebGPU adapter in this Chromium: ${ctx.reason}`);
  return ctx;
}

describe('matmul kernel vs CPU reference (Chromium WebGPU)', () => {
  it('finds an adapter and reports its limits', async () => {
    const ctx = await context();
    expect(ctx.status.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    expect(ctx.status.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
    ctx.destroy();
  });

  for (const [M, N, K] of [
    [1, 1, 1],
    [7, 5, 3],
    [33, 17, 65],
    [64, 48, 40],
  ]) {
    it(`matches for (M,N,K) = (${M},${N},${K})`, async () => {
      const ctx = await context();
      const a = uniformF32(M * K, 1 + M);
      const b = uniformF32(K * N, 2 + N);
      const ref = matmulCpu(a, b, M, N, K);
      const got = await matmulGpu(ctx, a, b, M, N, K);
      expect(got.length).toBe(ref.length);
      let maxErr = 0;
      for (let i = 0; i < ref.length; i++) maxErr = Math.max(maxErr, Math.abs(got[i] - ref[i]));
      // f32 accumulation of K products of values in [-1, 1): error grows ~ K · 2^-24.
      expect(maxErr).toBeLessThanOrEqual(1e-5 * K);
      ctx.destroy();
    });
  }
});
