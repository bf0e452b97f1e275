/**
 * Turns engine text into an OpenAI assistant message the way vLLM's `hermes` tool parser does for Qwen-style
 * output: every `<tool_call>{"name": …, "arguments": {…}}</tool_call>` block becomes a `tool_calls` entry whose
 * `arguments` is the arguments object re-serialized like Python's `json.dumps(…, ensure_ascii=False)`; the text
 * before the first block is the content. If any block is not valid JSON with a string `name`, the whole text is
 * returned as plain content (vLLM falls back the same way), so the harness sees what the model wrote.
 */
import type { ToolCall } from '../core/trace/types';

export interface ParsedAssistant {
  content: string | null;
  toolCalls: ToolCall[];
  /** why tool-call parsing fell back to plain content, when it did */
  parseError?: string;
}

const BLOCK = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;

/** Python `json.dumps(v, ensure_ascii=False)`: `", "` and `": "` separators, the formatting vLLM re-emits. */
export function pythonJsonDumps(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : JSON.stringify(v);
  if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pythonJsonDumps).join(', ')}]`;
  const parts = Object.entries(v as Record<string, unknown>).map(
    ([k, x]) => `${JSON.stringify(k)}: ${pythonJsonDumps(x)}`,
  );
  return `{${parts.join(', ')}}`;
}

export function parseAssistantText(text: string, idPrefix: string): ParsedAssistant {
  const start = text.indexOf('<tool_call>');
  if (start < 0) return { content: text, toolCalls: [] };
  const toolCalls: ToolCall[] = [];
  for (const m of text.slice(start).matchAll(BLOCK)) {
    const raw = m[1].trim();
    let obj: unknown;
    try {
      obj = JSON.parse(raw);
    } catch (e) {
      return {
        content: text,
        toolCalls: [],
        parseError: `tool call ${toolCalls.length} is not valid JSON: ${(e as Error).message}`,
      };
    }
    const o = obj as { name?: unknown; arguments?: unknown };
    if (typeof obj !== 'object' || obj === null || typeof o.name !== 'string')
      return {
        content: text,
        toolCalls: [],
        parseError: `tool call ${toolCalls.length} has no string "name"`,
      };
    const args = o.arguments ?? {};
    toolCalls.push({
      id: `${idPrefix}${toolCalls.length}`,
      type: 'function',
      function: { name: o.name, arguments: typeof args === 'string' ? args : pythonJsonDumps(args) },
    });
  }
  // The template puts one '\n' between content and the first <tool_call>; trailing whitespace is that separator.
  const content = text.slice(0, start).replace(/\s+$/, '');
  return { content: content === '' ? null : content, toolCalls };
}

/** The assistant text without its `<think>…</think>` block (what a reasoning parser would split off). */
export function stripThink(text: string): string {
  const end = text.lastIndexOf('</think>');
  if (end < 0) return text;
  return text.slice(end + '</think>'.length).replace(/^\n+/, '');
}
