/**
 * One engine, three places: `createPolicyEngine` gives the WebGPU policy where an adapter exists (browser, or
 * Node with the `webgpu` package's GPU object passed in) and the CPU reference policy otherwise, behind the
 * same PolicyEngine interface. The architecture comes from what is passed: a Llama-family folder (`llama`)
 * runs the Llama-family engines (LlamaGpuPolicy / LlamaCpuPolicy), otherwise the GPT-2-shaped policy
 * (GpuPolicy / CpuPolicy) of `config`. `backend` on the result says which one runs; `fallbackReason` why not WebGPU.
 */
import { type BaseDtype, roundToDtype } from '../cpu/half';
import { createGpuContext, type GpuContext } from '../gpu/device';
import type { LlamaFolder } from '../llama/hfFolder';
import { CpuPolicy } from './cpuPolicy';
import { GpuPolicy } from './gpuPolicy';
import { LlamaCpuPolicy, type LlamaCpuPolicyOptions } from './llamaCpuPolicy';
import { LlamaGpuPolicy } from './llamaGpuPolicy';
import type { AdamWHyper, PolicyConfig, PolicyEngine } from './types';

export { CpuPolicy } from './cpuPolicy';
export { GpuPolicy } from './gpuPolicy';
export { LlamaCpuPolicy } from './llamaCpuPolicy';
export { LlamaGpuPolicy } from './llamaGpuPolicy';
export type * from './types';

export interface CreatePolicyOptions {
  config?: Partial<PolicyConfig>;
  optimizer?: Partial<AdamWHyper>;
  params?: Float32Array;
  /** A Llama-family folder (engine/llama/hfFolder.ts): its config and weights (then `config`/`params` must be unset). */
  llama?: Pick<LlamaFolder, 'config' | 'params'>;
  /** Llama family: the context the engine accepts (default and cap: max_position_embeddings). */
  contextLength?: number;
  /** Llama family: train a LoRA adapter on the frozen base (either engine; see LlamaCpuPolicyOptions.lora). */
  lora?: LlamaCpuPolicyOptions['lora'];
  /** Llama family: the base model's name or path, written into an exported adapter_config.json. */
  baseModel?: string;
  /**
   * Llama family with LoRA: the frozen base in f16 / bf16 (default f32). WebGPU stores it packed (half the
   * memory); the CPU engine runs on the same rounded values in f32, so both compute the same numbers.
   */
  baseDtype?: BaseDtype;
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
  const { llama } = opts;
  if (llama && (opts.config || opts.params))
    throw new Error(
      'createPolicyEngine: a Llama-family folder carries its own config and params; pass one or the other',
    );
  if (opts.lora && !llama)
    throw new Error('createPolicyEngine: LoRA adapts a Llama-family folder; pass `llama` with `lora`');
  const baseDtype = opts.baseDtype ?? 'f32';
  if (baseDtype !== 'f32' && !opts.lora)
    throw new Error(
      `createPolicyEngine: a ${baseDtype} base needs LoRA (a frozen base); full fine-tuning keeps the weights in f32`,
    );
  const contextLength =
    llama && opts.contextLength !== undefined
      ? Math.min(opts.contextLength, llama.config.maxPositions)
      : undefined;
  const llamaOpts = { contextLength, lora: opts.lora, baseModel: opts.baseModel };
  const onCpu = (): PolicyEngine =>
    llama
      ? new LlamaCpuPolicy(llama.config, roundToDtype(llama.params, baseDtype), opts.optimizer, llamaOpts)
      : new CpuPolicy(opts.config, opts.optimizer, opts.params);
  if (backend !== 'cpu') {
    const ctx = opts.context ?? (await createGpuContext(opts.gpu));
    // a Llama-family model the adapter cannot hold (or the kernels cannot run) falls back like a missing adapter
    const reason = !('device' in ctx)
      ? ctx.reason
      : llama
        ? LlamaGpuPolicy.unfit(ctx, llama.config, baseDtype)
        : null;
    if ('device' in ctx && reason === null)
      return {
        engine: llama
          ? new LlamaGpuPolicy(ctx, llama.config, llama.params, opts.optimizer, { ...llamaOpts, baseDtype })
          : GpuPolicy.create(ctx, opts.config, opts.optimizer, opts.params),
      };
    if (backend === 'webgpu') throw new Error(`WebGPU policy requested but unavailable: ${reason}`);
    return { engine: onCpu(), fallbackReason: reason ?? undefined };
  }
  return { engine: onCpu() };
}
