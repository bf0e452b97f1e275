import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command as trainTokenizer } from '../../src/cli/commands/train-tokenizer';
import { grid, uniformBlock } from '../../src/engine/gpu/device';

const dir = mkdtempSync(join(tmpdir(), 'tok-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lab train-tokenizer', () => {
  it('writes a loadable tokenizer of the requested size from generated text plus an input file', async () => {
    const input = join(dir, 'extra.txt');
    writeFileSync(input, 'zebra zebra zebra quokka quokka quokka '.repeat(50));
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const code = await trainTokenizer.run([
      '--vocab-size',
      '300',
      '--docs',
      '40',
      '--input',
      input,
      '--out',
      dir,
    ]);
    log.mockRestore();
    expect(code).toBe(0);
    const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
    expect(Object.keys(json.model.vocab).length + json.added_tokens.length).toBe(300);
    const tok = new Tokenizer(json, config);
    const ids = tok.encode(' zebra quokka').ids;
    expect(ids.length).toBeLessThanOrEqual(4);
    expect(tok.decode(ids)).toBe(' zebra quokka');
  });

  it('rejects bad flags with usage errors', async () => {
    await expect(trainTokenizer.run(['--vocab-size', '100'])).rejects.toThrow(UsageError);
    await expect(trainTokenizer.run(['--docs', '-1'])).rejects.toThrow(
      '--docs must be a non-negative integer',
    );
    await expect(trainTokenizer.run(['--input', join(dir, 'missing.txt'), '--out', dir])).rejects.toThrow(
      'missing.txt',
    );
    await expect(trainTokenizer.run(['--bogus'])).rejects.toThrow('unknown flag --bogus');
  });
});

describe('GPU helper arithmetic', () => {
  it('grid splits large workgroup counts under the 65,535 per-dimension limit and covers them', () => {
    expect(grid(10)).toEqual([10, 1]);
    for (const n of [65535, 65536, 200_001, 4_000_000]) {
      const [x, y] = grid(n);
      expect(x).toBeLessThanOrEqual(65535);
      expect(x * y).toBeGreaterThanOrEqual(n);
    }
  });

  it('uniformBlock packs u32 and f32 fields and pads to 16 bytes', () => {
    const b = uniformBlock([{ u: 7 }, { f: 0.5 }, { u: 2 ** 32 - 1 }, { f: -2 }, { u: 1 }]);
    expect(b.byteLength).toBe(32);
    const v = new DataView(b);
    expect(v.getUint32(0, true)).toBe(7);
    expect(v.getFloat32(4, true)).toBe(0.5);
    expect(v.getUint32(8, true)).toBe(2 ** 32 - 1);
    expect(v.getFloat32(12, true)).toBe(-2);
    expect(v.getUint32(16, true)).toBe(1);
  });
});
