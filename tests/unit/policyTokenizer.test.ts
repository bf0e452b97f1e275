import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import {
  CHAT_SPECIAL_TOKENS,
  toTokenizerConfig,
  toTokenizerJson,
  trainBpe,
} from '../../src/engine/tokenizer/bpe';
import { generateCorpus } from '../../src/engine/tokenizer/corpus';

const SAMPLES = [
  'Write a short paragraph about the ocean. Answer in exactly 5 words.',
  'héllo wörld — naïve café 🤖 日本語\n\n  indented\ttab',
  'def f(xs):\n    return [x * 2 for x in xs if x % 3 == 0]\n',
  'it\'s 1969; they\'ll say: "Apollo 11" landed!',
];

describe('byte-level BPE tokenizer', () => {
  it('trains deterministically to the requested size', () => {
    const docs = [...generateCorpus(200, 3)];
    const a = trainBpe(docs, 400);
    const b = trainBpe([...docs].reverse(), 400);
    expect(a.vocab.size + a.special.length).toBe(400);
    expect(a.merges).toEqual(b.merges);
    expect(() => trainBpe(docs, 200)).toThrow('vocabulary size 200 leaves no room');
  });

  it('loads in @huggingface/tokenizers and round-trips text', () => {
    const bpe = trainBpe([...generateCorpus(200, 3)], 400);
    const tok = new Tokenizer(toTokenizerJson(bpe), toTokenizerConfig(bpe, 128));
    for (const s of SAMPLES) {
      const ids = tok.encode(s).ids;
      expect(ids.every((id) => id >= 0 && id < 400)).toBe(true);
      expect(tok.decode(ids)).toBe(s);
    }
    expect(tok.encode('').ids).toEqual([]);
    // Merges compress the text they were learned from.
    const doc = [...generateCorpus(1, 99)][0];
    expect(tok.encode(doc).ids.length).toBeLessThan(new TextEncoder().encode(doc).length / 2);
  });

  const json = JSON.parse(readFileSync('public/tokenizer/tokenizer.json', 'utf8'));
  const config = JSON.parse(readFileSync('public/tokenizer/tokenizer_config.json', 'utf8'));
  const tok = new Tokenizer(json, config);

  it('the shipped public/tokenizer has 1024 ids and atomic chat special tokens', () => {
    const ids = new Set<number>(Object.values(json.model.vocab as Record<string, number>));
    for (const t of json.added_tokens as { id: number }[]) ids.add(t.id);
    expect(ids.size).toBe(1024);
    expect(Math.max(...ids)).toBe(1023);
    for (const { content } of CHAT_SPECIAL_TOKENS) {
      const e = tok.encode(content);
      expect(e.ids, content).toHaveLength(1);
      expect(tok.decode(e.ids)).toBe(content);
    }
    const text =
      '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nadd\n</think>\n\n4<|im_end|>';
    expect(tok.decode(tok.encode(text).ids)).toBe(text);
    for (const s of SAMPLES) expect(tok.decode(tok.encode(s).ids)).toBe(s);
  });

  it('renders the Qwen-style chat template with tools, tool calls and thinking', () => {
    const tmpl = new Template(config.chat_template);
    const out = tmpl.render({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Capital of France?' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { type: 'function', function: { name: 'search', arguments: { query: 'capital of France' } } },
          ],
        },
        { role: 'tool', content: 'Paris' },
      ],
      tools: [{ type: 'function', function: { name: 'search', parameters: { type: 'object' } } }],
      add_generation_prompt: true,
    });
    expect(out.startsWith('<|im_start|>system\nBe brief.\n\n# Tools')).toBe(true);
    expect(out).toContain(
      '<tool_call>\n{"name": "search", "arguments": {"query": "capital of France"}}\n</tool_call><|im_end|>',
    );
    expect(out).toContain('<|im_start|>user\n<tool_response>\nParis\n</tool_response><|im_end|>\n');
    expect(out.endsWith('<|im_start|>assistant\n')).toBe(true);
    const noThink = tmpl.render({
      messages: [{ role: 'user', content: 'hi' }],
      add_generation_prompt: true,
      enable_thinking: false,
    });
    expect(noThink).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  });
});
