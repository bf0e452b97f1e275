/**
 * The CPU engine's WebAssembly SIMD module (wasm/kernels.wat; its bytes in wasm/kernels.wasm.ts, made by
 * tests/tools/build-wasm.mjs): instantiated once, the relaxed-SIMD variant where the runtime validates it, else
 * the plain SIMD one, else none (the fast paths then run the reference loops). The kernels work on the module's
 * own memory: a caller copies its operands in (`heap`), runs a kernel and copies the result out, all
 * synchronously, so one memory serves every caller.
 */
import { relaxed, simd } from './wasm/kernels.wasm';

/** Which kernels the fast paths run on this runtime. */
export type FastKernel = 'relaxed-simd' | 'simd' | 'reference';

/** The module's exports; pointers are byte offsets into its memory (see wasm/kernels.wat). */
export interface SimdKernels {
  kind: 'relaxed-simd' | 'simd';
  memory: WebAssembly.Memory;
  gemm: (...args: number[]) => void;
  transpose: (src: number, R: number, C: number, dst: number, ldd: number) => void;
  /** c (M, N) = a (M, K) · bᵀ for b stored (N, K); strides in bytes */
  gemm_nt: (
    M: number,
    N: number,
    K: number,
    a: number,
    lda: number,
    b: number,
    ldb: number,
    c: number,
    ldc: number,
  ) => void;
  softmax_stats: (z: number, R: number, V: number, inv: number, out: number) => void;
  softmax_grad: (
    z: number,
    d: number,
    R: number,
    V: number,
    inv: number,
    shift: number,
    coef: number,
  ) => void;
  gelu_forward: (x: number, y: number, n: number) => void;
  gelu_backward: (x: number, dy: number, dx: number, n: number) => void;
}

const decode = (b64: string) => Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));

let loaded: SimdKernels | null | undefined;
let view = new Float32Array(0);

/** The instantiated module, or null where WebAssembly SIMD is missing. */
export function simdKernels(): SimdKernels | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (typeof WebAssembly !== 'object') return loaded;
  for (const [kind, b64] of [
    ['relaxed-simd', relaxed],
    ['simd', simd],
  ] as const) {
    const bytes = decode(b64);
    if (!WebAssembly.validate(bytes)) continue;
    const exports = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
    loaded = { kind, ...(exports as unknown as Omit<SimdKernels, 'kind'>) };
    break;
  }
  return loaded;
}

/** The kernels this runtime uses: relaxed SIMD where it validates, else SIMD, else the reference loops. */
export function fastKernel(): FastKernel {
  return simdKernels()?.kind ?? 'reference';
}

/** The module's memory as floats, grown to hold at least n. */
export function heap(k: SimdKernels, n: number): Float32Array {
  const have = k.memory.buffer.byteLength;
  if (have < n * 4) k.memory.grow(Math.ceil((n * 4 - have) / 65536));
  if (view.buffer !== k.memory.buffer) view = new Float32Array(k.memory.buffer);
  return view;
}
