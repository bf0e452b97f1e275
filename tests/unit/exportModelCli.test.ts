import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command } from '../../src/cli/commands/export-model';
import { encodeCheckpoint, saveCheckpointFile } from '../../src/engine/checkpoint';
import { initParams, resolveConfig } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { readModelFolder } from '../../src/engine/onnx/hfFolder';

const dir = mkdtempSync(join(tmpdir(), 'export-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lab export-model', () => {
  it('writes a loadable HF folder from a checkpoint, with its config and precision', async () => {
    const cfg = resolveConfig({
      vocabSize: 1024,
      contextLength: 32,
      layers: 1,
      width: 16,
      heads: 2,
      seed: 3,
    });
    const ck = join(dir, 'p.safetensors');
    await saveCheckpointFile(ck, encodeCheckpoint(cfg, initParams(cfg)));
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const code = await command.run(['--checkpoint', ck, '--precision', 'f16', '--out', join(dir, 'm')]);
    const said = log.mock.calls.map((c) => String(c[0])).join('\n');
    log.mockRestore();
    expect(code).toBe(0);
    expect(said).toMatch(/the weights of .*p\.safetensors/);
    expect(said).not.toMatch(/RANDOM/);
    const m = await readModelFolder(await nodeFolderReader(join(dir, 'm')));
    expect(m.weightPrecision).toBe('f16');
    expect(m.config).toMatchObject({ n_positions: 32, n_layer: 1, n_embd: 16, n_head: 2, vocab_size: 1024 });
  });

  it('says so when it exports random weights (no --checkpoint)', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const code = await command.run([
      '--out',
      join(dir, 'r'),
      '--context',
      '16',
      '--layers',
      '1',
      '--width',
      '16',
      '--heads',
      '2',
    ]);
    const said = log.mock.calls.map((c) => String(c[0])).join('\n');
    log.mockRestore();
    expect(code).toBe(0);
    expect(said).toMatch(
      /RANDOM weights \(the seeded initialisation, seed 1; --checkpoint FILE exports trained ones\)/,
    );
  });

  it('refuses bad flags with a usage error naming them', async () => {
    await expect(command.run([])).rejects.toThrow(UsageError);
    await expect(command.run(['--out', join(dir, 'x'), '--precision', 'bf16'])).rejects.toThrow(
      "--precision must be one of f32, f16, int8, got 'bf16'",
    );
    await expect(command.run(['--out', join(dir, 'm')])).rejects.toThrow('exists and is not empty');
    await expect(command.run(['--out', join(dir, 'y'), '--heads', '3'])).rejects.toThrow(
      'not divisible by heads 3',
    );
  });
});
