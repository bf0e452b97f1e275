import { describe, expect, it } from 'vitest';
import { listPresets, presetRobustness } from '../../src/train/presets';
import { type InlineSpan, parseInline } from '../../src/ui/presets/inlineMarkdown';

const text = (t: string): InlineSpan => ({ kind: 'text', text: t });

/** The spans written back as markdown (code, strong, em, links), to compare with the source. */
function unparse(spans: readonly InlineSpan[]): string {
  return spans
    .map((s) => {
      if (s.kind === 'text') return s.text;
      if (s.kind === 'code') return `\`${s.text}\``;
      if (s.kind === 'strong') return `**${unparse(s.children)}**`;
      if (s.kind === 'em') return `*${unparse(s.children)}*`;
      return `[${unparse(s.children)}](${s.href})`;
    })
    .join('');
}

describe('inline markdown of preset texts', () => {
  it('parses code, strong, emphasis and http(s) links, nested where markdown nests them', () => {
    expect(parseInline('uses `seq-mean-token-mean` by default')).toEqual([
      text('uses '),
      { kind: 'code', text: 'seq-mean-token-mean' },
      text(' by default'),
    ]);
    expect(parseInline('**not** robust, *only* _once_')).toEqual([
      { kind: 'strong', children: [text('not')] },
      text(' robust, '),
      { kind: 'em', children: [text('only')] },
      text(' '),
      { kind: 'em', children: [text('once')] },
    ]);
    expect(parseInline('see [Dr. `GRPO`](https://arxiv.org/abs/2503.20783).')).toEqual([
      text('see '),
      {
        kind: 'link',
        href: 'https://arxiv.org/abs/2503.20783',
        children: [text('Dr. '), { kind: 'code', text: 'GRPO' }],
      },
      text('.'),
    ]);
  });

  it('leaves what is not markdown as written: snake_case, lone or unclosed markers, other link schemes', () => {
    for (const s of [
      'enable_rollout_level_advantage and max_prompt_length',
      'a * b * c',
      'an unclosed `code span',
      '**half bold',
      '[click](javascript:alert(1))',
      '2 * 3 = 6',
    ])
      expect(parseInline(s)).toEqual([text(s)]);
    // a backslash escapes a marker
    expect(parseInline('\\`x\\` and \\*y\\*')).toEqual([text('`x` and *y*')]);
  });

  it('every preset text parses back to its own source (nothing dropped), its code spans as code', () => {
    let code = 0;
    for (const p of listPresets())
      for (const t of [p.explanation, p.lookFor, presetRobustness(p), p.notModelled, p.source]) {
        const spans = parseInline(t);
        expect(unparse(spans)).toBe(t);
        code += spans.filter((s) => s.kind === 'code').length;
      }
    expect(code).toBeGreaterThan(10);
  });
});
