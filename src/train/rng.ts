/**
 * The run's randomness is stateless: every draw comes from a generator seeded by (run seed, purpose, step, …)
 * (task order per epoch, trimming, mini-batch shuffles; per-call sampling seeds are derived from the rollout
 * id in the engine). So the "RNG state" a checkpoint needs is the run seed and the counters it already
 * stores, and resuming draws exactly what an uninterrupted run would have drawn.
 */
import { mulberry32 } from '../core/random';

/** FNV-1a over the parts' text: a 32-bit seed for one purpose. */
export function hashSeed(seed: number, ...parts: (string | number)[]): number {
  const s = [seed, ...parts].join(':');
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A seeded permutation of 0..n-1 (Fisher–Yates). */
export function permutation(n: number, seed: number): number[] {
  const rand = mulberry32(seed);
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  return a;
}
