import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import {
  checkLoraConfig,
  LORA_TARGETS,
  loraInit,
  loraLayout,
  trainStepMemory,
} from '../../src/engine/llama/lora';
import { llamaForwardCpu } from '../../src/engine/llama/model';
import {
  ADAPTER_CONFIG,
  ADAPTER_WEIGHTS,
  encodeAdapter,
  parseAdapterConfig,
  readAdapter,
} from '../../src/engine/llama/peftAdapter';
import { readSafetensors } from '../../src/engine/llama/safetensors';
import type { Batch } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import type { FolderReader } from '../../src/engine/onnx/hfFolder';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';

const models = resolve(__dirname, '../models');
const ADAPTERS = ['llama', 'qwen2', 'qwen3'];

interface LoraReference {
  base: string;
  versions: Record<string, string>;
  r: number;
  lora_alpha: number;
  target_modules: string[];
  batch: { ids: number[][]; mask: number[][]; weights: number[][] };
  logprobs: number[][];
  logprobs_base: number[][];
  loss: number;
  grad_norm: number;
  adamw: { lr: number; betas: [number, number]; eps: number; weight_decay: number; max_grad_norm: number };
  init: Record<string, { fan_in?: number; bound?: number; max_abs: number; std?: number }>;
}

const reference = (name: string): LoraReference =>
  JSON.parse(readFileSync(join(models, 'lora', name, 'reference.json'), 'utf8'));
const tensors = (name: string, file: string) =>
  readSafetensors(new Uint8Array(readFileSync(join(models, 'lora', name, file))), file);

function batchOf(ref: LoraReference): { batch: Batch; weights: Float32Array } {
  const B = ref.batch.ids.length;
  const T = ref.batch.ids[0].length;
  return {
    batch: {
      tokens: Uint32Array.from(ref.batch.ids.flat()),
      mask: Float32Array.from(ref.batch.mask.flat()),
      batchSize: B,
      seqLen: T,
    },
    weights: Float32Array.from(ref.batch.weights.flat()),
  };
}

/** A folder of in-memory files. */
function memoryFolder(files: Record<string, Uint8Array | string>): FolderReader {
  const enc = new TextEncoder();
  const bytes = (p: string) => {
    const f = files[p];
    if (f === undefined) throw new Error(`no file ${p}`);
    return typeof f === 'string' ? enc.encode(f) : f;
  };
  return {
    paths: () => Object.keys(files),
    bytes: async (p) => bytes(p),
    size: async (p) => bytes(p).length,
  };
}

async function load(name: string) {
  const folder = await readLlamaFolder(await nodeFolderReader(join(models, name)));
  const adapter = await readAdapter(await nodeFolderReader(join(models, 'lora', name)), folder.config);
  const ref = reference(name);
  const engine = new LlamaCpuPolicy(
    folder.config,
    folder.params,
    {
      lr: ref.adamw.lr,
      beta1: ref.adamw.betas[0],
      beta2: ref.adamw.betas[1],
      eps: ref.adamw.eps,
      weightDecay: ref.adamw.weight_decay,
      maxGradNorm: ref.adamw.max_grad_norm,
    },
    { lora: { config: adapter.config, params: adapter.params } },
  );
  return { folder, adapter, engine, ref };
}

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};
const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));

