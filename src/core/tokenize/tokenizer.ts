/**
 * A chat tokenizer over a Hugging Face `tokenizer.json` + `tokenizer_config.json` pair: byte-identical ids
 * (`@huggingface/tokenizers`) and chat-template rendering (`@huggingface/jinja`), the same engines
 * transformers.js uses. Pure: the caller loads the two JSON documents (see loaders in cli/ and ui/).
 */
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import type { ChatMessage, ToolDefinition } from '../trace/types';

export interface RenderOptions {
  tools?: ToolDefinition[];
  /** Append the assistant header so the model continues as the assistant (what an engine does per call). */
  addGenerationPrompt: boolean;
  /** Qwen3's `enable_thinking` template variable; undefined leaves the template's default. */
  enableThinking?: boolean;
}

type JsonObject = Record<string, unknown>;

/**
 * Python's `str.strip/lstrip/rstrip(chars)`: @huggingface/jinja ignores the `chars` argument and always strips
 * whitespace, but chat templates rely on it (Qwen3: `content.lstrip('\n')` keeps a leading space of the
 * answer, `reasoning_content.strip('\n')`). Calls with an argument are rewritten, once per template, into
 * calls of these globals.
 */
function pyStrip(s: unknown, chars: unknown, left: boolean, right: boolean): unknown {
  if (typeof s !== 'string') return s;
  const set = typeof chars === 'string' ? chars : null;
  const strip = (c: string) => (set === null ? /\s/.test(c) : set.includes(c));
  let a = 0;
  let b = s.length;
  if (left) while (a < b && strip(s[a])) a++;
  if (right) while (b > a && strip(s[b - 1])) b--;
  return s.slice(a, b);
}

const PY_STRIP: Record<string, (s: unknown, chars: unknown) => unknown> = {
  __py_strip: (s, c) => pyStrip(s, c, true, true),
  __py_lstrip: (s, c) => pyStrip(s, c, true, false),
  __py_rstrip: (s, c) => pyStrip(s, c, false, true),
};

interface AstNode {
  type?: string;
  callee?: AstNode;
  object?: AstNode;
  property?: AstNode & { value?: unknown };
  computed?: boolean;
  args?: AstNode[];
}

/** Rewrites `x.strip(c)` / `x.lstrip(c)` / `x.rstrip(c)` into `__py_strip(x, c)` etc. in a parsed template. */
function rewriteStripCalls(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) rewriteStripCalls(n);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const n = node as AstNode;
  for (const v of Object.values(n)) rewriteStripCalls(v);
  const callee = n.callee;
  const prop = callee?.property;
  if (
    n.type === 'CallExpression' &&
    callee?.type === 'MemberExpression' &&
    !callee.computed &&
    prop?.type === 'Identifier' &&
    (prop.value === 'strip' || prop.value === 'lstrip' || prop.value === 'rstrip') &&
    n.args?.length === 1 &&
    callee.object
  ) {
    // Reuse the property's Identifier node as the callee: the interpreter resolves it as a global.
    prop.value = `__py_${prop.value}`;
    n.args = [callee.object, n.args[0]];
    n.callee = prop;
  }
}

export interface TokenLengthStats {
  maxTokenBytes: number;
  maxAlphaRun: number;
  maxDigitRun: number;
}

