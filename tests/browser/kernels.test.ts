import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuContext } from '../../src/engine/gpu/device';
import { KERNEL_CASES, maxAbsError } from '../../src/engine/kernelCases';
import { context } from './gpuContext';

// Every WGSL kernel against its CPU reference on Chromium's WebGPU: the cases and their tolerances are the
// table in src/engine/kernelCases.ts, which `lab engine-check` runs too.

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await context();
});
afterAll(() => ctx?.destroy());

describe('WGSL kernels vs CPU references (Chromium WebGPU)', () => {
  it('finds an adapter and reports its limits', () => {
    expect(ctx.status.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    expect(ctx.status.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
  });

  for (const kc of KERNEL_CASES)
    it(kc.name, async () => {
      const comparisons = await kc.run(ctx);
      expect(comparisons.length).toBeGreaterThan(0);
      for (const c of comparisons) {
        expect(c.got.length, c.name).toBe(c.want.length);
        expect(maxAbsError(c.got, c.want), c.name).toBeLessThanOrEqual(c.tolerance);
      }
    });
});