describe('LoRA on the Llama-family CPU engine vs PyTorch + PEFT (tests/models/lora/, python/tiny_models/lora_refs.py)', () => {
  for (const name of ADAPTERS) {
    describe(name, () => {
      it("reads PEFT's adapter folder: config and every tensor under PEFT's name", async () => {
        const { adapter, ref } = await load(name);
        expect(ref.versions.peft).toBe('0.21.2');
        expect(adapter.config.r).toBe(ref.r);
        expect(adapter.config.alpha).toBe(ref.lora_alpha);
        expect([...adapter.config.targetModules].sort()).toEqual([...ref.target_modules].sort());
        expect(adapter.scaling).toBe(ref.lora_alpha / ref.r);
        const file = tensors(name, ADAPTER_WEIGHTS);
        expect(file.size).toBe(adapter.layout.tensors.length);
        for (const t of adapter.layout.tensors) {
          const f = file.get(t.name);
          expect(f, t.name).toBeDefined();
          expect(maxAbs(adapter.params.subarray(t.offset, t.offset + t.size), f?.data ?? [])).toBe(0);
        }
      });

      it("log-probs with PEFT's adapter, and with it disabled (the frozen base), match to 1e-4", async () => {
        const { engine, ref } = await load(name);
        const { batch } = batchOf(ref);
        const withAdapter = await engine.logProbs(batch);
        const base = await engine.referenceLogProbs(batch);
        const dAdapter = maxAbs(withAdapter.logProbs, ref.logprobs.flat());
        const dBase = maxAbs(base.logProbs, ref.logprobs_base.flat());
        expect(dAdapter).toBeLessThan(1e-4);
        expect(dBase).toBeLessThan(1e-4);
        // the adapter moves the log-probs well beyond the tolerance, so the first comparison bites
        expect(maxAbs(ref.logprobs.flat(), ref.logprobs_base.flat())).toBeGreaterThan(1e-2);
      });

      it('gradients of −Σ w·logp for every adapter tensor match PEFT to 1e-4 relative; the base gets none', async () => {
        const { engine, ref, adapter } = await load(name);
        const { batch, weights } = batchOf(ref);
        const r = engine.computeGrads(batch, weights);
        expect(Math.abs(r.loss - ref.loss)).toBeLessThan(1e-4 * Math.abs(ref.loss));
        const want = tensors(name, 'grads.safetensors');
        expect(want.size).toBe(adapter.layout.tensors.length);
        expect(engine.grads.length).toBe(adapter.layout.total);
        for (const t of adapter.layout.tensors) {
          const g = engine.grads.subarray(t.offset, t.offset + t.size);
          const w = want.get(t.name)?.data as Float32Array;
          const scale = norm(w);
          expect(scale, `${t.name} has a zero reference gradient`).toBeGreaterThan(0);
          const diff = Float32Array.from(g, (x, i) => x - w[i]);
          expect(norm(diff) / scale, t.name).toBeLessThan(1e-4);
        }
        expect(Math.abs(norm(engine.grads) - ref.grad_norm)).toBeLessThan(1e-4 * ref.grad_norm);
      });

      it('one AdamW step (clipped) on the adapter matches torch.optim.AdamW to 1e-6; the base is untouched', async () => {
        const { engine, ref, adapter, folder } = await load(name);
        const { batch, weights } = batchOf(ref);
        const s = await engine.trainStep(batch, weights);
        expect(s.step).toBe(1);
        expect(Math.abs(s.gradNorm - ref.grad_norm)).toBeLessThan(1e-4 * ref.grad_norm);
        const want = tensors(name, 'step.safetensors');
        const after = await engine.getParams();
        let moved = 0;
        for (const t of adapter.layout.tensors) {
          const w = want.get(t.name)?.data as Float32Array;
          const got = after.subarray(t.offset, t.offset + t.size);
          expect(maxAbs(got, w), t.name).toBeLessThan(1e-6);
          moved = Math.max(moved, maxAbs(got, adapter.params.subarray(t.offset, t.offset + t.size)));
        }
        expect(moved).toBeGreaterThan(1e-3);
        expect(maxAbs(engine.params, folder.params)).toBe(0);
        const st = await engine.getOptimizerState();
        expect(st.m.length).toBe(adapter.layout.total);
        expect(st.step).toBe(1);
      });
    });
  }

  it("initialises as PEFT does: A ~ U(−1/√in, 1/√in) (kaiming_uniform_, a=√5), B = 0; PEFT's recorded init agrees", async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const cfg = checkLoraConfig({ r: 8, alpha: 16, targetModules: [...LORA_TARGETS] });
    const layout = loraLayout(folder.config, cfg);
    const a = loraInit(layout, 5);
    expect(maxAbs(a, loraInit(layout, 5))).toBe(0);
    expect(maxAbs(a, loraInit(layout, 6))).toBeGreaterThan(0);
    const ref = reference('qwen3');
    for (const t of layout.tensors) {
      const v = a.subarray(t.offset, t.offset + t.size);
      if (t.name.endsWith('lora_B.weight')) {
        expect(maxAbs(v, new Float32Array(v.length))).toBe(0);
        continue;
      }
      const bound = 1 / Math.sqrt(t.shape[1]);
      const mean = v.reduce((s, x) => s + x, 0) / v.length;
      const std = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / (v.length - 1));
      expect(Math.max(...Array.from(v, Math.abs))).toBeLessThanOrEqual(bound);
      expect(Math.abs(std / (bound / Math.sqrt(3)) - 1)).toBeLessThan(0.15);
      // PEFT's own init of the same module (r 4) has the same bound and the uniform's std
      const p = ref.init[t.name];
      expect(p?.bound).toBeCloseTo(bound, 12);
      expect(p?.max_abs).toBeLessThanOrEqual(bound);
      expect(Math.abs((p?.std ?? 0) / (bound / Math.sqrt(3)) - 1)).toBeLessThan(0.2);
    }
    for (const [k, p] of Object.entries(ref.init)) if (k.includes('lora_B')) expect(p.max_abs).toBe(0);
    // a fresh adapter (B = 0) leaves the model's log-probs exactly as the base's
    const engine = new LlamaCpuPolicy(folder.config, folder.params, {}, { lora: { config: cfg, seed: 5 } });
    const { batch } = batchOf(ref);
    const withAdapter = await engine.logProbs(batch);
    const base = await engine.referenceLogProbs(batch);
    expect(maxAbs(withAdapter.logProbs, base.logProbs)).toBe(0);
  });

  it('writes an adapter folder PEFT reads (adapter_config.json + adapter_model.safetensors) and reads it back', async () => {
    const { adapter, folder } = await load('qwen2');
    const files = encodeAdapter(adapter, 'tests/models/qwen2');
    const cfg = JSON.parse(files[ADAPTER_CONFIG]);
    expect(cfg).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 2,
      lora_alpha: 16,
      target_modules: ['q_proj', 'v_proj', 'down_proj'],
      bias: 'none',
    });
    const names = [...readSafetensors(files[ADAPTER_WEIGHTS], ADAPTER_WEIGHTS).keys()];
    expect(names).toContain('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight');
    const back = await readAdapter(memoryFolder(files), folder.config);
    expect(back.config).toEqual(adapter.config);
    expect(maxAbs(back.params, adapter.params)).toBe(0);
  });

  it('refuses what PEFT can express and the engine does not run, naming the file and field', async () => {
    const { adapter, folder } = await load('llama');
    const files = encodeAdapter(adapter);
    const cfg = JSON.parse(files[ADAPTER_CONFIG]);
    const bad = async (patch: Record<string, unknown>, msg: RegExp) => {
      const f = { ...files, [ADAPTER_CONFIG]: JSON.stringify({ ...cfg, ...patch }) };
      await expect(readAdapter(memoryFolder(f), folder.config)).rejects.toThrow(msg);
    };
    await bad({ use_dora: true }, /adapter_config\.json: use_dora: true is not supported \(DoRA/);
    await bad({ rank_pattern: { q_proj: 8 } }, /rank_pattern/);
    await bad({ lora_dropout: 0.1 }, /lora_dropout: 0\.1 is not supported/);
    await bad({ peft_type: 'IA3' }, /peft_type: is "IA3"; only LORA/);
    await bad({ target_modules: ['q_proj', 'lm_head'] }, /target_modules: unknown module 'lm_head'/);
    await bad({ r: 0 }, /adapter_config\.json: r: must be a positive integer, got 0/);
    await bad({ r: 8 }, /adapter_model\.safetensors: tensor '.*lora_A\.weight' has shape \[4,32\]; r=8/);
    await bad(
      { target_modules: ['q_proj'] },
      /adapter_model\.safetensors: tensor '.*' is not part of a LoRA adapter/,
    );
    const missing = { [ADAPTER_CONFIG]: files[ADAPTER_CONFIG] };
    await expect(readAdapter(memoryFolder(missing), folder.config)).rejects.toThrow(
      /adapter_model\.safetensors: is missing/,
    );
    expect(() => parseAdapterConfig({ ...cfg, target_modules: 'all-linear' })).not.toThrow();
    expect(parseAdapterConfig({ ...cfg, target_modules: 'all-linear' }).targetModules).toEqual([
      ...LORA_TARGETS,
    ]);
  });

  it('samples through the adapter: the sampled tokens’ log-probs are the adapted model’s', async () => {
    const { engine } = await load('qwen3');
    const prompt = [1018, 5, 77, 300];
    const s = await engine.sample({ promptIds: prompt, temperature: 1, topP: 1, maxTokens: 6, seed: 3 });
    const ids = [...prompt, ...s.tokenIds];
    const batch: Batch = {
      tokens: Uint32Array.from(ids),
      mask: new Float32Array(ids.length).fill(1),
      batchSize: 1,
      seqLen: ids.length,
    };
    const lp = (await engine.logProbs(batch)).logProbs.subarray(prompt.length);
    const base = (await engine.referenceLogProbs(batch)).logProbs.subarray(prompt.length);
    expect(maxAbs(lp, s.logProbs)).toBeLessThan(1e-4);
    expect(maxAbs(base, s.logProbs)).toBeGreaterThan(1e-3);
  });

  it('states the memory of a step by part, matching what the engine allocates', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'qwen3')));
    const cfg = checkLoraConfig({ r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'down_proj'] });
    const T = 16;
    const ids = Array.from({ length: T }, (_, i) => (i * 37) % 1000);
    const batch: Batch = {
      tokens: Uint32Array.from(ids),
      mask: new Float32Array(T).fill(1),
      batchSize: 1,
      seqLen: T,
    };
    for (const lora of [cfg, null]) {
      const engine = new LlamaCpuPolicy(
        folder.config,
        folder.params,
        {},
        lora ? { lora: { config: lora } } : {},
      );
      const mem = trainStepMemory(folder.config, lora, T, folder.layout.total);
      expect(mem.weights).toBe(engine.params.byteLength);
      expect(mem.grads).toBe(engine.grads.byteLength);
      expect(mem.optimizer).toBe(engine.m.byteLength + engine.v.byteLength);
      expect(mem.adapter).toBe(engine.adapter?.params.byteLength ?? 0);
      // what the forward keeps for the backward: every saved array, against the stated count without the head tile
      const acts = llamaForwardCpu(folder.config, folder.layout, folder.params, batch, {
        lora: engine.adapter,
      });
      let kept = 0;
      for (const l of acts.layers)
        for (const v of Object.values(l))
          kept +=
            v instanceof Float32Array
              ? v.byteLength
              : Object.values(v as object).reduce((s, t) => s + t.byteLength, 0);
      kept += acts.xOut.byteLength + acts.hf.byteLength + acts.rf.byteLength + acts.rows.hidden.byteLength;
      kept += acts.lse.byteLength + acts.logp.byteLength + acts.entropy.byteLength;
      const stated = mem.activations - 4 * 32 * Math.min(4096, folder.config.vocabSize);
      expect(Math.abs(kept - stated) / stated).toBeLessThan(0.01);
    }
    const full = trainStepMemory(folder.config, null, T, folder.layout.total);
    const lora = trainStepMemory(folder.config, cfg, T, folder.layout.total);
    expect(lora.grads + lora.optimizer).toBeLessThan((full.grads + full.optimizer) / 4);
  });

  it('full fine-tuning stays the default: every parameter trainable, no reference without a copy', async () => {
    const folder = await readLlamaFolder(await nodeFolderReader(join(models, 'llama')));
    const engine = new LlamaCpuPolicy(folder.config, folder.params);
    expect(engine.adapter).toBeUndefined();
    expect(engine.trainableLayout.total).toBe(folder.layout.total);
    expect(engine.grads.length).toBe(folder.layout.total);
    const { batch } = batchOf(reference('llama'));
    await expect(engine.referenceLogProbs(batch)).rejects.toThrow(/full fine-tuning/);
  });
});