/** UTF-8 length of a string (lone surrogates count 3, as TextEncoder writes U+FFFD for them). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

export class ChatTokenizer {
  readonly name: string;
  readonly vocabSize: number;
  /** ids of added tokens marked `special` (e.g. `<|im_start|>`) */
  readonly specialIds: ReadonlySet<number>;
  /** added tokens by content (special or not: Qwen3's `<think>` and `<tool_call>` are added but not special) */
  readonly addedTokens: ReadonlyMap<string, number>;
  private readonly tok: Tokenizer;
  private readonly template: Template | null;
  private readonly config: JsonObject;
  private readonly idToTokenCache: (string | undefined)[] = [];
  private readonly vocabRef: Record<string, number>;
  private readonly addedContents: string[];
  private lengthStats: TokenLengthStats | null = null;

  constructor(name: string, tokenizerJson: JsonObject, tokenizerConfig: JsonObject) {
    this.name = name;
    this.config = tokenizerConfig;
    this.tok = new Tokenizer(tokenizerJson, tokenizerConfig);
    const model = tokenizerJson.model as { vocab?: Record<string, number> } | undefined;
    const added = (tokenizerJson.added_tokens as { id: number; content: string; special: boolean }[]) ?? [];
    let maxId = -1;
    for (const id of Object.values(model?.vocab ?? {})) if (id > maxId) maxId = id;
    const special = new Set<number>();
    const addedMap = new Map<string, number>();
    for (const t of added) {
      if (t.id > maxId) maxId = t.id;
      if (t.special) special.add(t.id);
      addedMap.set(t.content, t.id);
    }
    this.vocabSize = maxId + 1;
    this.vocabRef = model?.vocab ?? {};
    this.addedContents = added.map((t) => t.content);
    this.specialIds = special;
    this.addedTokens = addedMap;
    const tpl = tokenizerConfig.chat_template;
    this.template = typeof tpl === 'string' ? new Template(tpl) : null;
    if (this.template) rewriteStripCalls((this.template as unknown as { parsed: unknown }).parsed);
  }

  /**
   * The longest token (in UTF-8 bytes; byte-level vocabularies spell each byte as one character) and the
   * longest token made only of ASCII letters / only of ASCII digits. Computed once, on first use.
   */
  tokenLengthStats(): TokenLengthStats {
    if (this.lengthStats) return this.lengthStats;
    let maxTokenBytes = 1;
    let maxAlphaRun = 1;
    let maxDigitRun = 1;
    for (const k of Object.keys(this.vocabRef)) {
      if (k.length > maxTokenBytes) maxTokenBytes = k.length;
      if (k.length > maxAlphaRun && /^[A-Za-z]+$/.test(k)) maxAlphaRun = k.length;
      if (k.length > maxDigitRun && /^[0-9]+$/.test(k)) maxDigitRun = k.length;
    }
    for (const c of this.addedContents) maxTokenBytes = Math.max(maxTokenBytes, utf8Length(c));
    this.lengthStats = { maxTokenBytes, maxAlphaRun, maxDigitRun };
    return this.lengthStats;
  }

  /**
   * A lower bound on `encode(text).length` that costs one pass over the text, so that a prompt far over a
   * context limit is refused without tokenizing it (a long run without spaces costs the BPE seconds). Every
   * token is a piece of the text, so the count is at least bytes / longest token; and the tokens lying wholly
   * inside a run of ASCII letters (digits) are letters (digits) only, so a run of n characters holds at least
   * (n − 2·(longest − 1)) / longest-letters-token of them (tokens that reach outside cover at most
   * longest − 1 characters of it at each end).
   */
  minTokenCount(text: string): number {
    const { maxTokenBytes, maxAlphaRun, maxDigitRun } = this.tokenLengthStats();
    const byBytes = Math.ceil(utf8Length(text) / maxTokenBytes);
    const margin = 2 * (maxTokenBytes - 1);
    let byRuns = 0;
    const runs = /[A-Za-z]+|[0-9]+/g;
    for (let m = runs.exec(text); m !== null; m = runs.exec(text)) {
      const inner = m[0].length - margin;
      if (inner <= 0) continue;
      const c = m[0].charCodeAt(0);
      byRuns += Math.ceil(inner / (c >= 48 && c <= 57 ? maxDigitRun : maxAlphaRun));
    }
    return Math.max(byBytes, byRuns);
  }

  /** Token ids of `text`; special-token strings in the text map to their ids; no BOS/EOS is added. */
  encode(text: string): Int32Array {
    return Int32Array.from(this.tok.encode(text, { add_special_tokens: false }).ids);
  }

  decode(ids: ArrayLike<number>, opts: { skipSpecialTokens?: boolean } = {}): string {
    // The underlying decoder rejects an empty list; the empty sequence is the empty string.
    if (ids.length === 0) return '';
    return this.tok.decode(Array.from(ids), { skip_special_tokens: opts.skipSpecialTokens ?? false });
  }

  /** The vocabulary string of one id (byte-level form, e.g. 'ĠHello'), or undefined when out of range. */
  tokenString(id: number): string | undefined {
    if (id < 0 || id >= this.vocabSize) return undefined;
    let s = this.idToTokenCache[id];
    if (s === undefined) {
      s = this.tok.id_to_token(id) ?? undefined;
      this.idToTokenCache[id] = s;
    }
    return s;
  }

  /** The text one id decodes to on its own (may be a partial UTF-8 sequence, shown as U+FFFD). */
  tokenText(id: number): string {
    return this.decode([id]);
  }

  /** The end-of-sequence token string from tokenizer_config (Qwen3: `<|im_end|>`), '' when none. */
  get eosToken(): string {
    return this.specialString('eos_token');
  }

  get hasChatTemplate(): boolean {
    return this.template !== null;
  }

  /** Renders messages with the tokenizer's chat template, as an OpenAI-compatible server does per request. */
  renderChat(messages: ChatMessage[], opts: RenderOptions): string {
    if (!this.template)
      throw new Error(`tokenizer '${this.name}' has no chat_template in its tokenizer_config`);
    const vars: Record<string, unknown> = {
      messages: messages.map((m) => ({ ...m, content: m.content ?? '' })),
      add_generation_prompt: opts.addGenerationPrompt,
      bos_token: this.specialString('bos_token'),
      eos_token: this.specialString('eos_token'),
      pad_token: this.specialString('pad_token'),
    };
    if (opts.tools?.length) vars.tools = opts.tools;
    Object.assign(vars, PY_STRIP);
    if (opts.enableThinking !== undefined) vars.enable_thinking = opts.enableThinking;
    return this.template.render(vars);
  }

  /** encode(renderChat(...)): what "retokenize" means for a call. */
  encodeChat(messages: ChatMessage[], opts: RenderOptions): Int32Array {
    return this.encode(this.renderChat(messages, opts));
  }

  private specialString(key: string): string {
    const v = this.config[key];
    if (typeof v === 'string') return v;
    if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
      return (v as { content: string }).content;
    return '';
  }
}
