/**
 * Search: multi-turn question answering with one tool, `search`, over an in-memory corpus of invented facts
 * (so no model can know the answers beforehand). Questions take one or two hops ("what river flows through the
 * capital of X?" needs the country page, then the city page). The final answer is the assistant text (or its
 * <answer>…</answer> part) of the first reply without a tool call; reward 1 for an exact match after
 * normalisation (case, surrounding punctuation and whitespace), else 0.
 */
import { mulberry32 } from '../core/random';
import type { ChatMessage, ToolDefinition } from '../core/trace/types';
import type { ChatClient } from './client';
import { hash32 } from './engines';
import {
  answerText,
  Conversation,
  type Harness,
  type HarnessOptions,
  type HarnessOutcome,
  type Split,
  type TaskBase,
} from './harness';
import { pythonJsonDumps } from './toolParser';

export interface Doc {
  title: string;
  text: string;
}

export interface SearchTask extends TaskBase {
  question: string;
  answer: string;
  /** the queries an expert issues, in order */
  hops: string[];
}

const SYL = [
  'ka',
  'lo',
  've',
  'mir',
  'dra',
  'sel',
  'tun',
  'or',
  'bex',
  'qua',
  'nim',
  'tal',
  'ris',
  'ul',
  'fen',
  'gor',
  'zi',
  'han',
  'pel',
  'ost',
];

function name(rand: () => number, parts: number): string {
  let s = '';
  for (let i = 0; i < parts; i++) s += SYL[Math.floor(rand() * SYL.length)];
  return s[0].toUpperCase() + s.slice(1);
}

interface Country {
  name: string;
  capital: string;
  currency: string;
}
interface City {
  name: string;
  country: string;
  founded: number;
  river: string;
}

/** The corpus is fixed (its own seed), shared by all tasks and both splits. */
function buildWorld(): { countries: Country[]; cities: City[]; docs: Doc[] } {
  const rand = mulberry32(20240611);
  const used = new Set<string>();
  const fresh = (parts: number) => {
    for (;;) {
      const n = name(rand, parts);
      if (!used.has(n)) {
        used.add(n);
        return n;
      }
    }
  };
  const countries: Country[] = [];
  const cities: City[] = [];
  for (let i = 0; i < 24; i++) {
    const c: Country = { name: fresh(3), capital: '', currency: fresh(2).toLowerCase() };
    for (let j = 0; j < 3; j++) {
      const city: City = {
        name: fresh(2 + (j % 2)),
        country: c.name,
        founded: 800 + Math.floor(rand() * 1200),
        river: fresh(2),
      };
      cities.push(city);
      if (j === 0) c.capital = city.name;
    }
    countries.push(c);
  }
  const docs: Doc[] = [
    ...countries.map((c) => ({
      title: c.name,
      text: `${c.name} is a country. Its capital is ${c.capital}. Its currency is the ${c.currency}.`,
    })),
    ...cities.map((c) => ({
      title: c.name,
      text: `${c.name} is a city in ${c.country}. It was founded in ${c.founded}. The river ${c.river} flows through ${c.name}.`,
    })),
  ];
  return { countries, cities, docs };
}

const WORLD = buildWorld();
export const SEARCH_CORPUS: readonly Doc[] = WORLD.docs;

function terms(s: string): string[] {
  return s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Top-k documents by summed inverse document frequency of the query terms they contain. */
export function searchCorpus(query: string, k = 3): Doc[] {
  const q = new Set(terms(query));
  if (q.size === 0) return [];
  const df = new Map<string, number>();
  const docTerms = SEARCH_CORPUS.map((d) => new Set(terms(`${d.title} ${d.text}`)));
  for (const ts of docTerms) for (const t of ts) if (q.has(t)) df.set(t, (df.get(t) ?? 0) + 1);
  const scored = SEARCH_CORPUS.map((d, i) => {
    let s = 0;
    for (const t of q) if (docTerms[i].has(t)) s += Math.log(1 + SEARCH_CORPUS.length / (df.get(t) ?? 1));
    if (q.has(d.title.toLowerCase())) s += 5;
    return { d, s };
  }).filter((x) => x.s > 0);
  scored.sort((a, b) => b.s - a.s);
  return scored.slice(0, k).map((x) => x.d);
}

export const SEARCH_TOOL: ToolDefinition = {
  type: 'function',
  function: {
    name: 'search',
    description: 'Search the encyclopedia. Returns up to 3 matching articles.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'keywords' } },
      required: ['query'],
    },
  },
};

/** Runs one tool call; problems become the tool's output, which the model sees as its next observation. */
export function runSearchTool(name: string, args: string): string {
  if (name !== 'search') return `error: unknown tool '${name}'; the only tool is 'search'`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return `error: arguments are not valid JSON: ${args.slice(0, 200)}`;
  }
  const q = (parsed as { query?: unknown })?.query;
  if (typeof q !== 'string' || q.trim() === '')
    return 'error: search needs a non-empty string argument "query"';
  const hits = searchCorpus(q);
  if (hits.length === 0) return `no results for "${q}"`;
  return hits.map((d, i) => `[${i + 1}] ${d.title}\n${d.text}`).join('\n\n');
}

