/**
 * What a toy harness is: a seeded task generator (train/val splits), an agent loop that talks only to a
 * ChatClient, a reward function, and a scripted expert that produces the text a good policy would write
 * (used by the scripted engine for demonstrations and tests).
 *
 * The history behaviours below are the ways real harnesses rewrite their context between calls; each one
 * breaks the trajectory merge rule (next prompt ids = previous prompt ids + response ids + new tokens) in its
 * own way, which is what they exist to exercise.
 */
import type { ChatMessage, ToolDefinition } from '../core/trace/types';
import type { ChatClient } from './client';
import { stripThink } from './toolParser';

export const BEHAVIOURS = [
  'strip-think',
  'sliding-window',
  'summarize',
  'reformat-tool-output',
  'changing-system-prompt',
] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

export function isBehaviour(s: string): s is Behaviour {
  return (BEHAVIOURS as readonly string[]).includes(s);
}

export type Split = 'train' | 'val';

export interface TaskBase {
  id: string;
  split: Split;
}

export interface HarnessOptions {
  behaviours: readonly Behaviour[];
  maxTurns?: number;
  maxTokens?: number;
}

export interface HarnessOutcome {
  reward: number;
  turns: number;
  /** why the loop ended: 'answered', 'max-turns', … */
  ended: string;
  info?: Record<string, unknown>;
}

/**
 * One difficulty level of a harness: what makes its tasks harder (search: hops, coding: program size and
 * tests, instruction: constraints), and how the reward is defined, with the upstream reward it mirrors.
 */
export interface TaskLevel {
  level: number;
  label: string;
  description: string;
}

export interface Harness<T extends TaskBase = TaskBase> {
  readonly name: string;
  /** the harness's difficulty levels, easiest first (empty: one kind of task) */
  readonly levels: readonly TaskLevel[];
  /** the reward definition and its upstream analogue (README's harness table shows it) */
  readonly reward: string;
  /**
   * `n` tasks of a split; the same (split, seed, n, level) always gives the same tasks, and splits never
   * overlap. `level` null (the default) draws the harness's historical mix of levels; a level draws only
   * tasks of that level, from their own stream.
   */
  makeTasks(split: Split, seed: number, n: number, level?: number | null): T[];
  /** the level a task belongs to (read from its content, so recorded tasks keep their level) */
  levelOf(task: T): number;
  /**
   * `n` pre-training tasks for SFT (`lab sft --pretrain-tasks`): the same kinds of task over generated content
   * that neither split uses (fresh names, topics). Their answers cannot be memorised: only copying what a
   * task names from its context lowers the loss on them, which is what validation, over content training never
   * shows, asks for. Absent where the harness asks nothing of its context to copy.
   */
  pretrainTasks?(seed: number, n: number, level?: number | null): T[];
  run(client: ChatClient, task: T, opts: HarnessOptions): Promise<HarnessOutcome>;
  /** The expert's next assistant text given the messages of the call it answers. */
  expert(task: T, messages: ChatMessage[], tools?: ToolDefinition[]): string;
}

/** Checks a requested level against a harness's levels; a clear error names the valid ones. */
export function checkLevel(
  h: { name: string; levels: readonly TaskLevel[] },
  level: number | null | undefined,
): void {
  if (level === null || level === undefined) return;
  if (!h.levels.some((l) => l.level === level))
    throw new Error(
      h.levels.length === 0
        ? `harness '${h.name}' has no difficulty levels (got level ${level}; use null)`
        : `harness '${h.name}' has levels ${h.levels.map((l) => l.level).join(', ')}; got ${level}`,
    );
}

/** Number of assistant turns already in the (request) messages. */
export function assistantTurns(messages: ChatMessage[]): number {
  return messages.filter((m) => m.role === 'assistant').length;
}

/** Splits history after the first user message into turns: an assistant message plus what followed it. */
function turnsOf(history: ChatMessage[]): ChatMessage[][] {
  const turns: ChatMessage[][] = [];
  for (const m of history) {
    if (m.role === 'assistant' || turns.length === 0) turns.push([m]);
    else turns[turns.length - 1].push(m);
  }
  return turns;
}

function compactJson(s: string): string {
  try {
    return JSON.stringify(JSON.parse(s));
  } catch {
    return s;
  }
}

/**
 * The harness's true history plus the view of it sent on each call. `system(turn)` gives the system prompt;
 * only the 'changing-system-prompt' behaviour lets it depend on the turn.
 */
export class Conversation {
  readonly history: ChatMessage[] = [];
  turn = 0;
  constructor(
    private readonly system: (turn: number) => string,
    first: ChatMessage,
    private readonly behaviours: readonly Behaviour[],
    private readonly summarize: (dropped: ChatMessage[]) => string = defaultSummary,
    private readonly windowTurns = 1,
  ) {
    this.history.push(first);
  }

  has(b: Behaviour): boolean {
    return this.behaviours.includes(b);
  }

  add(...msgs: ChatMessage[]): void {
    this.history.push(...msgs);
  }

  /** The messages for the next call. */
  view(): ChatMessage[] {
    const sys = this.system(this.has('changing-system-prompt') ? this.turn : 0);
    const [first, ...rest] = this.history;
    let turns = turnsOf(rest);
    let summary: ChatMessage | null = null;
    if ((this.has('sliding-window') || this.has('summarize')) && turns.length > this.windowTurns) {
      const dropped = turns.slice(0, turns.length - this.windowTurns).flat();
      turns = turns.slice(turns.length - this.windowTurns);
      if (this.has('summarize')) summary = { role: 'user', content: this.summarize(dropped) };
    }
    let msgs = turns.flat();
    const lastAssistant = msgs.map((m) => m.role).lastIndexOf('assistant');
    msgs = msgs.map((m, i) => {
      let out = m;
      // Earlier assistant turns lose their reasoning, as many harnesses (and chat UIs) do to save context.
      if (this.has('strip-think') && m.role === 'assistant' && m.content?.includes('</think>'))
        out = { ...out, content: stripThink(m.content) };
      // Tool traffic the model has already acted on is normalised: compact JSON arguments, collapsed output.
      if (this.has('reformat-tool-output') && i < lastAssistant) {
        if (m.role === 'assistant' && m.tool_calls)
          out = {
            ...out,
            tool_calls: m.tool_calls.map((tc) => ({
              ...tc,
              function: { ...tc.function, arguments: compactJson(tc.function.arguments) },
            })),
          };
        if (m.role === 'tool' && m.content) out = { ...out, content: m.content.replace(/\s+/g, ' ').trim() };
      }
      return out;
    });
    return [{ role: 'system', content: sys }, first, ...(summary ? [summary] : []), ...msgs];
  }
}

function defaultSummary(dropped: ChatMessage[]): string {
  const calls = dropped
    .flatMap((m) => m.tool_calls ?? [])
    .map((tc) => `${tc.function.name}(${tc.function.arguments})`);
  const n = dropped.filter((m) => m.role === 'assistant').length;
  return `Summary of the ${n} earlier step(s): ${calls.length ? `called ${calls.join('; ')}` : 'no tool calls'}.`;
}

/** The final text of an assistant message, without reasoning. */
export function answerText(content: string | null | undefined): string {
  return stripThink(content ?? '').trim();
}
