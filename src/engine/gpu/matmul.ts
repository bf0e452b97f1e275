import type { GpuContext } from './device';

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
  const dims = ctx.uniformU32([M, N, K, 0], 'matmul.dims');
  const bufA = ctx.storage(a, 'matmul.a');
  const bufB = ctx.storage(b, 'matmul.b');
  const bufC = ctx.empty(M * N * 4, 'matmul.c');
  await ctx.dispatch('matmul', [dims, bufA, bufB, bufC], [Math.ceil(N / 16), Math.ceil(M / 16)]);
  const out = await ctx.readF32(bufC, M * N);
  for (const b of [dims, bufA, bufB, bufC]) b.destroy();
  return out;
}
