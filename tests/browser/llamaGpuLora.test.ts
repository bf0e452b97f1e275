import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuContext } from '../../src/engine/gpu/device';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { readAdapter } from '../../src/engine/llama/peftAdapter';
import { readSafetensors } from '../../src/engine/llama/safetensors';
import type { Batch } from '../../src/engine/model';
import { mapReader } from '../../src/engine/onnx/hfFolder';
import { createPolicyEngine } from '../../src/engine/policy';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';
import { context, maxAbsDiff } from './gpuContext';

// LoRA on the WebGPU Llama-family engine in Chromium: PEFT's adapter for the tiny qwen2 folder (q, v, down; r 2,
// lora_alpha 16, so s = 8; qkv biases frozen) against PyTorch + PEFT's gradients and AdamW step
// (tests/models/lora/qwen2, python/tiny_models/lora_refs.py).
const urls = import.meta.glob(['/tests/models/qwen2/*', '/tests/models/lora/qwen2/*'], {
  query: '?url',
  import: 'default',
  eager: true,
}) as Record<string, string>;

async function files(prefix: string): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const [path, url] of Object.entries(urls))
    if (path.startsWith(prefix) && !path.slice(prefix.length).includes('/'))
      out.set(path.slice(prefix.length), new Uint8Array(await (await fetch(url)).arrayBuffer()));
  return out;
}

interface LoraReference {
  batch: { ids: number[][]; mask: number[][]; weights: number[][] };
  logprobs: number[][];
  grad_norm: number;
  adamw: { lr: number; betas: [number, number]; eps: number; weight_decay: number; max_grad_norm: number };
}

const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await context();
});
afterAll(() => ctx?.destroy());

describe('LoRA on the Llama-family WebGPU engine (Chromium WebGPU) vs PyTorch + PEFT', () => {
  it('qwen2: log-probs, every adapter gradient (1e-4 relative) and one AdamW step (1e-6) match PEFT', async () => {
    const folder = await readLlamaFolder(mapReader(await files('/tests/models/qwen2/')));
    const lora = await files('/tests/models/lora/qwen2/');
    const adapter = await readAdapter(mapReader(lora), folder.config);
    const ref = JSON.parse(new TextDecoder().decode(lora.get('reference.json'))) as LoraReference;
    const { engine } = await createPolicyEngine({
      llama: folder,
      context: ctx,
      backend: 'webgpu',
      lora: { config: adapter.config, params: adapter.params },
      optimizer: {
        lr: ref.adamw.lr,
        beta1: ref.adamw.betas[0],
        beta2: ref.adamw.betas[1],
        eps: ref.adamw.eps,
        weightDecay: ref.adamw.weight_decay,
        maxGradNorm: ref.adamw.max_grad_norm,
      },
    });
    expect(engine).toBeInstanceOf(LlamaGpuPolicy);
    const gpu = engine as LlamaGpuPolicy;
    const batch: Batch = {
      tokens: Uint32Array.from(ref.batch.ids.flat()),
      mask: Float32Array.from(ref.batch.mask.flat()),
      batchSize: ref.batch.ids.length,
      seqLen: ref.batch.ids[0].length,
    };
    const weights = Float32Array.from(ref.batch.weights.flat());
    expect(maxAbsDiff((await gpu.logProbs(batch)).logProbs, ref.logprobs.flat())).toBeLessThan(1e-4);
    const g = await gpu.computeGrads(batch, weights);
    const grads = readSafetensors(lora.get('grads.safetensors') as Uint8Array, 'grads.safetensors');
    const step = readSafetensors(lora.get('step.safetensors') as Uint8Array, 'step.safetensors');
    for (const t of adapter.layout.tensors) {
      const w = grads.get(t.name)?.data as Float32Array;
      const got = g.subarray(t.offset, t.offset + t.size);
      expect(norm(Float32Array.from(got, (x, i) => x - w[i])) / norm(w), t.name).toBeLessThan(1e-4);
    }
    const s = await gpu.trainStep(batch, weights);
    expect(Math.abs(s.gradNorm - ref.grad_norm)).toBeLessThan(1e-4 * ref.grad_norm);
    const after = await gpu.getParams();
    for (const t of adapter.layout.tensors)
      expect(
        maxAbsDiff(after.subarray(t.offset, t.offset + t.size), step.get(t.name)?.data as Float32Array),
        t.name,
      ).toBeLessThan(1e-6);
    gpu.dispose();
  });
});
