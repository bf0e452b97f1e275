/**
 * Seeded pseudo-random numbers (mulberry32): deterministic across browser and Node, so a seed in a URL or a
 * CLI flag reproduces the same tasks, samples and initialisations everywhere.
 */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
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
