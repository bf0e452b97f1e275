import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { qwen3 as loadQwen3 } from './qwen3';

let qwen3: ChatTokenizer;

beforeAll(() => {
  qwen3 = loadQwen3();
});

describe('ChatTokenizer over the real Qwen3 tokenizer', () => {
  it('knows its vocabulary and special tokens', () => {
    expect(qwen3.vocabSize).toBeGreaterThanOrEqual(151_643);
    const imStart = qwen3.addedTokens.get('<|im_start|>');
    expect(imStart).toBe(151644);
    expect(qwen3.specialIds.has(151644)).toBe(true);
    expect(qwen3.addedTokens.has('<think>')).toBe(true);
  });

  it('shows that BPE is not compositional: " Hel"+"lo" re-encodes as " Hello"', () => {
    expect([...qwen3.encode(' Hello')]).toEqual([21927]);
    expect(qwen3.decode([15806, 385])).toBe(' Hello');
    expect([...qwen3.encode(qwen3.decode([15806, 385]))]).toEqual([21927]);
  });

  it('renders the chat template and drops earlier <think> blocks', () => {
    const text = qwen3.renderChat(
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '<think>\nplan\n</think>\n\nhello' },
        { role: 'user', content: 'again' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe(
      '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n',
    );
    const ids = qwen3.encodeChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(ids[0]).toBe(151644);
    expect(qwen3.decode(ids)).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
  });
});
