/**
 * Seeded pseudo-random numbers (mulberry32): deterministic across browser and Node, so a seed in a URL or a
 * CLI flag reproduces the same tasks, samples and initialisations everywhere.
 */
export function mulberry32(seed: number): () => number {
  // the state lives in a typed array: a closure variable above 2^30 would be boxed anew on every call
  const s = new Uint32Array([seed >>> 0]);
  return () => {
    s[0] += 0x6d2b79f5;
    let t = s[0];
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fills an array with uniform values in [lo, hi) from a seeded generator. */
export function uniformF32(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  const rand = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * rand();
  return out;
}
