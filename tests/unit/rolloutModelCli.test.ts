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

  it("--engine transformers.js samples the folder in transformers.js; each call carries our engine's log-probs (the gap)", async () => {
    const out = join(dir, 'tjs.jsonl');
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((s: string) => void lines.push(s));
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    const argv = [
      '--harness',
      'instruction-short',
      '--engine',
      'transformers.js',
      '--n',
      '2',
      '--workers',
      '1',
    ];
    const code = await command.run([
      ...argv,
      '--model',
      join(models, 'qwen2'),
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
    expect(lines.join('\n')).toMatch(
      /transformers\.js vs our CPU engine: max \|Δ log-prob\| \S+, mean \S+ over \d+ tokens \(2 \/ 2 calls scored\)/,
    );
    const parsed = parseJsonlTrace(readFileSync(out, 'utf8'));
    expect(parsed.issues).toEqual([]);
    const { engine } = await loadLlamaModel(join(models, 'qwen2'));
    let tokens = 0;
    for (const r of parsed.rollouts) {
      const c = r.calls[0];
      expect(c.engine?.model).toMatch(/^transformers\.js\/qwen2\//);
      const prompt = Array.from(c.promptTokenIds ?? []);
      const resp = Array.from(c.responseTokenIds ?? []);
      const ids = [...prompt, ...resp];
      const lp = await engine.logProbs({
        tokens: Uint32Array.from(ids),
        mask: new Float32Array(ids.length).fill(1),
        batchSize: 1,
        seqLen: ids.length,
      });
      expect(c.trainerLogProbs?.length).toBe(resp.length);
      resp.forEach((_, i) => {
        const ours = lp.logProbs[prompt.length + i];
        expect(c.trainerLogProbs?.[i]).toBeCloseTo(ours, 5);
        expect(Math.abs(ours - (c.responseLogProbs?.[i] ?? Number.NaN))).toBeLessThan(1e-4);
        tokens++;
      });
    }
    expect(tokens).toBeGreaterThan(2);
    await expect(command.run([...argv, '--out', join(dir, 'y.jsonl')])).rejects.toThrow(
      '--engine transformers.js needs --model DIR',
    );
  });
});
