import { afterEach, describe, expect, it } from 'vitest';
import { shareTypedArrays } from '../../src/ui/lab/shareArrays';

const g = globalThis as { crossOriginIsolated?: boolean };
afterEach(() => {
  delete g.crossOriginIsolated;
});

interface Call {
  promptTokenIds: Int32Array;
  responseLogProbs?: Float32Array;
  mask?: Uint8Array;
}

function sample(): { rollouts: { id: string; calls: Call[]; metadata?: { n: number } }[] } {
  const ids = Int32Array.from([5, -1, 151_642, 7]);
  return {
    rollouts: [
      { id: 'a', calls: [{ promptTokenIds: ids, responseLogProbs: Float32Array.from([-0.5, -1e-8]) }] },
      { id: 'b', calls: [{ promptTokenIds: ids, mask: Uint8Array.from([1, 0, 1]) }], metadata: { n: 1 } },
    ],
  };
}

describe('shared memory for the lab worker’s posts', () => {
  it('moves every typed array onto SharedArrayBuffers with its type and values, one array staying one', () => {
    g.crossOriginIsolated = true;
    const v = sample();
    const bytes = shareTypedArrays(v);
    expect(bytes).toBe(16 + 8 + 3);
    const [a, b] = v.rollouts;
    const ids = a.calls[0].promptTokenIds;
    expect(ids).toBeInstanceOf(Int32Array);
    expect(ids.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(Array.from(ids)).toEqual([5, -1, 151_642, 7]);
    expect(b.calls[0].promptTokenIds).toBe(ids);
    expect(a.calls[0].responseLogProbs).toBeInstanceOf(Float32Array);
    expect(Array.from(a.calls[0].responseLogProbs ?? [])).toEqual(
      Array.from(Float32Array.from([-0.5, -1e-8])),
    );
    expect(Array.from(b.calls[0].mask ?? [])).toEqual([1, 0, 1]);
    expect(b.metadata).toEqual({ n: 1 });
    // a second pass finds nothing left to move
    expect(shareTypedArrays(v)).toBe(0);
  });

  it('leaves everything in place where shared memory cannot be posted (not cross-origin isolated)', () => {
    const v = sample();
    const ids = v.rollouts[0].calls[0].promptTokenIds;
    expect(shareTypedArrays(v)).toBe(0);
    expect(v.rollouts[0].calls[0].promptTokenIds).toBe(ids);
    expect(ids.buffer).toBeInstanceOf(ArrayBuffer);
  });
});
