/**
 * The CPU engine's fast fused log-softmax + target gather: the same contracts as logprobForwardCpu and
 * logprobBackwardCpu (logprob.ts, the reference) on the SIMD module's `softmax_stats` and `softmax_grad`
 * (simd.ts): exp by a polynomial (~2 ulp), row sums in f32 over four lanes, where the reference sums in
 * doubles with Math.exp. tests/unit/logprobFast.test.ts holds both to the reference.
 */
import { logprobBackwardCpu, logprobForwardCpu } from './logprob';
import { heap, simdKernels } from './simd';

/** Like logprobForwardCpu: logits (B·T, V) → logp, entropy (aligned with the tokens) and lse per row. */
export const logprobForwardFast: typeof logprobForwardCpu = (
  logits,
  tokens,
  mask,
  B,
  T,
  V,
  temperature = 1,
) => {
  const k = simdKernels();
  if (!k) return logprobForwardCpu(logits, tokens, mask, B, T, V, temperature);
  const N = B * T;
  const logp = new Float32Array(N);
  const entropy = new Float32Array(N);
  const lse = new Float32Array(N);
  const inv = 1 / temperature;
  const f = heap(k, N * V + 3 * N);
  f.set(logits.subarray(0, N * V), 0);
  k.softmax_stats(0, N, V, inv, N * V * 4);
  const st = N * V;
  for (let n = 0; n < N; n++) {
    const sum = f[st + 3 * n + 1];
    const l = f[st + 3 * n] + Math.log(sum);
    lse[n] = l;
    if ((n % T) + 1 < T && mask[n + 1] !== 0) {
      const y = Math.min(tokens[n + 1], V - 1);
      logp[n + 1] = logits[n * V + y] * inv - l;
      entropy[n + 1] = l - f[st + 3 * n + 2] / sum;
    }
  }
  return { logp, entropy, lse };
};

/** Like logprobBackwardCpu: dlogits = w·(softmax(z) − onehot(y)) / temperature on every row with a target. */
export const logprobBackwardFast: typeof logprobBackwardCpu = (
  logits,
  tokens,
  weights,
  lse,
  B,
  T,
  V,
  temperature = 1,
) => {
  const k = simdKernels();
  if (!k) return logprobBackwardCpu(logits, tokens, weights, lse, B, T, V, temperature);
  const N = B * T;
  const inv = 1 / temperature;
  const f = heap(k, N * V + 2 * N);
  f.set(logits.subarray(0, N * V), 0);
  f.set(lse.subarray(0, N), N * V);
  const coef = N * V + N;
  for (let n = 0; n < N; n++) f[coef + n] = (n % T) + 1 < T ? weights[n + 1] * inv : 0;
  k.softmax_grad(0, 0, N, V, inv, N * V * 4, coef * 4);
  const dlogits = f.slice(0, N * V);
  for (let n = 0; n < N; n++)
    if ((n % T) + 1 < T && tokens[n + 1] < V) dlogits[n * V + tokens[n + 1]] -= f[coef + n];
  return dlogits;
};
