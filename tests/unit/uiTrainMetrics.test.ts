import { describe, expect, it } from 'vitest';
import { mergeReadMetrics } from '../../src/ui/train/trainStore';

const m = (step: number, score: number) => ({ step, data: { 'critic/score/mean': score } });

describe("a run's metrics read back while it reports steps", () => {
  it('keeps a step reported during the read, and drops what a rollback removed from the file', () => {
    // before the read: steps 1–4 (step 4 came after the checkpoint at 3, which a resume rolls back)
    const before = [m(1, 0.1), m(2, 0.2), m(3, 0.3), m(4, 0.9)];
    // during the read the resumed run reports its own step 4 (a new entry), and step 5
    const now = [...before.slice(0, 3), m(4, 0.4), m(5, 0.5)];
    // the file as read: rolled back to step 3
    const read = [m(1, 0.1), m(2, 0.2), m(3, 0.3)];
    expect(mergeReadMetrics(before, now, read)).toEqual([
      m(1, 0.1),
      m(2, 0.2),
      m(3, 0.3),
      m(4, 0.4),
      m(5, 0.5),
    ]);
    // nothing reported during the read: the file is the truth (the stale step 4 goes)
    expect(mergeReadMetrics(before, before, read)).toEqual(read);
    // a step the file already has and that was also reported: the report's values win, the file's others stay
    const both = mergeReadMetrics([], [{ step: 2, data: { a: 1 } }], [{ step: 2, data: { a: 0, b: 2 } }]);
    expect(both).toEqual([{ step: 2, data: { a: 1, b: 2 } }]);
  });
});
