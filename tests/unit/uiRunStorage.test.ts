import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type PruneCandidate, prunePlan } from '../../src/ui/train/runStorage';

const file = (
  id: string,
  path: string,
  size: number,
  step: number,
  kind: 0 | 1,
  at: number,
): PruneCandidate => ({
  id,
  path,
  size,
  step,
  kind,
  at,
});

describe('Train tab storage: pruning to the budget', () => {
  const files = [
    file('b', 'traces/step_000001.jsonl', 30, 1, 1, 2),
    file('a', 'traces/step_000002.jsonl', 30, 2, 1, 1),
    file('a', 'traces/step_000001.jsonl', 30, 1, 1, 1),
    file('a', 'checkpoints/step_000002', 50, 2, 0, 1),
    file('b', 'checkpoints/step_000001', 50, 1, 0, 2),
  ];

  it('removes nothing within the budget', () => {
    expect(prunePlan(files, 190, 190)).toEqual([]);
  });

  it('older checkpoints first, then kept traces, oldest step then oldest run first, until within the budget', () => {
    const order = (total: number, budget: number) =>
      prunePlan(files, total, budget).map((f) => `${f.id}:${f.path}`);
    expect(order(190, 180)).toEqual(['b:checkpoints/step_000001']);
    expect(order(190, 100)).toEqual(['b:checkpoints/step_000001', 'a:checkpoints/step_000002']);
    expect(order(190, 60)).toEqual([
      'b:checkpoints/step_000001',
      'a:checkpoints/step_000002',
      'a:traces/step_000001.jsonl',
    ]);
    // every candidate goes when the budget cannot be met, and no more
    expect(order(1000, 0)).toHaveLength(files.length);
  });

  it('the store keeps no file access of its own: storage and the worker client are separate modules', () => {
    const store = readFileSync(new URL('../../src/ui/train/trainStore.ts', import.meta.url), 'utf8');
    expect(store).not.toMatch(/new Worker\(|parseFromTrainWorker|runStorage\(|localStorage\./);
    expect(store).toMatch(/from '\.\/runStorage'/);
    expect(store).toMatch(/from '\.\/trainWorkerClient'/);
  });
});
