import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/engine/model';
import { roundWeights, WEIGHT_PRECISIONS } from '../../src/engine/onnx/causalLm';
import type { HfTokenizerFiles } from '../../src/engine/onnx/hfFolder';
import { OrtCausalLm, type OrtEp } from '../../src/engine/onnx/ortLm';
import { configureOrtWeb, ortForEp, pageTransformers } from '../../src/engine/onnx/ortWeb';
import { TransformersCausalLm } from '../../src/engine/onnx/transformersLm';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';

// Every engine × EP × weight precision the page offers must start here (Chromium, SwiftShader WebGPU) and sample
// what our CPU reference samples on the weights that precision rounds to: same ids from the same seed, log-probs
// within float32 rounding. An EP that cannot start fails the test.
const config = resolveConfig({ vocabSize: 1024, contextLength: 64, layers: 2, width: 32, heads: 4, seed: 6 });
const cpu = new CpuPolicy(config);
const req = { promptIds: [1018, 77, 5, 300, 12, 900], temperature: 1, topP: 1, maxTokens: 10, seed: 21 };
configureOrtWeb(1); // numerics do not depend on it; one thread keeps start-up short

async function tokenizerFiles(): Promise<HfTokenizerFiles> {
  const get = async (f: string) =>
    (await fetch(`/tokenizer/${f}`).then((r) => r.json())) as Record<string, unknown>;
  return { tokenizerJson: await get('tokenizer.json'), tokenizerConfig: await get('tokenizer_config.json') };
}

async function expectSameSample(
  got: { tokenIds: number[]; logProbs: number[] },
  precision: (typeof WEIGHT_PRECISIONS)[number],
) {
  const want = await new CpuPolicy(config, {}, roundWeights(config, cpu.params, precision)).sample(req);
  expect(got.tokenIds).toEqual(want.tokenIds);
  for (let i = 0; i < want.logProbs.length; i++)
    expect(Math.abs(got.logProbs[i] - want.logProbs[i])).toBeLessThan(1e-3);
}

describe('rollout engines in Chromium', () => {
  for (const ep of ['wasm', 'webgpu'] as OrtEp[])
    for (const precision of WEIGHT_PRECISIONS)
      it(`onnxruntime-web ${ep} EP, ${precision} weights: the reference's seeded sample`, async () => {
        const lm = await OrtCausalLm.create({ ort: ortForEp(ep), ep, config, precision }, cpu.params);
        try {
          await expectSameSample(await lm.sample(req), precision);
          // the cache came from the EP asked for (a CPU fallback would leave it on the host)
          expect(lm.cacheLocation).toBe(ep === 'webgpu' ? 'gpu-buffer' : 'cpu');
        } finally {
          await lm.dispose();
        }
      });

  for (const device of ['wasm', 'webgpu'] as const)
    it(`transformers.js on ${device}, every precision: the reference's seeded sample, and syncWeights reloads`, async () => {
      await pageTransformers();
      const tokenizer = await tokenizerFiles();
      for (const precision of WEIGHT_PRECISIONS) {
        const lm = await TransformersCausalLm.fromPolicy(cpu.params, {
          device,
          policy: { config, tokenizer, precision },
        });
        try {
          await expectSameSample(await lm.sample(req), precision);
          const cost = await lm.syncWeights(cpu.params);
          expect(cost.bytes).toBeGreaterThan(0);
          await expectSameSample(await lm.sample(req), precision);
        } finally {
          await lm.dispose();
        }
      }
    });
});
