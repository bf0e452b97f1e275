import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isRecord, list, num, numOrNull, oneOf, record, str } from '../../src/core/wire';
import { parseTrainEvent } from '../../src/train/events';
import { PHASE_NAMES } from '../../src/train/step';

describe('the wire-validation kit', () => {
  it('reads fields and names the one that is wrong', () => {
    const o = { s: 'x', n: 2, z: null, e: 'b', l: [1], bad: Number.NaN };
    expect(isRecord(o)).toBe(true);
    expect(isRecord([])).toBe(false);
    expect(isRecord(null)).toBe(false);
    expect(record(o, 'msg')).toBe(o);
    expect(() => record([1], 'msg')).toThrow('msg must be an object');
    expect(str(o, 's', 'msg')).toBe('x');
    expect(() => str(o, 'n', 'msg')).toThrow('msg.n must be a string');
    expect(num(o, 'n', 'msg')).toBe(2);
    expect(() => num(o, 'bad', 'msg')).toThrow('msg.bad must be a finite number');
    expect(numOrNull(o, 'z', 'msg')).toBeNull();
    expect(oneOf(o, 'e', 'msg', ['a', 'b'])).toBe('b');
    expect(() => oneOf(o, 's', 'msg', ['a', 'b'])).toThrow('msg.s must be one of a, b, got "x"');
    expect(list(o, 'l', 'msg')).toEqual([1]);
    expect(() => list(o, 's', 'msg')).toThrow('msg.s must be a list');
  });

  it("parseTrainEvent accepts the step's phases only", () => {
    for (const phase of PHASE_NAMES)
      expect(parseTrainEvent({ type: 'phase', step: 1, phase, startMs: 0, endMs: 1 })).toMatchObject({
        phase,
      });
    expect(() => parseTrainEvent({ type: 'phase', step: 1, phase: 'lunch', startMs: 0, endMs: 1 })).toThrow(
      `train event 'phase'.phase must be one of ${PHASE_NAMES.join(', ')}, got "lunch"`,
    );
    expect(() => parseTrainEvent({ type: 'log', level: 'debug', message: 'x' })).toThrow(
      "train event 'log'.level must be one of info, warn",
    );
    expect(() =>
      parseTrainEvent({
        type: 'rollout',
        step: 1,
        split: 'train',
        rolloutId: 'r',
        dataId: 'd',
        state: 'succeeded',
        reward: 1,
        startMs: 0,
        endMs: 1,
        calls: [7],
      }),
    ).toThrow("train event 'rollout'.calls[0] must be an object");
  });

  it('no module in src/ keeps a private copy of the object check', () => {
    const root = join(import.meta.dirname, '../../src');
    const copies: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name) && p !== join(root, 'core/wire.ts')) {
          const text = readFileSync(p, 'utf8');
          if (/(function \w+|const \w+ =)\s*\(v: unknown\): v is Record<string, unknown>/.test(text))
            copies.push(p.slice(root.length + 1));
        }
      }
    };
    walk(root);
    expect(copies).toEqual([]);
  });
});
