/**
 * Batch trimming as Agent Lightning's trainer does it before a PPO update (agentlightning/verl/trainer.py,
 * `_train_step`): keep a multiple of the mini-batch (ppo_mini_batch_size × rollout.n) rows, optionally at most
 * `max_ppo_update_times` mini-batches; drop rows of zero-variance uid groups first (every reward of the group
 * allclose to the first — they carry no GRPO signal), then random rows. Upstream shuffles with Python's global
 * `random`; here a seeded generator makes the choice reproducible.
 */
import { mulberry32 } from '../random';
import { allclose } from './rolloutLevel';

export interface TrimOptions {
  /** ppo_mini_batch_size × rollout.n */
  miniBatchSize: number;
  maxPpoUpdateTimes?: number | null;
  seed: number;
}

export interface TrimResult {
  /** kept row indices, ascending */
  keep: Int32Array;
  counters: {
    'training/n_sample_dropped/same_reward': number;
    'training/n_sample_dropped/random': number;
    'training/n_sample_trained': number;
  };
}

function shuffle(a: number[], rand: () => number) {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/** Rows whose uid group has all rewards allclose to its first (upstream `_same_reward_uid_indices`). */
export function sameRewardRows(uids: ArrayLike<string>, rewards: ArrayLike<number>): number[] {
  const byUid = new Map<string, number[]>();
  for (let i = 0; i < uids.length; i++) {
    const l = byUid.get(uids[i]);
    if (l) l.push(i);
    else byUid.set(uids[i], [i]);
  }
  const out: number[] = [];
  for (const idx of byUid.values()) {
    const first = rewards[idx[0]];
    if (idx.every((i) => allclose(rewards[i], first))) out.push(...idx);
  }
  return out;
}

export function trimBatch(
  uids: ArrayLike<string>,
  rewards: ArrayLike<number>,
  opts: TrimOptions,
): TrimResult {
  const n = uids.length;
  if (rewards.length !== n) throw new Error(`rewards has ${rewards.length} values but there are ${n} rows`);
  if (!Number.isInteger(opts.miniBatchSize) || opts.miniBatchSize <= 0)
    throw new Error(`miniBatchSize must be a positive integer, got ${opts.miniBatchSize}`);
  let remain = Math.floor(n / opts.miniBatchSize) * opts.miniBatchSize;
  if (opts.maxPpoUpdateTimes != null) remain = Math.min(remain, opts.miniBatchSize * opts.maxPpoUpdateTimes);
  const toDrop = n - remain;
  const rand = mulberry32(opts.seed);
  const drop = new Uint8Array(n);
  let sameDropped = 0;
  let randomDropped = 0;
  if (toDrop > 0) {
    const same = sameRewardRows(uids, rewards);
    shuffle(same, rand);
    for (const i of same.slice(0, toDrop)) drop[i] = 1;
    sameDropped = Math.min(toDrop, same.length);
    const rest = toDrop - sameDropped;
    if (rest > 0) {
      const cand: number[] = [];
      for (let i = 0; i < n; i++) if (!drop[i]) cand.push(i);
      shuffle(cand, rand);
      for (const i of cand.slice(0, rest)) drop[i] = 1;
      randomDropped = Math.min(rest, cand.length);
    }
  }
  const keep: number[] = [];
  for (let i = 0; i < n; i++) if (!drop[i]) keep.push(i);
  return {
    keep: Int32Array.from(keep),
    counters: {
      'training/n_sample_dropped/same_reward': sameDropped,
      'training/n_sample_dropped/random': randomDropped,
      'training/n_sample_trained': keep.length,
    },
  };
}
