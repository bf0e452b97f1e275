/**
 * Writes our own rollouts (the bundled samples, made by `lab rollout`) in the record shapes of other
 * frameworks, for the samples under public/samples/frameworks/ (make-framework-samples.ts), the importer
 * tests and the fuzzer's corpus. Each writer follows the field mapping of docs/TRACE_FORMAT.md backwards:
 * - NeMo Gym: one rollout per line, its calls as Responses output items with the vLLM ids on each
 *   generation's last item; the context is written as it grows (observations between generations);
 * - verl: `_dump_generations` lines of the first call, decoded with skip_special_tokens=True;
 * - OpenAI: one `{request, response}` per call, Chat Completions (vLLM ids and log-probs) or Responses (text);
 * - SkyRL: `dump_per_dataset_eval_results` lines, decoded with special tokens.
 */
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import type { ChatMessage, ModelCall, Rollout } from '../../src/core/trace/types';

type Rec = Record<string, unknown>;

const lp = (a: Float32Array | undefined) =>
  a ? Array.from(a, (x) => (Number.isNaN(x) ? null : x)) : undefined;

function responsesTools(c: ModelCall): Rec[] | undefined {
  return c.request.tools?.map((t) => ({
    type: 'function',
    name: t.function.name,
    description: t.function.description,
    parameters: t.function.parameters,
  }));
}

