/**
 * Writes a LoRA adapter trained by our engine, for python/tiny_models/check_adapter.py to load into PEFT:
 *
 *   npx tsx tests/tools/lora-adapter-out.ts [--model tests/models/qwen3] [--out DIR] [--steps 3] [--r 4] [--alpha 8]
 *   npx tsx tests/tools/lora-adapter-out.ts --model DIR --adapter ADAPTER_DIR --out DIR   (an adapter `lab train` wrote)
 *
 * PEFT's initialisation from our seeded generator, `--steps` AdamW steps of −Σ w·logp with seeded weights on
 * the folder's left-padded reference batch, then DIR/adapter_config.json + DIR/adapter_model.safetensors (PEFT's
 * layout) and DIR/logprobs.json: our log-probs of that batch with the adapter and with it disabled.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { mulberry32 } from '../../src/core/random';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { checkLoraConfig, LORA_TARGETS } from '../../src/engine/llama/lora';
import { encodeAdapter, readAdapter } from '../../src/engine/llama/peftAdapter';
import type { Batch } from '../../src/engine/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaCpuPolicy } from '../../src/engine/policy/llamaCpuPolicy';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'tests/models/qwen3' },
    out: { type: 'string', default: 'lora-adapter-out' },
    steps: { type: 'string', default: '3' },
    r: { type: 'string', default: '4' },
    alpha: { type: 'string', default: '8' },
    adapter: { type: 'string' },
  },
});
const dir = resolve(values.model as string);
const folder = await readLlamaFolder(await nodeFolderReader(dir));
const config = checkLoraConfig({
  r: Number(values.r),
  alpha: Number(values.alpha),
  targetModules: [...LORA_TARGETS],
});
const given = values.adapter
  ? await readAdapter(await nodeFolderReader(resolve(values.adapter)), folder.config)
  : null;
const engine = new LlamaCpuPolicy(
  folder.config,
  folder.params,
  { lr: 1e-2, weightDecay: 0 },
  { lora: given ? { config: given.config, params: given.params } : { config, seed: 7 } },
);
const ref = JSON.parse(readFileSync(join(dir, 'reference.json'), 'utf8')) as {
  left_padded: { ids: number[][]; mask: number[][] };
};
const B = ref.left_padded.ids.length;
const T = ref.left_padded.ids[0].length;
const batch: Batch = {
  tokens: Uint32Array.from(ref.left_padded.ids.flat()),
  mask: Float32Array.from(ref.left_padded.mask.flat()),
  batchSize: B,
  seqLen: T,
};
const rand = mulberry32(1);
const weights = Float32Array.from(batch.mask, (m) => m * (2 * rand() - 1));
for (let s = 0; s < (given ? 0 : Number(values.steps)); s++) {
  const r = await engine.trainStep(batch, weights);
  console.log(`step ${r.step}: loss ${r.loss.toFixed(6)} |g| ${r.gradNorm.toFixed(6)}`);
}
const out = resolve(values.out as string);
mkdirSync(out, { recursive: true });
const files = encodeAdapter(engine.adapter as NonNullable<typeof engine.adapter>, dir);
for (const [name, data] of Object.entries(files)) writeFileSync(join(out, name), data);
const rows = (a: Float32Array) =>
  Array.from({ length: B }, (_, b) => Array.from(a.subarray(b * T, (b + 1) * T)));
writeFileSync(
  join(out, 'logprobs.json'),
  `${JSON.stringify({
    ids: ref.left_padded.ids,
    mask: ref.left_padded.mask,
    logprobs: rows((await engine.logProbs(batch)).logProbs),
    logprobs_base: rows((await engine.referenceLogProbs(batch)).logProbs),
  })}\n`,
);
console.log(`wrote ${out}/{adapter_config.json, adapter_model.safetensors, logprobs.json}`);
