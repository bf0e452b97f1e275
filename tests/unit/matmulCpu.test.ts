import { describe, expect, it } from 'vitest';
import { matmulCpu } from '../../src/engine/cpu/matmul';

describe('matmulCpu', () => {
  it('multiplies a known 2×3 by 3×2', () => {
    const a = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const b = Float32Array.from([7, 8, 9, 10, 11, 12]);
    expect([...matmulCpu(a, b, 2, 2, 3)]).toEqual([58, 64, 139, 154]);
  });
  it('rejects mismatched shapes with the shape in the message', () => {
    expect(() => matmulCpu(new Float32Array(5), new Float32Array(6), 2, 2, 3)).toThrow(
      /A has 5 values, expected M\*K = 6/,
    );
  });
});
