/**
 * Byte-level BPE (Sennrich et al. 2016; byte-level as in GPT-2, Radford et al. 2019) trained from text and
 * written as a Hugging Face `tokenizer.json`, so any HF-compatible loader (here @huggingface/tokenizers) reads
 * it like a real model's tokenizer.
 *
 * Training: split text on the added special tokens, pre-tokenize each piece with the GPT-2 regex (what the
 * ByteLevel pre-tokenizer with use_regex does), map bytes to the GPT-2 printable alphabet, count words, then
 * repeatedly merge the most frequent adjacent pair (ties broken by the pair's text, so training is
 * deterministic) until the vocabulary is full.
 */

/** GPT-2's reversible byte → printable character map (bytes_to_unicode in the GPT-2 encoder). */
export function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const map: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (keep.includes(b)) map[b] = String.fromCodePoint(b);
    else map[b] = String.fromCodePoint(256 + extra++);
  }
  return map;
}

/** The GPT-2 pre-tokenization pattern (contractions, letters, numbers, other, whitespace). */
export const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

export interface SpecialToken {
  content: string;
  /** HF `special`: skipped by decode(…, skip_special_tokens). Qwen marks <think>/<tool_call> as not special. */
  special: boolean;
}

/** Special tokens of the Qwen-style chat format, added after the learned vocabulary. */
export const CHAT_SPECIAL_TOKENS: SpecialToken[] = [
  { content: '<|endoftext|>', special: true },
  { content: '<|im_start|>', special: true },
  { content: '<|im_end|>', special: true },
  { content: '<think>', special: false },
  { content: '</think>', special: false },
  { content: '<tool_call>', special: false },
  { content: '</tool_call>', special: false },
];

