import { describe, expect, it } from 'vitest';
import { sameRewardRows, trimBatch } from '../../../src/core/algos/trim';

const uids = ['a', 'a', 'b', 'b', 'c', 'c', 'd'];
const rewards = [1, 1, 0, 1, 0.5, 0.5, 0];

describe('batch trimming', () => {
  it('finds zero-variance groups (singletons included)', () => {
    expect(sameRewardRows(uids, rewards)).toEqual([0, 1, 4, 5, 6]);
  });
  it('floors to a multiple of the mini-batch, dropping same-reward rows first', () => {
    const r = trimBatch(uids, rewards, { miniBatchSize: 2, seed: 1 });
    expect(r.keep.length).toBe(6);
    expect(r.counters).toEqual({
      'training/n_sample_dropped/same_reward': 1,
      'training/n_sample_dropped/random': 0,
      'training/n_sample_trained': 6,
    });
    expect(Array.from(r.keep)).toContain(2);
    expect(Array.from(r.keep)).toContain(3);
  });
  it('caps at max_ppo_update_times mini-batches and drops randomly once same-reward rows run out', () => {
    const r = trimBatch(uids, rewards, { miniBatchSize: 1, maxPpoUpdateTimes: 1, seed: 3 });
    expect(r.counters['training/n_sample_dropped/same_reward']).toBe(5);
    expect(r.counters['training/n_sample_dropped/random']).toBe(1);
    expect(r.keep.length).toBe(1);
    expect([2, 3]).toContain(r.keep[0]);
  });
  it('is reproducible for a seed and varies with it', () => {
    const many = Array.from({ length: 40 }, (_, i) => `g${i >> 1}`);
    const rw = many.map((_, i) => i % 3);
    const a = trimBatch(many, rw, { miniBatchSize: 7, seed: 5 });
    const b = trimBatch(many, rw, { miniBatchSize: 7, seed: 5 });
    expect(Array.from(a.keep)).toEqual(Array.from(b.keep));
    const seeds = new Set(
      [1, 2, 3, 4, 6].map((s) => trimBatch(many, rw, { miniBatchSize: 7, seed: s }).keep.join()),
    );
    expect(seeds.size).toBeGreaterThan(1);
  });
  it('keeps everything when already a multiple; rejects bad sizes', () => {
    expect(trimBatch(uids.slice(0, 6), rewards.slice(0, 6), { miniBatchSize: 3, seed: 0 }).keep.length).toBe(
      6,
    );
    expect(() => trimBatch(uids, rewards, { miniBatchSize: 0, seed: 0 })).toThrow(/positive integer/);
    expect(() => trimBatch(uids, [1], { miniBatchSize: 1, seed: 0 })).toThrow(/1 values/);
  });
});
