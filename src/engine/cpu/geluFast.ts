/**
 * The CPU engine's fast GELU (tanh approximation): the same contracts as geluForwardCpu and geluBackwardCpu
 * (gelu.ts, the reference) on the SIMD module's `gelu_forward` / `gelu_backward` (simd.ts), with tanh(u) as
 * 1 − 2/(exp(2u) + 1) and exp by a polynomial. tests/unit/logprobFast.test.ts holds both to the reference.
 */
import { geluBackwardCpu, geluForwardCpu } from './gelu';
import { heap, simdKernels } from './simd';

export function geluForwardFast(x: Float32Array, y: Float32Array): void {
  const k = simdKernels();
  if (!k) {
    geluForwardCpu(x, y);
    return;
  }
  const n = x.length;
  const n4 = (n + 3) & ~3;
  const f = heap(k, 2 * n4);
  f.set(x, 0);
  f.fill(0, n, n4);
  k.gelu_forward(0, n4 * 4, n4);
  y.set(f.subarray(n4, n4 + n));
}

/** dx = dy · gelu'(x). */
export function geluBackwardFast(x: Float32Array, dy: Float32Array, dx: Float32Array): void {
  const k = simdKernels();
  if (!k) {
    geluBackwardCpu(x, dy, dx);
    return;
  }
  const n = x.length;
  const n4 = (n + 3) & ~3;
  const f = heap(k, 3 * n4);
  f.set(x, 0);
  f.fill(0, n, n4);
  f.set(dy.subarray(0, n), n4);
  f.fill(0, n4 + n, 2 * n4);
  k.gelu_backward(0, n4 * 4, 2 * n4 * 4, n4);
  dx.set(f.subarray(2 * n4, 2 * n4 + n));
}
