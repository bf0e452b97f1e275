/**
 * The project's WebGPU helper: one adapter/device per context, cached compute pipelines, and buffer upload /
 * readback. Works wherever `navigator.gpu` (browser) or an injected `GPU` object (Node + Dawn) exists.
 */
import { shaderSource } from './shaders';

export interface AdapterStatus {
  available: true;
  vendor: string;
  architecture: string;
  description: string;
  isFallbackAdapter: boolean;
  shaderF16: boolean;
  features: string[];
  limits: {
    maxStorageBufferBindingSize: number;
    maxComputeWorkgroupStorageSize: number;
    maxComputeInvocationsPerWorkgroup: number;
    maxBufferSize: number;
  };
}

export interface Unavailable {
  available: false;
  reason: string;
}

export class GpuContext {
  readonly device: GPUDevice;
  readonly status: AdapterStatus;
  private readonly pipelines = new Map<string, Promise<GPUComputePipeline>>();

  constructor(device: GPUDevice, status: AdapterStatus) {
    this.device = device;
    this.status = status;
  }

  /** A compute pipeline for `shaders/<name>.wgsl`, entry point `main` unless given; compiled once. */
  pipeline(name: string, entryPoint = 'main'): Promise<GPUComputePipeline> {
    const key = `${name}#${entryPoint}`;
    let p = this.pipelines.get(key);
    if (!p) {
      p = (async () => {
        const code = await shaderSource(name);
        const module = this.device.createShaderModule({ label: name, code });
        const info = await module.getCompilationInfo();
        const errors = info.messages.filter((m) => m.type === 'error');
        if (errors.length) {
          const text = errors.map((m) => `${name}.wgsl:${m.lineNum}:${m.linePos}: ${m.message}`).join('\n');
          throw new Error(`WGSL compilation failed:\n${text}`);
        }
        return this.device.createComputePipelineAsync({
          label: key,
          layout: 'auto',
          compute: { module, entryPoint },
        });
      })();
      this.pipelines.set(key, p);
    }
    return p;
  }

  /** A storage buffer holding `data` (f32/u32/i32), usable as input or output. */
  storage(data: Float32Array | Uint32Array | Int32Array, label?: string): GPUBuffer {
    const buf = this.device.createBuffer({
      label,
      size: Math.max(4, data.byteLength),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      mappedAtCreation: true,
    });
    new Uint8Array(buf.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    buf.unmap();
    return buf;
  }

  /** An uninitialised (zeroed) storage buffer of `bytes` bytes. */
  empty(bytes: number, label?: string): GPUBuffer {
    return this.device.createBuffer({
      label,
      size: Math.max(4, bytes),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
  }

  /** A uniform buffer of u32 values (padded to 16 bytes). */
  uniformU32(values: number[], label?: string): GPUBuffer {
    const padded = new Uint32Array(Math.ceil(values.length / 4) * 4);
    padded.set(values);
    const buf = this.device.createBuffer({
      label,
      size: padded.byteLength,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    this.device.queue.writeBuffer(buf, 0, padded);
    return buf;
  }

  /** Copies a buffer back to the host as f32. */
  async readF32(src: GPUBuffer, count: number): Promise<Float32Array> {
    const bytes = count * 4;
    const staging = this.device.createBuffer({
      size: Math.max(4, bytes),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(src, 0, staging, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0));
    staging.unmap();
    staging.destroy();
    return out;
  }

  /** Encodes and submits one compute dispatch with the given bindings (binding i = buffers[i]). */
  async dispatch(
    name: string,
    buffers: GPUBuffer[],
    workgroups: [number, number?, number?],
    entryPoint = 'main',
  ): Promise<void> {
    const pipeline = await this.pipeline(name, entryPoint);
    const bindGroup = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const enc = this.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(workgroups[0], workgroups[1] ?? 1, workgroups[2] ?? 1);
    pass.end();
    this.device.queue.submit([enc.finish()]);
  }

  destroy(): void {
    this.device.destroy();
  }
}

function describe(adapter: GPUAdapter): AdapterStatus {
  const info = adapter.info;
  return {
    available: true,
    vendor: info.vendor || 'unknown',
    architecture: info.architecture || 'unknown',
    description: info.description || '',
    // `isFallbackAdapter` moved from GPUAdapter to GPUAdapterInfo; read whichever this implementation has.
    isFallbackAdapter: Boolean(
      (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter ??
        (adapter as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter,
    ),
    shaderF16: adapter.features.has('shader-f16'),
    features: [...adapter.features].sort(),
    limits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  };
}

/**
 * Requests an adapter and a device with the adapter's storage limits. `gpu` defaults to `navigator.gpu`;
 * Node callers pass the object from the `webgpu` package.
 */
export async function createGpuContext(gpu?: GPU): Promise<GpuContext | Unavailable> {
  const g = gpu ?? (typeof navigator !== 'undefined' ? navigator.gpu : undefined);
  if (!g)
    return { available: false, reason: 'navigator.gpu is not defined (this browser exposes no WebGPU)' };
  let adapter: GPUAdapter | null;
  try {
    adapter = await g.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return { available: false, reason: `requestAdapter() threw: ${(e as Error).message}` };
  }
  if (!adapter) return { available: false, reason: 'requestAdapter() returned null (no WebGPU adapter)' };
  const status = describe(adapter);
  const requiredFeatures: GPUFeatureName[] = status.shaderF16 ? ['shader-f16'] : [];
  const device = await adapter.requestDevice({
    requiredFeatures,
    requiredLimits: {
      maxStorageBufferBindingSize: status.limits.maxStorageBufferBindingSize,
      maxBufferSize: status.limits.maxBufferSize,
      maxComputeWorkgroupStorageSize: status.limits.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: status.limits.maxComputeInvocationsPerWorkgroup,
    },
  });
  return new GpuContext(device, status);
}
