import { describe, expect, it } from 'vitest';
import { parseFromWorker, parseToWorker } from '../../src/harness/workerProtocol';

describe('harness worker messages', () => {
  it('accepts well-formed results and rejects malformed ones by field', () => {
    const done = { type: 'done', rolloutId: 'r', reward: 0.5, turns: 3, ended: 'answer' };
    expect(parseFromWorker(done)).toMatchObject({ type: 'done', rolloutId: 'r', reward: 0.5, turns: 3 });
    expect(() => parseFromWorker({ ...done, turns: Number.NaN })).toThrow(
      'done.turns must be a non-negative integer',
    );
    expect(() => parseFromWorker({ ...done, turns: 1.5 })).toThrow(
      'done.turns must be a non-negative integer',
    );
    expect(() => parseFromWorker({ ...done, reward: Number.POSITIVE_INFINITY })).toThrow(
      'done.reward must be a finite number',
    );
    expect(() => parseFromWorker({ type: 'shout' })).toThrow(/unknown type "shout"/);
    expect(() => parseFromWorker('done')).toThrow('message from worker must be an object');
    expect(() => parseToWorker({ type: 'dance' })).toThrow(/must be 'init' or 'run'/);
  });
});
