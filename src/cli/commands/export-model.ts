/**
 * `npm run lab -- export-model`: writes the policy (a safetensors checkpoint, or the seeded init of a config) as
 * a Hugging Face-layout ONNX model folder (config.json, generation_config.json, onnx/model.onnx with KV cache,
 * tokenizer.json, tokenizer_config.json) that transformers.js and the page's Models tab load.
 */
import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadCheckpointFile } from '../../engine/checkpoint';
import { initParams, resolveConfig } from '../../engine/model';
import { isWeightPrecision, WEIGHT_PRECISIONS } from '../../engine/onnx/causalLm';
import { writeModelFolder } from '../../engine/onnx/folder';
import { exportHfFolder } from '../../engine/onnx/hfFolder';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { loadTokenizerFiles } from '../tokenizers';

export const command: Command = {
  summary:
    'Write the policy as a Hugging Face-layout ONNX causal LM folder (transformers.js, the Models tab)',
  usage: `npm run lab -- export-model --out DIR [--checkpoint FILE.safetensors] [--precision ${WEIGHT_PRECISIONS.join('|')}] [--tokenizer policy|DIR] [--context N] [--layers N] [--width N] [--heads N] [--seed S]`,
  async run(argv) {
    const { flags, positionals } = parseArgs(argv, {
      out: { type: 'string' },
      checkpoint: { type: 'string' },
      precision: { type: 'string' },
      tokenizer: { type: 'string' },
      context: { type: 'number' },
      layers: { type: 'number' },
      width: { type: 'number' },
      heads: { type: 'number' },
      seed: { type: 'number' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const out = flags.out as string | undefined;
    if (!out) throw new UsageError('--out DIR is required');
    if (existsSync(out) && readdirSync(out).length > 0)
      throw new UsageError(`--out ${out} exists and is not empty`);
    const precision = (flags.precision as string | undefined) ?? 'f32';
    if (!isWeightPrecision(precision))
      throw new UsageError(`--precision must be one of ${WEIGHT_PRECISIONS.join(', ')}, got '${precision}'`);
    const tokFiles = loadTokenizerFiles((flags.tokenizer as string | undefined) ?? 'policy');
    const vocab = (tokFiles.tokenizerJson.added_tokens as { id: number }[]).reduce(
      (m, t) => Math.max(m, t.id + 1),
      Object.keys((tokFiles.tokenizerJson.model as { vocab: object }).vocab).length,
    );
    let config: ReturnType<typeof resolveConfig>;
    let params: Float32Array;
    if (flags.checkpoint) {
      for (const f of ['context', 'layers', 'width', 'heads', 'seed'])
        if (flags[f] !== undefined) throw new UsageError(`--${f} comes from the checkpoint; leave it out`);
      const ck = await loadCheckpointFile(flags.checkpoint as string);
      config = ck.config;
      params = ck.params;
    } else {
      try {
        config = resolveConfig({
          vocabSize: vocab,
          contextLength: (flags.context as number | undefined) ?? 512,
          layers: (flags.layers as number | undefined) ?? 4,
          width: (flags.width as number | undefined) ?? 128,
          heads: (flags.heads as number | undefined) ?? 4,
          seed: (flags.seed as number | undefined) ?? 1,
        });
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      params = initParams(config);
    }
    if (vocab > config.vocabSize)
      throw new UsageError(
        `the tokenizer has ${vocab} ids but the model's vocabulary is ${config.vocabSize}`,
      );
    const files = exportHfFolder(config, params, tokFiles, { precision });
    await writeModelFolder(resolve(out), files);
    let bytes = 0;
    for (const b of files.values()) bytes += b.length;
    const what = flags.checkpoint
      ? `the weights of ${flags.checkpoint}`
      : `RANDOM weights (the seeded initialisation, seed ${config.seed}; --checkpoint FILE exports trained ones)`;
    console.log(
      `export-model: wrote ${files.size} files (${(bytes / 1e6).toFixed(2)} MB, ${precision} weights) to ${out}: ${what}`,
    );
    return 0;
  },
};
