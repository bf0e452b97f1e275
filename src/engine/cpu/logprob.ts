/**
 * Reference for shaders/logprob.wgsl: fused log-softmax + target gather. Row n = b·T + t predicts token t+1;
 * z = logits / temperature. logp/entropy are aligned with the tokens (position 0 of each sequence is 0).
 */
export function logprobForwardCpu(
  logits: Float32Array,
  tokens: Uint32Array,
  mask: Float32Array,
  B: number,
  T: number,
  V: number,
  temperature = 1,
): { logp: Float32Array; entropy: Float32Array; lse: Float32Array } {
  const logp = new Float32Array(B * T);
  const entropy = new Float32Array(B * T);
  const lse = new Float32Array(B * T);
  const inv = 1 / temperature;
  for (let n = 0; n < B * T; n++) {
    const base = n * V;
    let mx = Number.NEGATIVE_INFINITY;
    for (let v = 0; v < V; v++) mx = Math.max(mx, logits[base + v] * inv);
    let sum = 0;
    let pz = 0;
    for (let v = 0; v < V; v++) {
      const z = logits[base + v] * inv;
      const e = Math.exp(z - mx);
      sum += e;
      pz += e * z;
    }
    const l = mx + Math.log(sum);
    lse[n] = l;
    const t = n % T;
    if (t + 1 < T) {
      const y = Math.min(tokens[n + 1], V - 1);
      if (mask[n + 1] !== 0) {
        logp[n + 1] = logits[base + y] * inv - l;
        entropy[n + 1] = l - pz / sum;
      }
    }
  }
  return { logp, entropy, lse };
}

/** dlogits for L = −Σ w·logp: w·(softmax(z) − onehot(y)) / temperature on every row with a target. */
export function logprobBackwardCpu(
  logits: Float32Array,
  tokens: Uint32Array,
  weights: Float32Array,
  lse: Float32Array,
  B: number,
  T: number,
  V: number,
  temperature = 1,
): Float32Array {
  const dlogits = new Float32Array(B * T * V);
  const inv = 1 / temperature;
  for (let n = 0; n < B * T; n++) {
    if ((n % T) + 1 >= T) continue;
    const w = weights[n + 1];
    for (let v = 0; v < V; v++) {
      const p = Math.exp(logits[n * V + v] * inv - lse[n]);
      dlogits[n * V + v] = w * (p - (v === tokens[n + 1] ? 1 : 0)) * inv;
    }
  }
  return dlogits;
}
