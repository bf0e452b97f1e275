/**
 * WebGPU in Node through the `webgpu` package (Dawn). On machines without a GPU driver Dawn can use the
 * SwiftShader Vulkan driver that Debian's Chromium ships; Vulkan reads VK_ICD_FILENAMES and the dynamic
 * loader LD_LIBRARY_PATH at process start, so both must be set in the environment this process was started
 * with (see `reexecWithSwiftShader`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createGpuContext, type GpuContext } from '../engine/gpu/device';

export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
export const SWIFTSHADER_LIB_DIR = '/usr/lib/chromium';

// dawn.node crashes if the GPU object it hands out is garbage-collected: keep it at module scope.
let gpuInstance: GPU | null = null;

export const NO_ADAPTER_HELP = `No WebGPU adapter found by Dawn (npm package 'webgpu').
On a machine without a GPU driver, point Vulkan at Chromium's SwiftShader before starting Node:
  export VK_ICD_FILENAMES=${SWIFTSHADER_ICD}
  export LD_LIBRARY_PATH=${SWIFTSHADER_LIB_DIR}
(both must be in the environment of the process that loads Dawn; setting them from inside Node is too late).`;

/**
 * If no Vulkan ICD is configured and SwiftShader is installed, runs this same command again as a child with
 * the variables set and returns its exit code; returns null when nothing needed doing.
 */
export function reexecWithSwiftShader(): number | null {
  if (process.env.VK_ICD_FILENAMES || process.env.HARNESS_LAB_NO_REEXEC) return null;
  if (!existsSync(SWIFTSHADER_ICD)) return null;
  const env = {
    ...process.env,
    VK_ICD_FILENAMES: SWIFTSHADER_ICD,
    LD_LIBRARY_PATH: [SWIFTSHADER_LIB_DIR, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
    HARNESS_LAB_NO_REEXEC: '1',
  };
  const r = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env,
  });
  return r.status ?? 1;
}

/** A GpuContext on Dawn, or an Error whose message says how to get an adapter. */
export async function nodeGpuContext(): Promise<GpuContext> {
  if (!gpuInstance) {
    const webgpu = await import('webgpu');
    Object.assign(globalThis, webgpu.globals);
    gpuInstance = webgpu.create([]) as unknown as GPU;
  }
  const ctx = await createGpuContext(gpuInstance);
  if (!('device' in ctx)) throw new Error(`${ctx.reason}\n${NO_ADAPTER_HELP}`);
  return ctx;
}
