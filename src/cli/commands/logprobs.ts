/**
 * `lab logprobs --model DIR --input FILE.json [--json] [--temperature T] [--top-k K]`: our engine's per-position
 * log-probs and entropies for token-id sequences on a Hugging Face Llama / Qwen2 / Qwen3 folder — what a user
 * runs to check a model against their own stack. FILE is a JSON list of sequences (lists of token ids).
 * Position t's values are those of the distribution that predicted token t from tokens < t (position 0 has none).
 */
import { readFileSync } from 'node:fs';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { loadLlamaModel } from '../llamaModel';

const usage = `lab logprobs --model DIR --input FILE.json [--json] [--temperature T=1] [--top-k K]
  DIR: a Hugging Face folder (config.json model_type llama, qwen2 or qwen3; model.safetensors or
    model.safetensors.index.json; tokenizer.json; tokenizer_config.json).
  FILE.json: a list of token-id sequences, e.g. [[1018, 5, 900], [17, 33]].
  Prints, per sequence, each position's id, log-prob and entropy (position 0: none); --json prints
  {"model", "model_type", "sequences": [{"ids", "logprobs", "entropy"}]} instead (0 at position 0).
  --top-k K adds the K most likely next ids after the last token of each sequence.`;

/** Reads and checks the input file; the message names the sequence and position of the first problem. */
export function parseSequences(text: string, file: string, vocabSize: number): number[][] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--input ${file}: not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(v) || v.length === 0)
    throw new UsageError(`--input ${file}: must be a non-empty JSON list of token-id sequences`);
  return v.map((s, i) => {
    if (!Array.isArray(s) || s.length === 0)
      throw new UsageError(`--input ${file}: sequence ${i} must be a non-empty list of token ids`);
    s.forEach((id, t) => {
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize)
        throw new UsageError(
          `--input ${file}: sequence ${i}, position ${t}: ${JSON.stringify(id)} is not a token id in [0, ${vocabSize})`,
        );
    });
    return s as number[];
  });
}

export const command: Command = {
  summary: 'per-position log-probs and entropies of token-id sequences on a Hugging Face folder (our engine)',
  usage,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      model: { type: 'string' },
      input: { type: 'string' },
      json: { type: 'bool' },
      temperature: { type: 'number' },
      'top-k': { type: 'number' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const modelDir = flags.model as string | undefined;
    if (!modelDir) throw new UsageError('--model is required');
    const input = flags.input as string | undefined;
    if (!input) throw new UsageError('--input is required');
    const temperature = (flags.temperature as number | undefined) ?? 1;
    if (!(temperature > 0) || !Number.isFinite(temperature))
      throw new UsageError(`--temperature must be a positive number, got ${temperature}`);
    const topK = flags['top-k'] as number | undefined;
    if (topK !== undefined && (!Number.isInteger(topK) || topK < 1))
      throw new UsageError(`--top-k must be a positive integer, got ${topK}`);
    let text: string;
    try {
      text = readFileSync(input, 'utf8');
    } catch (e) {
      throw new UsageError(`--input: cannot read ${input}: ${(e as Error).message}`);
    }
    let model: Awaited<ReturnType<typeof loadLlamaModel>>;
    try {
      model = await loadLlamaModel(modelDir);
    } catch (e) {
      throw new UsageError(`--model: ${(e as Error).message}`);
    }
    const { engine, folder } = model;
    const seqs = parseSequences(text, input, folder.config.vocabSize);
    const longest = Math.max(...seqs.map((s) => s.length));
    if (longest > engine.config.contextLength)
      throw new UsageError(
        `--input ${input}: a sequence of ${longest} tokens exceeds max_position_embeddings (${engine.config.contextLength})`,
      );
    if (topK !== undefined && topK > folder.config.vocabSize)
      throw new UsageError(
        `--top-k must be at most the vocabulary (${folder.config.vocabSize}), got ${topK}`,
      );
    const results = [];
    for (const ids of seqs) {
      const batch = {
        tokens: Uint32Array.from(ids),
        mask: new Float32Array(ids.length).fill(1),
        batchSize: 1,
        seqLen: ids.length,
        temperature,
      };
      const r = await engine.topK(batch, topK === undefined ? [] : [ids.length - 1], topK ?? 1);
      const out: {
        ids: number[];
        logprobs: number[];
        entropy: number[];
        next_top_k?: { ids: number[]; logprobs: number[] };
      } = {
        ids,
        logprobs: Array.from(r.logProbs),
        entropy: Array.from(r.entropy),
      };
      if (topK !== undefined) out.next_top_k = { ids: r.topk[0].ids, logprobs: r.topk[0].logprobs };
      results.push(out);
    }
    if (flags.json) {
      console.log(
        JSON.stringify({
          model: model.dir,
          model_type: folder.config.modelType,
          storage: folder.storage,
          temperature,
          sequences: results,
        }),
      );
      return 0;
    }
    console.log(
      `${model.dir}: ${folder.config.modelType}, ${folder.storage.join('+')} weights, temperature ${temperature}`,
    );
    results.forEach((r, i) => {
      console.log(`sequence ${i} (${r.ids.length} tokens)`);
      console.log('  pos      id       logprob     entropy');
      r.ids.forEach((id, t) => {
        const lp = t === 0 ? '-' : r.logprobs[t].toFixed(6);
        const en = t === 0 ? '-' : r.entropy[t].toFixed(6);
        console.log(
          `  ${String(t).padStart(3)} ${String(id).padStart(7)} ${lp.padStart(13)} ${en.padStart(11)}`,
        );
      });
      if (r.next_top_k)
        console.log(
          `  next: ${r.next_top_k.ids.map((id, k) => `${id} (${r.next_top_k?.logprobs[k].toFixed(4)})`).join(', ')}`,
        );
    });
    return 0;
  },
};
