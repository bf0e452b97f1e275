import { createGpuContext, type GpuContext } from '../../src/engine/gpu/device';

/** This suite must run on a real adapter: no adapter is a failure, never a skip. */
export async function context(): Promise<GpuContext> {
  const ctx = await createGpuContext();
  if (!('device' in ctx)) throw new Error(`no WebGPU adapter in this Chromium: ${ctx.reason}`);
  return ctx;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
  }
  return m;
}
