/**
 * The inline markdown of preset texts, parsed into spans for the page to render (never as HTML): `code`,
 * **strong**, *emphasis* or _emphasis_ (not inside a word, so snake_case names stay as written) and
 * [links](https://…) to http(s) addresses; a backslash escapes the next character. Anything else, an unclosed
 * marker included, stays literal text. Block markdown (lists, headings) is not part of the texts and not parsed.
 */

export type InlineSpan =
  | { kind: 'text'; text: string }
  | { kind: 'code'; text: string }
  | { kind: 'strong'; children: InlineSpan[] }
  | { kind: 'em'; children: InlineSpan[] }
  | { kind: 'link'; href: string; children: InlineSpan[] };

const WORD = /[\p{L}\p{N}]/u;

function push(out: InlineSpan[], text: string): void {
  if (!text) return;
  const last = out[out.length - 1];
  if (last?.kind === 'text') last.text += text;
  else out.push({ kind: 'text', text });
}

/** The spans of `src` (one line or paragraph of inline markdown). */
export function parseInline(src: string): InlineSpan[] {
  const out: InlineSpan[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\' && i + 1 < src.length && /[\\`*_[\]()]/.test(src[i + 1])) {
      push(out, src[i + 1]);
      i += 2;
      continue;
    }
    if (c === '`') {
      const end = src.indexOf('`', i + 1);
      if (end > i + 1) {
        out.push({ kind: 'code', text: src.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    }
    if (c === '*' && src[i + 1] === '*') {
      const end = src.indexOf('**', i + 2);
      if (end > i + 2) {
        out.push({ kind: 'strong', children: parseInline(src.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if ((c === '*' || c === '_') && src[i + 1] !== c && src[i + 1] !== ' ' && !WORD.test(src[i - 1] ?? '')) {
      let end = src.indexOf(c, i + 1);
      while (end > 0 && (src[end - 1] === ' ' || WORD.test(src[end + 1] ?? '') || src[end + 1] === c))
        end = src.indexOf(c, end + 1);
      if (end > i + 1) {
        out.push({ kind: 'em', children: parseInline(src.slice(i + 1, end)) });
        i = end + 1;
        continue;
      }
    }
    if (c === '[') {
      const m = /^\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/.exec(src.slice(i));
      if (m) {
        out.push({ kind: 'link', href: m[2], children: parseInline(m[1]) });
        i += m[0].length;
        continue;
      }
    }
    push(out, c);
    i++;
  }
  return out;
}
