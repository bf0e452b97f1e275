import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { generatedModule, generatedPath, KERNELS, variantText } from '../tools/build-wasm.mjs';

describe('CPU WebAssembly kernels', () => {
  for (const name of KERNELS as string[])
    it(`src/engine/cpu/wasm/${name}.wasm.ts is what build-wasm.mjs assembles from ${name}.wat`, async () => {
      const want = await generatedModule(name);
      expect(readFileSync(generatedPath(name), 'utf8')).toBe(want);
    });

  it('spells MADD as a separate multiply and add, or as relaxed_madd', () => {
    const src = '(local.set $s (MADD (local.get $x) (local.get $b) (local.get $s)))';
    expect(variantText(src, 'simd')).toBe(
      '(local.set $s (f32x4.add (local.get $s) (f32x4.mul (local.get $x) (local.get $b))))',
    );
    expect(variantText(src, 'relaxed')).toBe(
      '(local.set $s (f32x4.relaxed_madd (local.get $x) (local.get $b) (local.get $s)))',
    );
    expect(() => variantText(src, 'avx')).toThrow("unknown variant 'avx'");
  });
});