export interface TrainedBpe {
  /** token string (byte-level alphabet) → id; ids 0..255 are the single bytes. */
  vocab: Map<string, number>;
  merges: [string, string][];
  special: SpecialToken[];
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Trains byte-level BPE so that learned tokens + specials = vocabSize. */
export function trainBpe(
  texts: Iterable<string>,
  vocabSize: number,
  special = CHAT_SPECIAL_TOKENS,
): TrainedBpe {
  const learned = vocabSize - special.length;
  if (!Number.isInteger(vocabSize) || learned < 256)
    throw new Error(
      `train-tokenizer: vocabulary size ${vocabSize} leaves no room: 256 bytes + ${special.length} special tokens`,
    );
  const byteChar = bytesToUnicode();
  const enc = new TextEncoder();
  const splitter = special.length
    ? new RegExp(special.map((s) => escapeRegex(s.content)).join('|'), 'g')
    : null;
  const counts = new Map<string, number>();
  for (const text of texts)
    for (const piece of splitter ? text.split(splitter) : [text])
      for (const m of piece.matchAll(GPT2_PATTERN)) {
        const word = Array.from(enc.encode(m[0]), (b) => byteChar[b]).join('');
        counts.set(word, (counts.get(word) ?? 0) + 1);
      }
  const vocab = new Map<string, number>();
  byteChar.forEach((ch, i) => {
    vocab.set(ch, i);
  });
  // Words as symbol arrays; sorted so that iteration order (and hence tie-breaking) never depends on input order.
  const words = [...counts.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([w, c]) => ({ syms: Array.from(w), count: c }));
  const merges: [string, string][] = [];
  while (vocab.size < learned) {
    const pairs = new Map<string, number>();
    for (const w of words)
      for (let i = 0; i + 1 < w.syms.length; i++) {
        const key = `${w.syms[i]}\u0000${w.syms[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + w.count);
      }
    let best = '';
    let bestCount = 0;
    for (const [k, c] of pairs)
      if (c > bestCount || (c === bestCount && k < best)) [best, bestCount] = [k, c];
    if (bestCount < 2) break; // nothing left worth merging: the vocabulary ends up smaller
    const [a, b] = best.split('\u0000');
    const merged = a + b;
    merges.push([a, b]);
    if (!vocab.has(merged)) vocab.set(merged, vocab.size);
    for (const w of words) {
      if (w.syms.length < 2) continue;
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) {
          out.push(merged);
          i++;
        } else out.push(w.syms[i]);
      }
      w.syms = out;
    }
  }
  return { vocab, merges, special };
}

/** The HF tokenizer.json object for a trained BPE (specials get ids after the learned vocabulary). */
export function toTokenizerJson(bpe: TrainedBpe): Record<string, unknown> {
  const base = bpe.vocab.size;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: bpe.special.map((s, i) => ({
      id: base + i,
      content: s.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: s.special,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(bpe.vocab),
      merges: bpe.merges,
    },
  };
}

/**
 * A Qwen-style chat template (ChatML with <think> reasoning and <tool_call> JSON tool calls, the shape of the
 * Qwen2.5/Qwen3 templates, written for this tokenizer). Messages: system | user | assistant (optional
 * reasoning_content, tool_calls) | tool. `tools` lists function schemas; `add_generation_prompt` opens an
 * assistant turn; `enable_thinking=false` pre-fills an empty think block.
 */
export const CHAT_TEMPLATE = [
  '{%- if tools %}',
  '{{- "<|im_start|>system\\n" }}',
  '{%- if messages[0].role == "system" %}{{- messages[0].content + "\\n\\n" }}{%- endif %}',
  '{{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}',
  '{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}',
  '{{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}',
  '{%- elif messages[0].role == "system" %}',
  '{{- "<|im_start|>system\\n" + messages[0].content + "<|im_end|>\\n" }}',
  '{%- endif %}',
  '{%- for message in messages %}',
  '{%- if message.role == "user" or (message.role == "system" and not loop.first) %}',
  '{{- "<|im_start|>" + message.role + "\\n" + message.content + "<|im_end|>\\n" }}',
  '{%- elif message.role == "assistant" %}',
  '{{- "<|im_start|>assistant\\n" }}',
  '{%- if message.reasoning_content %}{{- "<think>\\n" + message.reasoning_content + "\\n</think>\\n\\n" }}{%- endif %}',
  '{%- if message.content %}{{- message.content }}{%- endif %}',
  '{%- if message.tool_calls %}',
  '{%- for tool_call in message.tool_calls %}',
  '{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}',
  '{%- if loop.first and not message.content %}{{- "<tool_call>\\n" }}{%- else %}{{- "\\n<tool_call>\\n" }}{%- endif %}',
  '{{- "{\\"name\\": \\"" + tool_call.name + "\\", \\"arguments\\": " }}',
  '{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}',
  '{{- "}\\n</tool_call>" }}',
  '{%- endfor %}',
  '{%- endif %}',
  '{{- "<|im_end|>\\n" }}',
  '{%- elif message.role == "tool" %}',
  '{%- if loop.first or messages[loop.index0 - 1].role != "tool" %}{{- "<|im_start|>user" }}{%- endif %}',
  '{{- "\\n<tool_response>\\n" + message.content + "\\n</tool_response>" }}',
  '{%- if loop.last or messages[loop.index0 + 1].role != "tool" %}{{- "<|im_end|>\\n" }}{%- endif %}',
  '{%- endif %}',
  '{%- endfor %}',
  '{%- if add_generation_prompt %}',
  '{{- "<|im_start|>assistant\\n" }}',
  '{%- if enable_thinking is defined and enable_thinking is false %}{{- "<think>\\n\\n</think>\\n\\n" }}{%- endif %}',
  '{%- endif %}',
].join('');

/** tokenizer_config.json: chat template, special tokens, end-of-turn token. */
export function toTokenizerConfig(bpe: TrainedBpe, modelMaxLength: number): Record<string, unknown> {
  const base = bpe.vocab.size;
  const decoder: Record<string, unknown> = {};
  bpe.special.forEach((s, i) => {
    decoder[String(base + i)] = {
      content: s.content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: s.special,
    };
  });
  return {
    add_prefix_space: false,
    added_tokens_decoder: decoder,
    additional_special_tokens: bpe.special.filter((s) => s.special).map((s) => s.content),
    bos_token: null,
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: modelMaxLength,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
}
