import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { command as sft } from '../../../src/cli/commands/sft';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { runSft } from '../../../src/train/sft';

const dir = mkdtempSync(join(tmpdir(), 'sft-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tok = loadTokenizer('policy');
const model = { vocabSize: 1024, contextLength: 1024, layers: 1, width: 32, heads: 2, seed: 4 };

describe('SFT warm start', () => {
  it('lowers the loss on the expert rows and is bit-reproducible from its seed', async () => {
    const opts = {
      harness: 'instruction-short' as const,
      seed: 2,
      tasks: 16,
      steps: 6,
      batchRows: 8,
      lr: 3e-3,
    };
    const a = new CpuPolicy(model);
    const ra = await runSft(a, tok, opts);
    const b = new CpuPolicy(model);
    await runSft(b, tok, opts);
    expect(ra.rows).toBe(16);
    expect(ra.failedExperts).toBe(0);
    expect(ra.losses[ra.losses.length - 1]).toBeLessThan(ra.losses[0]);
    expect(Buffer.from(a.params.buffer).equals(Buffer.from(b.params.buffer))).toBe(true);
  });

  it('lab sft writes a policy checkpoint with its recipe, the same bytes for the same seed', async () => {
    const args = (out: string) => [
      '--harness',
      'instruction-short',
      '--tasks',
      '8',
      '--steps',
      '3',
      '--batch-rows',
      '4',
      '--out',
      out,
    ];
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await sft.run(args(join(dir, 'a.safetensors')))).toBe(0);
      expect(await sft.run(args(join(dir, 'b.safetensors')))).toBe(0);
    } finally {
      log.mockRestore();
    }
    const a = readFileSync(join(dir, 'a.safetensors'));
    expect(a.equals(readFileSync(join(dir, 'b.safetensors')))).toBe(true);
    const ck = decodeCheckpoint(new Uint8Array(a));
    expect(JSON.parse(ck.metadata['harness_lab.sft'])).toMatchObject({
      harness: 'instruction-short',
      steps: 3,
      seed: 1,
    });
    expect(ck.config).toMatchObject({ layers: 2, width: 64, heads: 4, contextLength: 1024 });
    await expect(sft.run(['--harness', 'nope', '--out', 'x'])).rejects.toThrow('--harness must be one of');
    await expect(sft.run(['--harness', 'coding'])).rejects.toThrow('--out is required');
  });

  it('a --save-every snapshot is the checkpoint of the shorter run; --init continues from a checkpoint', async () => {
    const base = ['--harness', 'instruction-short', '--tasks', '8', '--batch-rows', '4'];
    const constant = ['--schedule', 'constant', '--warmup', '1'];
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const long = join(dir, 'long.safetensors');
      expect(await sft.run([...base, ...constant, '--steps', '3', '--save-every', '2', '--out', long])).toBe(
        0,
      );
      const short = join(dir, 'short.safetensors');
      expect(await sft.run([...base, ...constant, '--steps', '2', '--out', short])).toBe(0);
      const snap = readFileSync(join(dir, 'long.step2.safetensors'));
      expect(snap.equals(readFileSync(short))).toBe(true);
      expect(snap.equals(readFileSync(long))).toBe(false);
      const cont = join(dir, 'cont.safetensors');
      expect(await sft.run([...base, '--steps', '1', '--init', short, '--out', cont])).toBe(0);
      const a = decodeCheckpoint(new Uint8Array(readFileSync(short)));
      const c = decodeCheckpoint(new Uint8Array(readFileSync(cont)));
      expect(c.config).toEqual(a.config);
      expect(Buffer.from(c.params.buffer).equals(Buffer.from(a.params.buffer))).toBe(false);
      const rec = JSON.parse(c.metadata['harness_lab.sft']);
      expect(rec.init).toEqual({ file: short, sft: JSON.parse(a.metadata['harness_lab.sft']) });
      expect(rec).toMatchObject({ steps: 1, preset: 'tiny' });
    } finally {
      log.mockRestore();
    }
    await expect(
      sft.run([...base, '--init', join(dir, 'short.safetensors'), '--model-preset', 'small', '--out', 'x']),
    ).rejects.toThrow('--init takes the shape from its checkpoint');
    await expect(sft.run([...base, '--init', join(dir, 'missing'), '--out', 'x'])).rejects.toThrow(
      '--init: cannot read',
    );
    await expect(sft.run([...base, '--schedule', 'linear', '--out', 'x'])).rejects.toThrow(
      '--schedule must be cosine or constant',
    );
  });

  it('the shipped checkpoints load and were made by lab sft for their harness', () => {
    for (const h of ['instruction-short', 'instruction', 'coding', 'search']) {
      const ck = decodeCheckpoint(
        new Uint8Array(
          readFileSync(new URL(`../../../public/checkpoints/${h}.safetensors`, import.meta.url)),
        ),
      );
      expect(JSON.parse(ck.metadata['harness_lab.sft']).harness).toBe(h);
      expect(ck.config.contextLength).toBe(1024);
    }
  });
});
