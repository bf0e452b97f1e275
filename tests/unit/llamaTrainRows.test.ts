import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import type { GpuContext } from '../../src/engine/gpu/device';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';
import type { PolicyEngine } from '../../src/engine/policy/types';
import type { RowTokens } from '../../src/train/layout';
import { rowLogProbs } from '../../src/train/step';

// The trainer's rows (prompt + response, the log-probs wanted at the response only: layoutRows' `mask`, with
// the prompt as context: its `attention`) on the Llama-family engines, against transformers' log-probs of the
// whole sequences (tests/models/*/reference.json). Without the prompt as context the response tokens would
// be scored as if the row began at the response.

const models = resolve(__dirname, '../models');

interface Reference {
  sequences: { ids: number[]; logprobs: number[] }[];
}

/** Each reference sequence split after `cut(len)` prompt tokens into one trainer row. */
function rowsOf(ref: Reference, cut: (len: number) => number): RowTokens {
  const n = ref.sequences.length;
  const offsets = new Int32Array(n + 1);
  const promptOffsets = new Int32Array(n + 1);
  const prompt: number[] = [];
  const response: number[] = [];
  ref.sequences.forEach((s, i) => {
    const p = cut(s.ids.length);
    prompt.push(...s.ids.slice(0, p));
    response.push(...s.ids.slice(p));
    promptOffsets[i + 1] = prompt.length;
    offsets[i + 1] = response.length;
  });
  return {
    nRows: n,
    offsets,
    mask: new Uint8Array(response.length).fill(1),
    promptOffsets,
    promptIds: Int32Array.from(prompt),
    responseIds: Int32Array.from(response),
  };
}

let ctx: GpuContext | null = null;
beforeAll(async () => {
  ctx = await nodeGpuContext();
}, 120_000);
afterAll(() => ctx?.destroy());

describe("the trainer's rows on the Llama-family engines: the prompt is the response's context", () => {
  for (const name of ['llama', 'qwen2', 'qwen3'])
    it(`${name}: CPU and WebGPU response log-probs of prompt + response rows equal transformers' on the whole sequences`, async () => {
      const folder = await readLlamaFolder(await nodeFolderReader(join(models, name)));
      const ref: Reference = JSON.parse(readFileSync(join(models, name, 'reference.json'), 'utf8'));
      const cut = (len: number) => Math.max(1, Math.floor(len / 2));
      const src = rowsOf(ref, cut);
      const want: number[] = [];
      for (const s of ref.sequences) want.push(...s.logprobs.slice(cut(s.ids.length)));
      if (!ctx) throw new Error('no WebGPU adapter (Dawn on SwiftShader is expected here)');
      const engines: [string, PolicyEngine][] = [
        ['cpu', new LlamaCpuPolicy(folder.config, folder.params)],
        ['webgpu', new LlamaGpuPolicy(ctx, folder.config, folder.params)],
      ];
      for (const [which, engine] of engines) {
        const all = Array.from({ length: src.nRows }, (_, i) => i);
        // all rows in one right-padded micro-batch, and one row at a time
        for (const micro of [src.nRows, 1]) {
          const { logProbs } = await rowLogProbs(engine, src, all, micro, 1);
          expect(logProbs.length).toBe(want.length);
          let worst = 0;
          for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(logProbs[i] - want[i]));
          expect(worst, `${which}, micro-batch ${micro}`).toBeLessThan(1e-4);
        }
        engine.dispose();
      }
    }, 300_000);
});
