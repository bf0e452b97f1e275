import { describe, expect, it } from 'vitest';
import { nodeGpuContext } from '../../src/cli/webgpuNode';

// WebGPU reports a command that did not run as encoded (a validation, out-of-memory or internal error) only
// through the device's error events. The context records them and fails every later readback, so an engine
// never returns numbers from work that was skipped. Dawn in Node (SwiftShader without a GPU driver).

describe('GpuContext error surfacing (Dawn)', () => {
  it('a clean device reads back what was written', async () => {
    const ctx = await nodeGpuContext();
    const buf = ctx.storage(new Float32Array([1, 2, 3, 4]));
    expect([...(await ctx.readF32(buf, 4))]).toEqual([1, 2, 3, 4]);
    expect(() => ctx.throwIfFailed()).not.toThrow();
    ctx.destroy();
  });

  it('an invalid command fails the next readback with WebGPU’s message, and every one after it', async () => {
    const ctx = await nodeGpuContext();
    const small = ctx.empty(16, 'small');
    const good = ctx.storage(new Float32Array([5, 6, 7, 8]), 'good');
    // a copy out of range: the command buffer is invalid and nothing in it runs
    const enc = ctx.device.createCommandEncoder();
    enc.copyBufferToBuffer(good, 0, small, 0, 64);
    ctx.submit([enc.finish()]);
    // the buffer read afterwards is itself fine, but the device reported an error before it
    await expect(ctx.readF32(good, 4)).rejects.toThrow(
      /WebGPU reported \d+ errors? on this device before a readback, so its results are not trusted: GPUValidationError: .*does not fit/,
    );
    // the context stays failed
    await expect(ctx.readF32(good, 4)).rejects.toThrow(/not trusted/);
    expect(() => ctx.throwIfFailed('the next step')).toThrow(/before the next step/);
    ctx.destroy();
  });

  it('destroying the device on purpose is not reported as a failure', async () => {
    const ctx = await nodeGpuContext();
    ctx.destroy();
    await ctx.device.lost;
    expect(() => ctx.throwIfFailed()).not.toThrow();
  });
});