export function normalizeAnswer(s: string): string {
  return s
    .toLowerCase()
    .replace(/^[\s"'.,:;!?]+|[\s"'.,:;!?]+$/g, '')
    .replace(/\s+/g, ' ');
}

export function extractAnswer(text: string): string {
  const m = /<answer>([\s\S]*?)<\/answer>/.exec(text);
  return m ? m[1] : text;
}

function makeTask(split: Split, seed: number, i: number): SearchTask {
  const rand = mulberry32(hash32(`search:${split}:${seed}:${i}`));
  // Disjoint countries per split (every fourth country is validation).
  const countries = WORLD.countries.filter((_, j) => (j % 4 === 0) === (split === 'val'));
  const country = countries[Math.floor(rand() * countries.length)];
  const cities = WORLD.cities.filter((c) => c.country === country.name);
  const id = `search-${split}-${seed}-${i}`;
  const kind = Math.floor(rand() * 4);
  if (kind === 0) {
    const city = cities[Math.floor(rand() * cities.length)];
    return {
      id,
      split,
      question: `In which year was the city of ${city.name} founded?`,
      answer: String(city.founded),
      hops: [city.name],
    };
  }
  if (kind === 1)
    return {
      id,
      split,
      question: `What is the currency of ${country.name}?`,
      answer: country.currency,
      hops: [country.name],
    };
  const capital = WORLD.cities.find((c) => c.name === country.capital) as City;
  if (kind === 2)
    return {
      id,
      split,
      question: `Which river flows through the capital of ${country.name}?`,
      answer: capital.river,
      hops: [country.name, capital.name],
    };
  return {
    id,
    split,
    question: `In which year was the capital of ${country.name} founded?`,
    answer: String(capital.founded),
    hops: [country.name, capital.name],
  };
}

const SYSTEM = (turn: number) =>
  `You answer questions using the search tool. When you know the answer, reply with <answer>ANSWER</answer> and nothing else.${turn > 0 ? ` This is step ${turn + 1}.` : ''}`;

export const searchHarness: Harness<SearchTask> = {
  name: 'search',
  makeTasks(split, seed, n) {
    return Array.from({ length: n }, (_, i) => makeTask(split, seed, i));
  },

  async run(client: ChatClient, task: SearchTask, opts: HarnessOptions): Promise<HarnessOutcome> {
    const conv = new Conversation(SYSTEM, { role: 'user', content: task.question }, opts.behaviours);
    const maxTurns = opts.maxTurns ?? 6;
    let toolErrors = 0;
    for (let turn = 0; turn < maxTurns; turn++) {
      conv.turn = turn;
      const res = await client.complete({
        messages: conv.view(),
        tools: [SEARCH_TOOL],
        max_tokens: opts.maxTokens ?? 300,
      });
      const choice = res.choices?.[0];
      const msg = choice?.message ?? { role: 'assistant', content: '' };
      // OpenAI allows a null content only next to tool calls; an empty answer is sent back as ''.
      const assistant: ChatMessage = {
        role: 'assistant',
        content: msg.content ?? (msg.tool_calls?.length ? null : ''),
      };
      if (msg.tool_calls?.length) assistant.tool_calls = msg.tool_calls;
      conv.add(assistant);
      if (choice?.finish_reason === 'length') {
        conv.add({
          role: 'user',
          content:
            'Your reply was cut off at the length limit. Be brief: call search or give <answer>…</answer>.',
        });
        continue;
      }
      if (msg.tool_calls?.length) {
        for (const tc of msg.tool_calls) {
          const out = runSearchTool(tc.function.name, tc.function.arguments);
          if (out.startsWith('error:')) toolErrors++;
          conv.add({ role: 'tool', tool_call_id: tc.id, content: out });
        }
        continue;
      }
      const text = answerText(msg.content);
      if (text.includes('<tool_call>')) {
        toolErrors++;
        conv.add({
          role: 'user',
          content:
            'Your tool call could not be parsed. Write it as <tool_call>\n{"name": "search", "arguments": {"query": "…"}}\n</tool_call>.',
        });
        continue;
      }
      const answer = extractAnswer(text);
      const reward = normalizeAnswer(answer) === normalizeAnswer(task.answer) ? 1 : 0;
      return { reward, turns: turn + 1, ended: 'answered', info: { answer, toolErrors } };
    }
    return { reward: 0, turns: maxTurns, ended: 'max-turns', info: { toolErrors } };
  },

  expert(task: SearchTask, messages: ChatMessage[]) {
    // Progress is read from what the view still shows: a hop is done when its article came back first or a
    // summary records its query, so the expert keeps going under sliding windows and summaries.
    let done = 0;
    for (let i = task.hops.length - 1; i >= 0 && done === 0; i--) {
      const hop = task.hops[i];
      const seen = messages.some(
        (m) =>
          (m.role === 'tool' &&
            (m.content?.startsWith(`[1] ${hop}\n`) || m.content?.startsWith(`[1] ${hop} `))) ||
          (m.role === 'user' && m.content?.includes(`"query": "${hop}"`)),
      );
      if (seen) done = i + 1;
    }
    if (done < task.hops.length) {
      const q = task.hops[done];
      const call = pythonJsonDumps({ name: 'search', arguments: { query: q } });
      return `<think>\nI need the article about ${q}.\n</think>\n\nLet me look up ${q}.\n<tool_call>\n${call}\n</tool_call>`;
    }
    return `<think>\nThe articles give the answer: ${task.answer}.\n</think>\n\n<answer>${task.answer}</answer>`;
  },
};
