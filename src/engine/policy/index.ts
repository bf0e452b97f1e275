/**
 * One engine, three places: `createPolicyEngine` gives the WebGPU policy where an adapter exists (browser, or
 * Node with the `webgpu` package's GPU object passed in) and the CPU reference policy otherwise, behind the
 * same PolicyEngine interface. `backend` on the result says which one runs; `fallbackReason` why not WebGPU.
 */
import { createGpuContext, type GpuContext } from '../gpu/device';
import { CpuPolicy } from './cpuPolicy';
import { GpuPolicy } from './gpuPolicy';
import type { AdamWHyper, PolicyConfig, PolicyEngine } from './types';

export { CpuPolicy } from './cpuPolicy';
export { GpuPolicy } from './gpuPolicy';
export type * from './types';

export interface CreatePolicyOptions {
  config?: Partial<PolicyConfig>;
  optimizer?: Partial<AdamWHyper>;
  params?: Float32Array;
  /** 'auto' (default): WebGPU if an adapter is found, else CPU. 'webgpu': fail without an adapter. */
  backend?: 'auto' | 'webgpu' | 'cpu';
  /** Node: the GPU object from the `webgpu` package (browser: navigator.gpu is used). */
  gpu?: GPU;
  /** Reuse an existing context instead of requesting a new adapter. */
  context?: GpuContext;
}

export async function createPolicyEngine(
  opts: CreatePolicyOptions = {},
): Promise<{ engine: PolicyEngine; fallbackReason?: string }> {
  const backend = opts.backend ?? 'auto';
  if (backend !== 'cpu') {
    const ctx = opts.context ?? (await createGpuContext(opts.gpu));
    if ('device' in ctx) return { engine: GpuPolicy.create(ctx, opts.config, opts.optimizer, opts.params) };
    if (backend === 'webgpu') throw new Error(`WebGPU policy requested but unavailable: ${ctx.reason}`);
    return { engine: new CpuPolicy(opts.config, opts.optimizer, opts.params), fallbackReason: ctx.reason };
  }
  return { engine: new CpuPolicy(opts.config, opts.optimizer, opts.params) };
}
