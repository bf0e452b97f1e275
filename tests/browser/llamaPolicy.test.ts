import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuContext } from '../../src/engine/gpu/device';
import { type LlamaFolder, readLlamaFolder } from '../../src/engine/llama/hfFolder';
import type { Batch } from '../../src/engine/model';
import { mapReader } from '../../src/engine/onnx/hfFolder';
import { createPolicyEngine } from '../../src/engine/policy';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';
import { context, maxAbsDiff } from './gpuContext';

// The WebGPU Llama-family engine in Chromium on the committed tiny folders (python/tiny_models/): log-probs
// against transformers' references, gradients and sampling against the CPU engine in the same page.
const urls = import.meta.glob('/tests/models/{qwen3,qwen2}/*', {
  query: '?url',
  import: 'default',
  eager: true,
}) as Record<string, string>;

interface Reference {
  sequences: { ids: number[]; logprobs: number[]; entropy: number[] }[];
  left_padded: { ids: number[][]; mask: number[][]; logprobs: number[][]; entropy: number[][] };
}

async function load(name: string): Promise<{ folder: LlamaFolder; ref: Reference }> {
  const files = new Map<string, Uint8Array>();
  const prefix = `/tests/models/${name}/`;
  for (const [path, url] of Object.entries(urls))
    if (path.startsWith(prefix))
      files.set(path.slice(prefix.length), new Uint8Array(await (await fetch(url)).arrayBuffer()));
  const ref = JSON.parse(new TextDecoder().decode(files.get('reference.json'))) as Reference;
  return { folder: await readLlamaFolder(mapReader(files)), ref };
}

const row = (ids: number[]): Batch => ({
  tokens: Uint32Array.from(ids),
  mask: new Float32Array(ids.length).fill(1),
  batchSize: 1,
  seqLen: ids.length,
});

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await context();
});
afterAll(() => ctx?.destroy());

describe('Llama-family WebGPU engine (Chromium WebGPU) vs transformers and the CPU engine', () => {
  for (const name of ['qwen3', 'qwen2']) {
    it(`${name}: log-probs and entropies (single rows and a left-padded batch) match transformers to 1e-4`, async () => {
      const { folder, ref } = await load(name);
      const { engine } = await createPolicyEngine({ llama: folder, context: ctx, backend: 'webgpu' });
      expect(engine).toBeInstanceOf(LlamaGpuPolicy);
      for (const s of ref.sequences) {
        const r = await engine.logProbs(row(s.ids));
        expect(maxAbsDiff(r.logProbs, s.logprobs)).toBeLessThan(1e-4);
        expect(maxAbsDiff(r.entropy, s.entropy)).toBeLessThan(1e-4);
      }
      const lp = ref.left_padded;
      const r = await engine.logProbs({
        tokens: Uint32Array.from(lp.ids.flat()),
        mask: Float32Array.from(lp.mask.flat()),
        batchSize: lp.ids.length,
        seqLen: lp.ids[0].length,
      });
      expect(maxAbsDiff(r.logProbs, lp.logprobs.flat())).toBeLessThan(1e-4);
      engine.dispose();
    });
  }

  it('qwen3: the gradient of −Σ w·logp and greedy sampling match the CPU engine', async () => {
    const { folder, ref } = await load('qwen3');
    const gpu = new LlamaGpuPolicy(ctx, folder.config, folder.params);
    const cpu = new LlamaCpuPolicy(folder.config, folder.params);
    const ids = ref.sequences[0].ids;
    const w = Float32Array.from(ids, (_, t) => (t === 0 ? 0 : 1 / (1 + t)));
    cpu.computeGrads(row(ids), w);
    let scale = 0;
    for (const g of cpu.grads) scale = Math.max(scale, Math.abs(g));
    expect(scale).toBeGreaterThan(1e-3);
    expect(maxAbsDiff(await gpu.computeGrads(row(ids), w), cpu.grads)).toBeLessThan(
      1e-4 * Math.max(1, scale),
    );
    const req = { promptIds: ref.sequences[2].ids, temperature: 0, topP: 1, maxTokens: 10, seed: 3 };
    const c = await cpu.sample(req);
    const g = await gpu.sample(req);
    expect(g.tokenIds).toEqual(c.tokenIds);
    expect(maxAbsDiff(g.logProbs, c.logProbs)).toBeLessThan(1e-4);
    gpu.dispose();
  });
});
