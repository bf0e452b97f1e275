/**
 * Layer-by-layer comparison of the WebGPU engine (Dawn) with the CPU engine: prints max |x|, max |Δ| and ‖Δ‖/‖x‖
 * of the residual stream after each layer, and the log-prob gap.
 * The model is either a Hugging Face folder (FOLDER; its first LAYERS layers when LAYERS is set, the embedding,
 * final norm and head unchanged; ids from IDS, a JSON file with `ids: number[][]` as python/bench_llama_peer.py
 * prints, else (i·7919) % V of length SEQ), or a random model of SmolLM2-135M's per-layer shape (C 576, F 1536, H 9,
 * KV 3, head_dim 64, rope_theta 1e5), PyTorch's init (normal(0, 0.02) weights, unit norms; INIT=uniform for ±0.1),
 * LAYERS (30), VOCAB (256) and SEQ (8) from the environment.
 * Run: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json LD_LIBRARY_PATH=/usr/lib/chromium \
 *   [FOLDER=dir IDS=peer.json] npx tsx tests/tools/llamaResiduals.mts
 */
import { readFileSync } from 'node:fs';
import { nodeGpuContext } from '../../src/cli/webgpuNode';
import { mulberry32 } from '../../src/core/random';
import { type LlamaConfig, parseLlamaConfig } from '../../src/engine/llama/config';
import { readLlamaFolder } from '../../src/engine/llama/hfFolder';
import { llamaForwardCpu, llamaLayout } from '../../src/engine/llama/model';
import { nodeFolderReader } from '../../src/engine/onnx/folder';
import { LlamaGpuPolicy } from '../../src/engine/policy/llamaGpuPolicy';

const init = process.env.INIT ?? 'normal';
let cfg: LlamaConfig;
let params: Float32Array;
if (process.env.FOLDER) {
  const folder = await readLlamaFolder(await nodeFolderReader(process.env.FOLDER));
  const keep = Number(process.env.LAYERS ?? folder.config.layers);
  cfg = { ...folder.config, layers: keep };
  const layout = llamaLayout(cfg);
  params = new Float32Array(layout.total);
  for (const t of layout.tensors) {
    const src = folder.layout.byName.get(t.name);
    if (!src) throw new Error(`no ${t.name} in the folder`);
    params.set(folder.params.subarray(src.offset, src.offset + src.size), t.offset);
  }
} else {
  const L = Number(process.env.LAYERS ?? 30);
  cfg = parseLlamaConfig({
    model_type: 'llama',
    hidden_size: 576,
    intermediate_size: 1536,
    num_hidden_layers: L,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    head_dim: 64,
    vocab_size: Number(process.env.VOCAB ?? 256),
    max_position_embeddings: 64,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    tie_word_embeddings: true,
    hidden_act: 'silu',
  });
  const layout = llamaLayout(cfg);
  params = new Float32Array(layout.total);
  const rand = mulberry32(7);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  for (const t of layout.tensors) {
    const isNorm = t.name.includes('norm');
    for (let i = 0; i < t.size; i++)
      params[t.offset + i] = isNorm ? 1 : init === 'normal' ? 0.02 * gauss() : 0.2 * (rand() - 0.5);
  }
}
const L = cfg.layers;
const C = cfg.hidden;
const layout = llamaLayout(cfg);
const ids: number[] = process.env.IDS
  ? (JSON.parse(readFileSync(process.env.IDS, 'utf8')) as { ids: number[][] }).ids[0]
  : Array.from({ length: Number(process.env.SEQ ?? 8) }, (_, i) => (i * 7919) % cfg.vocabSize);
const T = ids.length;
console.log(
  `total params ${layout.total}, L ${L}, V ${cfg.vocabSize}, T ${T}, ids ${ids.slice(0, 4).join(',')}…`,
);
const tokens = Uint32Array.from(ids);
const batch = { tokens, mask: new Float32Array(T).fill(1), batchSize: 1, seqLen: T };
const cpu = llamaForwardCpu(cfg, layout, params, batch);
const cpuRes = [...cpu.layers.map((a) => a.x), cpu.xOut];
const ctx = await nodeGpuContext();
const gpu = new LlamaGpuPolicy(ctx, cfg, params);
const t0 = Date.now();
const gRes = await gpu.residuals(batch);
const glp = await gpu.logProbs(batch);
console.log(`gpu ${((Date.now() - t0) / 1000).toFixed(1)} s; ${process.env.FOLDER ?? `init ${init}`}`);
console.log('layer  max|x|      max|Δ|      rel‖Δ‖/‖x‖');
for (let l = 0; l <= L; l++) {
  let mx = 0;
  let md = 0;
  let n2 = 0;
  let d2 = 0;
  let at = 0;
  for (let i = 0; i < cpuRes[l].length; i++) {
    const d = Math.abs(gRes[l][i] - cpuRes[l][i]);
    if (d > md) {
      md = d;
      at = i;
    }
    mx = Math.max(mx, Math.abs(cpuRes[l][i]));
    n2 += cpuRes[l][i] ** 2;
    d2 += d * d;
  }
  console.log(
    `${String(l).padStart(5)}  ${mx.toExponential(3)}  ${md.toExponential(3)}  ${Math.sqrt(d2 / n2).toExponential(3)}  (at row ${Math.floor(at / C)} col ${at % C})`,
  );
}
let lpd = 0;
for (let i = 1; i < T; i++) lpd = Math.max(lpd, Math.abs(glp.logProbs[i] - cpu.logp[i]));
console.log(`max |Δ log-prob| ${lpd.toExponential(3)}`);
gpu.dispose();
ctx.destroy();