/** A chat message as Responses input/output items. */
function messageItems(m: ChatMessage, k: number): Rec[] {
  if (m.role === 'tool')
    return [{ type: 'function_call_output', call_id: m.tool_call_id ?? '', output: m.content ?? '' }];
  if (m.role !== 'assistant')
    return [{ type: 'message', role: m.role, content: [{ type: 'input_text', text: m.content ?? '' }] }];
  const items: Rec[] = [];
  if (m.reasoning_content)
    items.push({
      type: 'reasoning',
      id: `rs_${k}`,
      summary: [{ type: 'summary_text', text: m.reasoning_content }],
    });
  if (m.content !== null && m.content !== '')
    items.push({
      type: 'message',
      id: `msg_${k}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: m.content, annotations: [] }],
    });
  for (const t of m.tool_calls ?? [])
    items.push({
      type: 'function_call',
      id: `fc_${t.id}`,
      call_id: t.id,
      name: t.function.name,
      arguments: t.function.arguments,
      status: 'completed',
    });
  if (items.length === 0)
    items.push({
      type: 'message',
      id: `msg_${k}`,
      role: 'assistant',
      content: [{ type: 'output_text', text: '' }],
    });
  return items;
}

/** NeMo Gym rollout lines; `_ng_task_index` numbers the groups, `_ng_rollout_index` the samples in each. */
export function toNemoGymLines(rollouts: Rollout[]): string[] {
  const groups = new Map<string, number>();
  const inGroup = new Map<string, number>();
  return rollouts.map((r) => {
    if (!groups.has(r.dataId)) groups.set(r.dataId, groups.size);
    const task = groups.get(r.dataId) as number;
    const idx = inGroup.get(r.dataId) ?? 0;
    inGroup.set(r.dataId, idx + 1);
    const first = r.calls[0];
    const input = first ? first.request.messages.flatMap((m, k) => messageItems(m, k)) : [];
    const output: Rec[] = [];
    let seen = first ? first.request.messages.length : 0;
    r.calls.forEach((c, k) => {
      // observations since the previous generation: what this prompt has beyond the context so far
      if (k > 0) {
        const more = c.request.messages.slice(seen + 1);
        for (const m of more) output.push(...messageItems(m, 1000 + k));
      }
      seen = c.request.messages.length;
      const items = c.response ? messageItems(c.response.message, k) : [];
      if (items.length && c.promptTokenIds && c.responseTokenIds) {
        const last = items[items.length - 1];
        last.prompt_token_ids = Array.from(c.promptTokenIds);
        last.generation_token_ids = Array.from(c.responseTokenIds);
        last.generation_log_probs = lp(c.responseLogProbs) ?? c.responseTokenIds.map(() => 0);
      }
      output.push(...items);
    });
    const last = r.calls[r.calls.length - 1];
    const line: Rec = {
      responses_create_params: {
        input,
        tools: first ? responsesTools(first) : [],
        temperature: 1.0,
        max_output_tokens: first?.request.sampling.max_tokens,
      },
      response: {
        id: `resp_${r.rolloutId}`,
        object: 'response',
        model: first?.request.model ?? 'policy',
        output,
        incomplete_details:
          last?.response?.finishReason === 'length' ? { reason: 'max_output_tokens' } : null,
      },
      reward: r.finalReward,
      _ng_task_index: task,
      _ng_rollout_index: idx,
    };
    return JSON.stringify(line);
  });
}

/** verl `_dump_generations` lines: the first call's prompt and response ids, decoded without special tokens. */
export function toVerlDumpLines(rollouts: Rollout[], tok: ChatTokenizer): string[] {
  return rollouts
    .filter((r) => r.calls[0]?.promptTokenIds && r.calls[0]?.responseTokenIds)
    .map((r) => {
      const c = r.calls[0];
      return JSON.stringify({
        input: tok.decode(c.promptTokenIds as Int32Array, { skipSpecialTokens: true }),
        output: tok.decode(c.responseTokenIds as Int32Array, { skipSpecialTokens: true }),
        gts: (r.metadata.task as Rec | undefined)?.answer ?? null,
        score: r.finalReward,
        step: r.step ?? 1,
        acc: r.finalReward === 1,
      });
    });
}

/** SkyRL eval dump lines: the first call, decoded with special tokens. */
export function toSkyrlLines(rollouts: Rollout[], tok: ChatTokenizer): string[] {
  return rollouts
    .filter((r) => r.calls[0]?.promptTokenIds && r.calls[0]?.responseTokenIds)
    .map((r) => {
      const c = r.calls[0];
      return JSON.stringify({
        input_prompt: tok.decode(c.promptTokenIds as Int32Array),
        output_response: tok.decode(c.responseTokenIds as Int32Array),
        score: r.finalReward,
        stop_reason: c.response?.finishReason ?? null,
        env_class: String(r.metadata.harness ?? 'lab'),
        env_extras: { task: r.dataId },
        data_source: String(r.metadata.harness ?? 'lab'),
      });
    });
}

function chatMessage(m: ChatMessage): Rec {
  const o: Rec = { role: m.role, content: m.content };
  if (m.tool_calls) o.tool_calls = m.tool_calls;
  if (m.tool_call_id) o.tool_call_id = m.tool_call_id;
  if (m.reasoning_content) o.reasoning_content = m.reasoning_content;
  return o;
}

/** One Chat Completions `{request, response}` per call, with vLLM's ids and log-probs. */
export function toOpenAiChatLines(rollouts: Rollout[]): string[] {
  return rollouts.flatMap((r) =>
    r.calls.map((c, k) => {
      const request: Rec = {
        model: c.request.model ?? 'policy',
        messages: c.request.messages.map(chatMessage),
        max_tokens: c.request.sampling.max_tokens,
        logprobs: true,
      };
      if (c.request.tools) request.tools = c.request.tools;
      const choice: Rec = {
        index: 0,
        message: c.response ? chatMessage(c.response.message) : { role: 'assistant', content: null },
        finish_reason: c.response?.finishReason ?? 'stop',
      };
      const response: Rec = {
        id: `chatcmpl-${r.rolloutId}-${k}`,
        object: 'chat.completion',
        model: 'policy',
      };
      if (c.promptTokenIds && c.responseTokenIds) {
        response.prompt_token_ids = Array.from(c.promptTokenIds);
        choice.token_ids = Array.from(c.responseTokenIds);
        if (c.responseLogProbs)
          choice.logprobs = {
            content: Array.from(c.responseTokenIds, (id, i) => ({
              token: `token_id:${id}`,
              logprob: Number.isNaN(c.responseLogProbs?.[i] as number) ? null : c.responseLogProbs?.[i],
            })),
          };
      }
      response.choices = [choice];
      return JSON.stringify({ request, response });
    }),
  );
}

/** One Responses `{request, response}` per call, text only (as OpenAI's own API logs them). */
export function toOpenAiResponsesLines(rollouts: Rollout[]): string[] {
  return rollouts.flatMap((r) =>
    r.calls.map((c, k) => {
      const request: Rec = {
        model: c.request.model ?? 'policy',
        input: c.request.messages.flatMap((m, j) => messageItems(m, j)),
        max_output_tokens: c.request.sampling.max_tokens,
      };
      const tools = responsesTools(c);
      if (tools) request.tools = tools;
      const response: Rec = {
        id: `resp_${r.rolloutId}_${k}`,
        object: 'response',
        model: 'policy',
        output: c.response ? messageItems(c.response.message, k) : [],
        incomplete_details: c.response?.finishReason === 'length' ? { reason: 'max_output_tokens' } : null,
      };
      return JSON.stringify({ request, response });
    }),
  );
}
