import { create } from 'zustand';
import {
  type AdapterStatus,
  createGpuContext,
  type GpuContext,
  type Unavailable,
} from '../engine/gpu/device';

interface GpuState {
  status: AdapterStatus | Unavailable | null;
  context: GpuContext | null;
  probe: () => Promise<void>;
}

/** The page's one WebGPU context, probed once at start-up; `status` is null while probing. */
export const useGpu = create<GpuState>((set, get) => ({
  status: null,
  context: null,
  probe: async () => {
    if (get().status) return;
    const r = await createGpuContext();
    if (r instanceof Object && 'device' in r) set({ status: r.status, context: r });
    else set({ status: r as Unavailable });
  },
}));

function mib(bytes: number): string {
  return bytes >= 1 << 20 ? `${Math.round(bytes / (1 << 20))} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** One line for the header: what the engine will run on. */
export function describeGpu(s: AdapterStatus | Unavailable | null): string {
  if (s === null) return 'WebGPU: probing…';
  if (!s.available) return 'WebGPU unavailable: running on the CPU engine';
  const parts = [
    `WebGPU: ${s.vendor} / ${s.architecture}`,
    s.isFallbackAdapter ? 'software fallback' : 'hardware',
    s.shaderF16 ? 'shader-f16' : 'no shader-f16',
    `storage binding ${mib(s.limits.maxStorageBufferBindingSize)}`,
    `workgroup storage ${mib(s.limits.maxComputeWorkgroupStorageSize)}`,
    `${s.limits.maxComputeInvocationsPerWorkgroup} invocations/workgroup`,
  ];
  return parts.join(' · ');
}
