import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { command } from '../../src/cli/commands/rollout';
import { loadLlamaModel } from '../../src/cli/llamaModel';
import { parseJsonlTrace } from '../../src/core/trace/io';

const models = resolve(__dirname, '../models');
const dir = mkdtempSync(join(tmpdir(), 'lab-rollout-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lab rollout --engine policy --model DIR', () => {
  for (const name of ['llama', 'qwen2', 'qwen3']) {
    it(`${name}: samples from our engine on the folder; the KV-cache log-probs equal a full forward`, async () => {
      const out = join(dir, `${name}.jsonl`);
      const log = vi.spyOn(console, 'log').mockImplementation(() => {});
      const err = vi.spyOn(console, 'error').mockImplementation(() => {});
      const code = await command.run([
        '--harness',
        'instruction-short',
        '--engine',
        'policy',
        '--model',
        join(models, name),
        '--n',
        '2',
        '--workers',
        '1',
        '--max-tokens',
        '12',
        '--seed',
        '5',
        '--out',
        out,
      ]);
      log.mockRestore();
      err.mockRestore();
      expect(code).toBe(0);
      const parsed = parseJsonlTrace(readFileSync(out, 'utf8'));
      expect(parsed.issues).toEqual([]);
      expect(parsed.rollouts.length).toBe(2);
      const { engine } = await loadLlamaModel(join(models, name));
      for (const r of parsed.rollouts) {
        expect(r.state).toBe('succeeded');
        const c = r.calls[0];
        const prompt = Array.from(c.promptTokenIds ?? []);
        const resp = Array.from(c.responseTokenIds ?? []);
        expect(prompt.slice(0, 1)).toEqual([1018]); // the folder's chat template: <|im_start|>
        expect(resp.length).toBeGreaterThan(0);
        const ids = [...prompt, ...resp];
        const lp = await engine.logProbs({
          tokens: Uint32Array.from(ids),
          mask: new Float32Array(ids.length).fill(1),
          batchSize: 1,
          seqLen: ids.length,
        });
        resp.forEach((_, i) => {
          expect(
            Math.abs(lp.logProbs[prompt.length + i] - (c.responseLogProbs?.[i] ?? Number.NaN)),
          ).toBeLessThan(1e-4);
        });
      }
    });
  }

  it('refuses --model with --checkpoint or --tokenizer, and a folder it cannot run', async () => {
    const base = ['--harness', 'instruction-short', '--engine', 'policy', '--out', join(dir, 'x.jsonl')];
    await expect(command.run([...base, '--model', models, '--checkpoint', 'c.safetensors'])).rejects.toThrow(
      /--checkpoint or --model DIR, not both/,
    );
    await expect(command.run([...base, '--model', models, '--tokenizer', 'qwen3'])).rejects.toBeInstanceOf(
      UsageError,
    );
    await expect(command.run([...base, '--model', models])).rejects.toThrow(
      /--model: .*config\.json: is missing/,
    );
  });
});
