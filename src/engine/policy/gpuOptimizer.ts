/**
 * AdamW of the WebGPU engines (shaders/adamw.wgsl through gpu/kernels.ts; cpu/adamw.ts is its reference): two
 * programs over the trainable flat buffer — the global gradient norm (read back and checked on the host), then
 * the update with clipping and weight decay, which zeroes the gradient — and the optimizer state of a checkpoint.
 */
import { type AdamWHyper, checkedOptimizerState } from '../cpu/adamw';
import { type GpuContext, Program } from '../gpu/device';
import * as K from '../gpu/kernels';
import { type AdamWUniform, adamwBlock } from '../gpu/kernels';
import type { OptimizerState, OptimizerStepResult } from './types';

/** The buffers AdamW reads and writes, the trainable buffer's size and decay extent, and the norm's partials. */
export interface GpuAdamWTarget {
  ctx: GpuContext;
  params: GPUBuffer;
  grads: GPUBuffer;
  partial: GPUBuffer;
  m: GPUBuffer;
  v: GPUBuffer;
  n: number;
  decayEnd: number;
  partials: number;
}

export interface AdamPrograms {
  norm: Program;
  update: Program;
  uniform: GPUBuffer;
}

function adamUniform(t: GpuAdamWTarget, h: AdamWHyper, step: number): AdamWUniform {
  return {
    n: t.n,
    decayEnd: t.decayEnd,
    partials: t.partials,
    lr: h.lr,
    beta1: h.beta1,
    beta2: h.beta2,
    eps: h.eps,
    weightDecay: h.weightDecay,
    maxGradNorm: h.maxGradNorm,
    step,
  };
}

/** The norm and update programs over one target (the uniform is rewritten at every step). */
export async function adamPrograms(t: GpuAdamWTarget, h: AdamWHyper): Promise<AdamPrograms> {
  const { grads, partial, params, m, v } = t;
  const norm = new Program(t.ctx);
  const uniform = await K.adamwNorm(norm, adamUniform(t, h, 1), grads, partial, params, m, v);
  const update = new Program(t.ctx);
  await K.adamwUpdate(update, t.n, uniform, grads, partial, params, m, v);
  update.clear(grads);
  return { norm, update, uniform };
}

/**
 * One optimizer step after `step` steps: the norm first; a non-finite norm skips the update (`clearGrads`
 * zeroes the gradient instead) and keeps the step count. Returns the count after the call.
 */
export async function adamStep(
  t: GpuAdamWTarget,
  adam: AdamPrograms,
  h: AdamWHyper,
  step: number,
  clearGrads: () => void | Promise<void>,
): Promise<OptimizerStepResult> {
  const next = step + 1;
  t.ctx.write(adam.uniform, adamwBlock(adamUniform(t, h, next)));
  adam.norm.submit();
  const gradNorm = (await t.ctx.readF32(t.partial, 1, t.partials))[0];
  if (!Number.isFinite(gradNorm)) {
    await clearGrads();
    return { gradNorm, step, skipped: true };
  }
  adam.update.submit();
  return { gradNorm, step: next, skipped: false };
}

/** The moments read back, with the step count. */
export async function readOptimizerState(t: GpuAdamWTarget, step: number): Promise<OptimizerState> {
  return { m: await t.ctx.readF32(t.m, t.n), v: await t.ctx.readF32(t.v, t.n), step };
}

/** A checkpoint's moments written (checked against the target's size); returns its step count. */
export function writeOptimizerState(t: GpuAdamWTarget, state: OptimizerState): number {
  const s = checkedOptimizerState(state, t.n);
  t.ctx.write(t.m, s.m);
  t.ctx.write(t.v, s.v);
  return s.step;
}
