/**
 * LoRA on the WebGPU Llama-family engine: the adapter of ../llama/lora.ts (PEFT's LoraModel: y += s·(x·Aᵀ)·Bᵀ,
 * s = lora_alpha / r, base frozen) as GPU dispatches on one flat adapter buffer laid out by `loraLayout` (PEFT's
 * saved names). Only matmuls are needed; `scale` (shaders/matmul.wgsl) carries s, so no kernel is LoRA-specific.
 *   forward   t = x·Aᵀ (N, r, kept for the backward),   y += s·t·Bᵀ
 *   backward  dt = s·dy·B,   dx += dt·A,   dA += dtᵀ·x,   dB += s·dyᵀ·t
 * The same formulas as LoraAdapter.forward / backward (the CPU reference), the same tensor order and names, so
 * the adapter's buffer, gradients and AdamW moments read back as the CPU engine's and PEFT's folder is written
 * by the one encoder (../llama/peftAdapter.ts).
 */
import type { GpuContext, Program } from '../gpu/device';
import * as K from '../gpu/kernels';
import type { LlamaConfig } from '../llama/config';
import {
  BoundLora,
  LORA_TARGETS,
  LoraAdapter,
  type LoraConfig,
  type LoraTarget,
  loraTensorName,
  MODULE_PATH,
  targetShape,
} from '../llama/lora';

const TARGET_OF = new Map<string, LoraTarget>(LORA_TARGETS.map((m) => [MODULE_PATH[m], m]));

/** A layer's linear from its HF module name (`model.layers.3.self_attn.q_proj`), when it is a LoRA target. */
function targetOf(name: string): { l: number; m: LoraTarget } | null {
  const match = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  const m = match ? TARGET_OF.get(match[2]) : undefined;
  return match && m ? { l: Number(match[1]), m } : null;
}

/** Where a linear's t = x·Aᵀ goes: one buffer per module in a training graph, a shared scratch when decoding. */
export type LoraSaved = (name: string) => GPUBuffer;

export class GpuLora extends BoundLora {
  /** the adapter's flat buffer (the engine's trainable parameters) */
  readonly params: GPUBuffer;

  constructor(
    readonly ctx: GpuContext,
    model: LlamaConfig,
    config: LoraConfig,
    init: Float32Array,
  ) {
    super(model, config, init.length);
    this.params = ctx.storage(init, 'lora.params');
  }

  /** The adapted module behind a linear's name, or null when the base layer runs alone. */
  target(name: string): { l: number; m: LoraTarget } | null {
    const t = targetOf(name);
    return t && this.targets.has(t.m) ? t : null;
  }

  /** Names of the adapted linears of every layer (what a graph keeps a `t` buffer for). */
  modules(): string[] {
    const out: string[] = [];
    for (let l = 0; l < this.model.layers; l++)
      for (const m of this.config.targetModules) out.push(`model.layers.${l}.${MODULE_PATH[m]}`);
    return out;
  }

  private off(l: number, m: LoraTarget, which: 'A' | 'B'): number {
    return (this.layout.byName.get(loraTensorName(l, m, which)) as { offset: number }).offset;
  }

  /** y (N, out) += s·(x·Aᵀ)·Bᵀ for x (N, in), keeping t = x·Aᵀ (N, r). No-op for a module not adapted. */
  async forward(p: Program, name: string, N: number, x: GPUBuffer, y: GPUBuffer, t: GPUBuffer) {
    const tm = this.target(name);
    if (!tm) return;
    const { inF, outF } = targetShape(this.model, tm.m);
    const r = this.config.r;
    const w = this.params;
    await K.matmul(p, { mode: 'nt', M: N, N: r, K: inF, a: x, b: w, bOff: this.off(tm.l, tm.m, 'A'), c: t });
    await K.matmul(p, {
      mode: 'nt',
      M: N,
      N: outF,
      K: r,
      a: t,
      b: w,
      bOff: this.off(tm.l, tm.m, 'B'),
      c: y,
      accumulate: true,
      scale: this.scaling,
    });
  }

  /** dx (N, in) += s·(dy·B)·A; grads += dA = s·(dy·B)ᵀ·x and dB = s·dyᵀ·t. `dt` is an (N, r) scratch. */
  async backward(
    p: Program,
    name: string,
    N: number,
    x: GPUBuffer,
    t: GPUBuffer,
    dy: GPUBuffer,
    dx: GPUBuffer,
    dt: GPUBuffer,
    grads: GPUBuffer,
  ) {
    const tm = this.target(name);
    if (!tm) return;
    const { inF, outF } = targetShape(this.model, tm.m);
    const r = this.config.r;
    const [aOff, bOff] = [this.off(tm.l, tm.m, 'A'), this.off(tm.l, tm.m, 'B')];
    const w = this.params;
    const s = this.scaling;
    await K.matmul(p, { mode: 'nn', M: N, N: r, K: outF, a: dy, b: w, bOff, c: dt, scale: s });
    await K.matmul(p, { mode: 'nn', M: N, N: inF, K: r, a: dt, b: w, bOff: aOff, c: dx, accumulate: true });
    await K.matmul(p, {
      mode: 'tn',
      M: r,
      N: inF,
      K: N,
      a: dt,
      b: x,
      c: grads,
      cOff: aOff,
      accumulate: true,
    });
    await K.matmul(p, {
      mode: 'tn',
      M: outF,
      N: r,
      K: N,
      a: dy,
      b: t,
      c: grads,
      cOff: bOff,
      accumulate: true,
      scale: s,
    });
  }

  /** The adapter as the CPU engine's LoraAdapter (values read back): for PEFT's files and merged weights. */
  async read(): Promise<LoraAdapter> {
    return new LoraAdapter(this.model, this.config, await this.ctx.readF32(this.params, this.layout.total));
  }

  destroy(): void {
    this.params.destroy();
  }
}
