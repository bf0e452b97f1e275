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

/** Commands handed to the queue (see GpuContext.counts). */
export interface GpuCounts {
  dispatches: number;
  passes: number;
  submits: number;
}

export class GpuContext {
  readonly device: GPUDevice;
  readonly status: AdapterStatus;
  private readonly pipelines = new Map<string, Promise<GPUComputePipeline>>();

  /**
   * Work handed to the queue through this context since it was made: compute dispatches, the compute passes
   * they were encoded in, and queue submits (each a driver round trip). Read the difference around a call to
   * see what it costs in commands (bench:train and bench:engine report them per step).
   */
  readonly counts: GpuCounts = { dispatches: 0, passes: 0, submits: 0 };

  /**
   * What WebGPU reported outside any error scope since this context was made (validation, out-of-memory and
   * internal errors, and the device's loss). Such an error means a command did not run as encoded, so every
   * readback after it throws (see `mapRead`): the context stays failed rather than hand back numbers that
   * look plausible but skipped work.
   */
  private readonly failures: string[] = [];
  private droppedFailures = 0;

  constructor(device: GPUDevice, status: AdapterStatus) {
    this.device = device;
    this.status = status;
    device.addEventListener?.('uncapturederror', (ev) => {
      const error = (ev as GPUUncapturedErrorEvent).error;
      this.recordFailure(`${error?.constructor?.name ?? 'GPUError'}: ${error?.message ?? String(error)}`);
    });
    device.lost?.then((info) => {
      if (info.reason !== 'destroyed') this.recordFailure(`device lost (${info.reason}): ${info.message}`);
    });
  }

  private recordFailure(message: string): void {
    if (this.failures.length < 5) this.failures.push(message.split('\n')[0]);
    else this.droppedFailures++;
  }

  /** Throws if WebGPU has reported an error on this context (the first messages, and how many in all). */
  throwIfFailed(what = 'a readback'): void {
    if (this.failures.length === 0) return;
    const total = this.failures.length + this.droppedFailures;
    throw new Error(
      `WebGPU reported ${total} error${total === 1 ? '' : 's'} on this device before ${what}, so its results are not trusted: ${this.failures.join('; ')}${this.droppedFailures ? ` (and ${this.droppedFailures} more)` : ''}`,
    );
  }

  /**
   * Maps a MAP_READ staging buffer, copies its contents out, and destroys it. Every readback of the engines
   * goes through here, so an error WebGPU reported for earlier commands (delivered before the map resolves)
   * fails the read instead of passing on its numbers.
   */
  async mapRead(staging: GPUBuffer, what = 'a readback'): Promise<ArrayBuffer> {
    try {
      await staging.mapAsync(GPUMapMode.READ);
    } catch (e) {
      this.throwIfFailed(what);
      throw new Error(`WebGPU could not map the buffer for ${what}: ${(e as Error).message}`);
    }
    const out = staging.getMappedRange().slice(0);
    staging.unmap();
    staging.destroy();
    this.throwIfFailed(what);
    return out;
  }

  /** Submits command buffers to the queue, counted in `counts.submits`. Every submit goes through here. */
  submit(buffers: GPUCommandBuffer[]): void {
    this.counts.submits++;
    this.device.queue.submit(buffers);
  }

  /**
   * A compute pipeline for `shaders/<name>.wgsl`, entry point `main` unless given; compiled once. Every entry
   * point of one file shares an explicit bind-group layout built from the file's `@binding` declarations, so
   * an entry point that leaves a binding unused still takes the same bind group as its siblings.
   */
  pipeline(name: string, entryPoint = 'main'): Promise<GPUComputePipeline> {
    const key = `${name}#${entryPoint}`;
    let p = this.pipelines.get(key);
    if (!p) {
      p = (async () => {
        const { module, layout } = await this.shaderModule(name);
        return this.device.createComputePipelineAsync({
          label: key,
          layout,
          compute: { module, entryPoint },
        });
      })();
      this.pipelines.set(key, p);
    }
    return p;
  }

  private readonly modules = new Map<
    string,
    Promise<{ module: GPUShaderModule; layout: GPUPipelineLayout; bindGroupLayout: GPUBindGroupLayout }>
  >();

