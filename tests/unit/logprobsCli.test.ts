import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command } from '../../src/cli/commands/logprobs';

const models = resolve(__dirname, '../models');
const dir = mkdtempSync(join(tmpdir(), 'logprobs-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => {
    lines.push(a.join(' '));
  });
  try {
    return { code: await command.run(argv), out: lines.join('\n') };
  } finally {
    log.mockRestore();
  }
}

describe('lab logprobs', () => {
  for (const name of ['llama', 'llama-linear-bf16', 'qwen2', 'qwen3', 'qwen3-bf16', 'qwen3-f16']) {
    it(`${name}: --json matches the committed transformers reference to 1e-4`, async () => {
      const ref = JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));
      const input = join(dir, `${name}.json`);
      writeFileSync(input, JSON.stringify(ref.sequences.map((s: { ids: number[] }) => s.ids)));
      const { code, out } = await run([
        '--model',
        join(models, name),
        '--input',
        input,
        '--json',
        '--top-k',
        '5',
      ]);
      expect(code).toBe(0);
      const got = JSON.parse(out);
      expect(got.model_type).toBe(ref.model_type);
      ref.sequences.forEach((s: { ids: number[]; logprobs: number[]; entropy: number[] }, i: number) => {
        const g = got.sequences[i];
        expect(g.ids).toEqual(s.ids);
        for (let t = 0; t < s.ids.length; t++) {
          expect(Math.abs(g.logprobs[t] - s.logprobs[t])).toBeLessThan(1e-4);
          expect(Math.abs(g.entropy[t] - s.entropy[t])).toBeLessThan(1e-4);
        }
        expect(g.next_top_k.ids).toEqual(ref.topk[i].ids);
      });
    });
  }

  it('prints a table per sequence', async () => {
    const input = join(dir, 'short.json');
    writeFileSync(input, '[[1018, 5, 900]]');
    const { code, out } = await run(['--model', join(models, 'qwen2'), '--input', input]);
    expect(code).toBe(0);
    expect(out).toMatch(/qwen2, F32 weights/);
    const rows = out.split('\n').filter((l) => /^\s+\d+\s+\d+/.test(l));
    expect(rows.map((l) => l.trim().split(/\s+/)[1])).toEqual(['1018', '5', '900']);
    expect(rows[0]).toMatch(/-\s+-$/);
  });

  it('refuses bad input naming the file, sequence and field', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '[[1, 2], [3, 5000]]');
    await expect(run(['--model', join(models, 'qwen3'), '--input', bad])).rejects.toThrow(
      /sequence 1, position 1: 5000 is not a token id in \[0, 1024\)/,
    );
    writeFileSync(bad, '{"ids": [1]}');
    await expect(run(['--model', join(models, 'qwen3'), '--input', bad])).rejects.toThrow(
      /non-empty JSON list/,
    );
    await expect(run(['--input', bad])).rejects.toThrow(UsageError);
    await expect(run(['--model', models, '--input', bad])).rejects.toThrow(/config\.json: is missing/);
    const gpt2 = join(dir, 'gpt2');
    rmSync(gpt2, { recursive: true, force: true });
    const { mkdirSync } = await import('node:fs');
    mkdirSync(gpt2);
    writeFileSync(join(gpt2, 'config.json'), '{"model_type": "gpt2"}');
    await expect(run(['--model', gpt2, '--input', bad])).rejects.toThrow(
      /config\.json: model_type: "gpt2" is not a supported architecture/,
    );
  });
});
