import type { GpuContext } from './device';
import { Program } from './device';
import { matmul } from './kernels';

/** C = A · B on the GPU with `shaders/matmul.wgsl`. a: (M, K), b: (K, N) → (M, N). */
export async function matmulGpu(
  ctx: GpuContext,
  a: Float32Array,
  b: Float32Array,
  M: number,
  N: number,
  K: number,
): Promise<Float32Array> {
  if (a.length !== M * K) throw new Error(`matmul: A has ${a.length} values, expected M*K = ${M * K}`);
  if (b.length !== K * N) throw new Error(`matmul: B has ${b.length} values, expected K*N = ${K * N}`);
  const bufA = ctx.storage(a, 'matmul.a');
  const bufB = ctx.storage(b, 'matmul.b');
  const bufC = ctx.empty(M * N * 4, 'matmul.c');
  const p = new Program(ctx);
  await matmul(p, { mode: 'nn', M, N, K, a: bufA, b: bufB, c: bufC });
  p.submit();
  const out = await ctx.readF32(bufC, M * N);
  p.destroy();
  for (const buf of [bufA, bufB, bufC]) buf.destroy();
  return out;
}
