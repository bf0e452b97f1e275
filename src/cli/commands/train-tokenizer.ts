/**
 * `npm run lab -- train-tokenizer`: trains the policy's byte-level BPE tokenizer and writes tokenizer.json +
 * tokenizer_config.json (Hugging Face format) to public/tokenizer/ (or --out).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { toTokenizerConfig, toTokenizerJson, trainBpe } from '../../engine/tokenizer/bpe';
import { generateCorpus } from '../../engine/tokenizer/corpus';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';

export const command: Command = {
  summary: 'Train the byte-level BPE tokenizer (HF tokenizer.json) on generated task-like text and/or files',
  usage:
    'npm run lab -- train-tokenizer [--vocab-size 1024] [--docs 3000] [--seed 1] [--input FILE]... [--max-length 256] [--out public/tokenizer]',
  async run(argv) {
    const { flags, positionals } = parseArgs(argv, {
      'vocab-size': { type: 'number' },
      docs: { type: 'number' },
      seed: { type: 'number' },
      input: { type: 'string', multiple: true },
      'max-length': { type: 'number' },
      out: { type: 'string' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const vocabSize = (flags['vocab-size'] as number | undefined) ?? 1024;
    const docs = (flags.docs as number | undefined) ?? 3000;
    const seed = (flags.seed as number | undefined) ?? 1;
    const maxLength = (flags['max-length'] as number | undefined) ?? 256;
    if (!Number.isInteger(vocabSize) || vocabSize < 264 || vocabSize > 65536)
      throw new UsageError(`--vocab-size must be an integer in [264, 65536], got ${vocabSize}`);
    if (!Number.isInteger(docs) || docs < 0)
      throw new UsageError(`--docs must be a non-negative integer, got ${docs}`);
    if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer, got ${seed}`);
    if (!Number.isInteger(maxLength) || maxLength < 1)
      throw new UsageError(`--max-length must be a positive integer, got ${maxLength}`);
    const texts: string[] = [...generateCorpus(docs, seed)];
    for (const file of (flags.input as string[] | undefined) ?? []) {
      try {
        texts.push(await readFile(file, 'utf8'));
      } catch (e) {
        throw new UsageError(`--input ${file}: ${(e as Error).message}`);
      }
    }
    if (texts.length === 0) throw new UsageError('no training text: give --docs > 0 or --input FILE');
    const started = performance.now();
    const bpe = trainBpe(texts, vocabSize);
    const out = resolve((flags.out as string | undefined) ?? 'public/tokenizer');
    await mkdir(out, { recursive: true });
    await writeFile(join(out, 'tokenizer.json'), `${JSON.stringify(toTokenizerJson(bpe))}\n`);
    await writeFile(
      join(out, 'tokenizer_config.json'),
      `${JSON.stringify(toTokenizerConfig(bpe, maxLength), null, 2)}\n`,
    );
    const chars = texts.reduce((a, t) => a + t.length, 0);
    console.log(
      `trained on ${texts.length} texts (${chars} chars) in ${((performance.now() - started) / 1000).toFixed(1)} s: ` +
        `${bpe.vocab.size} learned tokens (${bpe.merges.length} merges) + ${bpe.special.length} special = ${bpe.vocab.size + bpe.special.length}`,
    );
    console.log(`wrote ${join(out, 'tokenizer.json')} and tokenizer_config.json`);
    return 0;
  },
};