  private shaderModule(name: string) {
    let m = this.modules.get(name);
    if (!m) {
      m = (async () => {
        const code = await shaderSource(name);
        const module = this.device.createShaderModule({ label: name, code });
        const info = await module.getCompilationInfo();
        const errors = info.messages.filter((msg) => msg.type === 'error');
        if (errors.length) {
          const text = errors.map((e) => `${name}.wgsl:${e.lineNum}:${e.linePos}: ${e.message}`).join('\n');
          throw new Error(`WGSL compilation failed:\n${text}`);
        }
        const bindGroupLayout = this.device.createBindGroupLayout({
          label: name,
          entries: bindingsOf(name, code),
        });
        const layout = this.device.createPipelineLayout({ label: name, bindGroupLayouts: [bindGroupLayout] });
        return { module, layout, bindGroupLayout };
      })();
      this.modules.set(name, m);
    }
    return m;
  }

  /** The bind-group layout shared by every entry point of `shaders/<name>.wgsl`. */
  async bindGroupLayout(name: string): Promise<GPUBindGroupLayout> {
    return (await this.shaderModule(name)).bindGroupLayout;
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

  /** Queues a write of `data` into `buf` at byte offset `offset`. */
  write(buf: GPUBuffer, data: Float32Array | Uint32Array | Int32Array | ArrayBuffer, offset = 0): void {
    if (data instanceof ArrayBuffer) this.device.queue.writeBuffer(buf, offset, data);
    else
      this.device.queue.writeBuffer(
        buf,
        offset,
        data.buffer as ArrayBuffer,
        data.byteOffset,
        data.byteLength,
      );
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
  async readF32(src: GPUBuffer, count: number, offsetElements = 0): Promise<Float32Array> {
    const bytes = count * 4;
    const staging = this.device.createBuffer({
      size: Math.max(4, bytes),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(src, offsetElements * 4, staging, 0, bytes);
    this.submit([enc.finish()]);
    return new Float32Array(await this.mapRead(staging));
  }

  /** Encodes and submits one compute dispatch with the given bindings (binding i = buffers[i]). */
  async dispatch(
    name: string,
    buffers: GPUBuffer[],
    workgroups: [number, number?, number?],
    entryPoint = 'main',
  ): Promise<void> {
    const program = new Program(this);
    await program.add(name, entryPoint, buffers, workgroups);
    program.submit();
  }

  destroy(): void {
    this.device.destroy();
  }
}

/**
 * Bind-group layout entries from a WGSL file's `@group(0) @binding(i) var<...>` declarations: `uniform`,
 * `storage, read` (read-only storage) and `storage, read_write` (storage).
 */
export function bindingsOf(name: string, code: string): GPUBindGroupLayoutEntry[] {
  const re =
    /@group\(0\)\s*@binding\((\d+)\)\s*var<\s*(uniform|storage\s*,\s*read_write|storage\s*,\s*read|storage)\s*>/g;
  const entries: GPUBindGroupLayoutEntry[] = [];
  for (const m of code.matchAll(re)) {
    const kind = m[2].replace(/\s+/g, '');
    const type: GPUBufferBindingType =
      kind === 'uniform'
        ? 'uniform'
        : kind === 'storage,read' || kind === 'storage'
          ? 'read-only-storage'
          : 'storage';
    entries.push({ binding: Number(m[1]), visibility: GPUShaderStage.COMPUTE, buffer: { type } });
  }
  if (entries.length === 0) throw new Error(`shaders/${name}.wgsl declares no @group(0) bindings`);
  return entries.sort((a, b) => a.binding - b.binding);
}

/**
 * Splits `count` workgroups over x (at most 65,535, WebGPU's per-dimension limit) and y. Kernels that take a
 * 2D grid rebuild the flat index as `gid.y · num_workgroups.x · wg + gid.x` and bound-check it.
 */
export function grid(count: number): [number, number] {
  const n = Math.max(1, count);
  if (n <= 65535) return [n, 1];
  const y = Math.ceil(n / 65535);
  return [Math.ceil(n / y), y];
}

/** A 16-byte-aligned uniform block: u32 and f32 fields in declaration order. */
export function uniformBlock(fields: ({ u: number } | { f: number })[]): ArrayBuffer {
  const words = Math.ceil(fields.length / 4) * 4;
  const buf = new ArrayBuffer(Math.max(16, words * 4));
  const view = new DataView(buf);
  fields.forEach((field, i) => {
    if ('u' in field) view.setUint32(i * 4, field.u >>> 0, true);
    else view.setFloat32(i * 4, field.f, true);
  });
  return buf;
}

export interface Step {
  kind: 'dispatch' | 'copy' | 'clear';
  pipeline?: GPUComputePipeline;
  bindGroup?: GPUBindGroup;
  workgroups?: [number, number, number];
  src?: GPUBuffer;
  srcOffset?: number;
  dst?: GPUBuffer;
  dstOffset?: number;
  bytes?: number;
}

/**
 * A recorded sequence of dispatches, copies and clears with their bind groups built once. Encoding it again
 * costs no allocation, so a model builds one Program per batch shape and replays it every step: all its
 * dispatches go into one command encoder and one submit, and every tensor stays resident on the GPU.
 */
export class Program {
  private readonly steps: Step[] = [];
  private readonly owned: GPUBuffer[] = [];

  constructor(readonly ctx: GpuContext) {}

  /**
   * Adds a dispatch of `shaders/<name>.wgsl` entry `entryPoint`. `uniform` (if given) becomes binding 0 in a
   * buffer the program owns and returns, so callers can rewrite it per replay with `queue.writeBuffer`.
   */
  async add(
    name: string,
    entryPoint: string,
    buffers: (GPUBuffer | ArrayBuffer)[],
    workgroups: [number, number?, number?],
  ): Promise<GPUBuffer[]> {
    const pipeline = await this.ctx.pipeline(name, entryPoint);
    const layout = await this.ctx.bindGroupLayout(name);
    const uniforms: GPUBuffer[] = [];
    const entries = buffers.map((b, binding) => {
      let buffer: GPUBuffer;
      if (b instanceof ArrayBuffer) {
        buffer = this.ctx.device.createBuffer({
          label: `${name}.${entryPoint}.uniform`,
          size: b.byteLength,
          usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
        });
        this.ctx.device.queue.writeBuffer(buffer, 0, b);
        this.owned.push(buffer);
        uniforms.push(buffer);
      } else buffer = b;
      return { binding, resource: { buffer } };
    });
    const bindGroup = this.ctx.device.createBindGroup({ label: `${name}.${entryPoint}`, layout, entries });
    this.steps.push({
      kind: 'dispatch',
      pipeline,
      bindGroup,
      workgroups: [workgroups[0], workgroups[1] ?? 1, workgroups[2] ?? 1],
    });
    return uniforms;
  }

  /** A small storage buffer owned by this program (for bindings an entry point leaves unused). */
  scratch(bytes = 4): GPUBuffer {
    const b = this.ctx.empty(bytes, 'program.scratch');
    this.owned.push(b);
    return b;
  }

  /** Adds a dispatch whose binding 0 is an existing uniform buffer (shared with an earlier step). */
  async addWithUniform(
    name: string,
    entryPoint: string,
    uniform: GPUBuffer,
    buffers: GPUBuffer[],
    workgroups: [number, number?, number?],
  ): Promise<void> {
    await this.add(name, entryPoint, [uniform, ...buffers], workgroups);
  }

  /** Adds a buffer copy; the returned step's offsets may be changed before a later replay. */
  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): Step {
    const step: Step = { kind: 'copy', src, srcOffset, dst, dstOffset, bytes };
    this.steps.push(step);
    return step;
  }

  clear(dst: GPUBuffer): void {
    this.steps.push({ kind: 'clear', dst });
  }

  /** Appends this program's steps to `enc` (compute passes split only where a copy or clear sits between). */
  encode(enc: GPUCommandEncoder): void {
    let pass: GPUComputePassEncoder | null = null;
    const counts = this.ctx.counts;
    for (const s of this.steps) {
      if (s.kind === 'dispatch') {
        if (!pass) {
          pass = enc.beginComputePass();
          counts.passes++;
        }
        counts.dispatches++;
        pass.setPipeline(s.pipeline as GPUComputePipeline);
        pass.setBindGroup(0, s.bindGroup as GPUBindGroup);
        const [x, y, z] = s.workgroups as [number, number, number];
        pass.dispatchWorkgroups(x, y, z);
        continue;
      }
      if (pass) {
        pass.end();
        pass = null;
      }
      if (s.kind === 'copy')
        enc.copyBufferToBuffer(
          s.src as GPUBuffer,
          s.srcOffset as number,
          s.dst as GPUBuffer,
          s.dstOffset as number,
          s.bytes as number,
        );
      else enc.clearBuffer(s.dst as GPUBuffer);
    }
    if (pass) pass.end();
  }

  submit(): void {
    const enc = this.ctx.device.createCommandEncoder();
    this.encode(enc);
    this.ctx.submit([enc.finish()]);
  }

  destroy(): void {
    for (const b of this.owned) b.destroy();
    this.owned.length = 0;
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
