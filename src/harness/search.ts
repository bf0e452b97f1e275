/**
 * Search: multi-turn question answering with one tool, `search`, over an in-memory corpus of invented facts
 * (so no model can know the answers beforehand). Questions take one or two hops ("what river flows through the
 * capital of X?" needs the country page, then the city page); level 3 asks from a city that is not the capital
 * (city → country → capital). The final answer is the assistant text (or its <answer>…</answer> part) of the
 * first reply without a tool call; the reward is SEARCH_REWARD's.
 */
import { mulberry32 } from '../core/random';
import type { ChatMessage, ToolDefinition } from '../core/trace/types';
import type { ChatClient } from './client';
import { hash32 } from './engines';
import {
  answerText,
  Conversation,
  checkLevel,
  type Harness,
  type HarnessOptions,
  type HarnessOutcome,
  type Split,
  type TaskBase,
} from './harness';
import { inventedWord } from './invented';
import { pythonJsonDumps } from './toolParser';

/** The reward definition (Harness.reward). */
export const SEARCH_REWARD =
  'exact match: 1 when the normalised answer (lower case, surrounding punctuation and whitespace removed) equals the gold answer, else 0; the outcome reward of Search-R1 (Jin et al. 2025; verl reward_score/search_r1_like_qa_em.py, em_check), which also strips articles and inner punctuation';

export interface Doc {
  title: string;
  text: string;
}

export interface SearchTask extends TaskBase {
  question: string;
  answer: string;
  /** the queries an expert issues, in order */
  hops: string[];
  /** the seed of a generated world the task is asked over (pre-training tasks); absent: the fixed corpus */
  world?: number;
}

function name(rand: () => number, parts: number): string {
  const s = inventedWord(rand, parts);
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

interface World {
  countries: Country[];
  cities: City[];
  docs: Doc[];
}

/**
 * A world of 24 countries with 3 cities each, from a seed. The corpus both splits use is the world of its own
 * fixed seed; pre-training tasks (`pretrainTasks`) each get a world of their own.
 */
function buildWorld(seed: number): World {
  const rand = mulberry32(seed);
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

const WORLD = buildWorld(20240611);
export const SEARCH_CORPUS: readonly Doc[] = WORLD.docs;

// Generated worlds by seed; a task's world is rebuilt when it is asked for again after leaving the cache.
const generated = new Map<number, World>();
function worldOf(task: { world?: number }): World {
  if (task.world === undefined) return WORLD;
  let w = generated.get(task.world);
  if (!w) {
    if (generated.size >= 64) generated.delete(generated.keys().next().value as number);
    w = buildWorld(task.world);
    generated.set(task.world, w);
  }
  return w;
}

function terms(s: string): string[] {
  return s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Top-k documents by summed inverse document frequency of the query terms they contain. */
export function searchCorpus(query: string, k = 3, corpus: readonly Doc[] = SEARCH_CORPUS): Doc[] {
  const q = new Set(terms(query));
  if (q.size === 0) return [];
  const df = new Map<string, number>();
  const docTerms = corpus.map((d) => new Set(terms(`${d.title} ${d.text}`)));
  for (const ts of docTerms) for (const t of ts) if (q.has(t)) df.set(t, (df.get(t) ?? 0) + 1);
  const scored = corpus
    .map((d, i) => {
      let s = 0;
      for (const t of q) if (docTerms[i].has(t)) s += Math.log(1 + corpus.length / (df.get(t) ?? 1));
      if (q.has(d.title.toLowerCase())) s += 5;
      return { d, s };
    })
    .filter((x) => x.s > 0);
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
export function runSearchTool(name: string, args: string, corpus: readonly Doc[] = SEARCH_CORPUS): string {
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
  const hits = searchCorpus(q, 3, corpus);
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

type Question = (rand: () => number, country: Country, id: string, split: Split, world: World) => SearchTask;

const capitalOf = (w: World, country: Country) => w.cities.find((c) => c.name === country.capital) as City;
const citiesOf = (w: World, country: Country) => w.cities.filter((c) => c.country === country.name);

/** The question kinds by the hops they need (the level); within a level, drawn uniformly. */
const QUESTIONS: Record<1 | 2 | 3, Question[]> = {
  1: [
    (rand, country, id, split, w) => {
      const cities = citiesOf(w, country);
      const city = cities[Math.floor(rand() * cities.length)];
      return {
        id,
        split,
        question: `In which year was the city of ${city.name} founded?`,
        answer: String(city.founded),
        hops: [city.name],
      };
    },
    (_rand, country, id, split) => ({
      id,
      split,
      question: `What is the currency of ${country.name}?`,
      answer: country.currency,
      hops: [country.name],
    }),
  ],
  2: [
    (_rand, country, id, split, w) => ({
      id,
      split,
      question: `Which river flows through the capital of ${country.name}?`,
      answer: capitalOf(w, country).river,
      hops: [country.name, capitalOf(w, country).name],
    }),
    (_rand, country, id, split, w) => ({
      id,
      split,
      question: `In which year was the capital of ${country.name} founded?`,
      answer: String(capitalOf(w, country).founded),
      hops: [country.name, capitalOf(w, country).name],
    }),
  ],
  // From a city that is not the capital: its article names the country, whose article names the capital.
  3: [
    (rand, country, id, split, w) => {
      const city = citiesOf(w, country).filter((c) => c.name !== country.capital)[Math.floor(rand() * 2)];
      return {
        id,
        split,
        question: `Which river flows through the capital of the country in which the city of ${city.name} lies?`,
        answer: capitalOf(w, country).river,
        hops: [city.name, country.name, capitalOf(w, country).name],
      };
    },
    (rand, country, id, split, w) => {
      const city = citiesOf(w, country).filter((c) => c.name !== country.capital)[Math.floor(rand() * 2)];
      return {
        id,
        split,
        question: `In which year was the capital of the country in which the city of ${city.name} lies founded?`,
        answer: String(capitalOf(w, country).founded),
        hops: [city.name, country.name, capitalOf(w, country).name],
      };
    },
  ],
};

function makeTask(split: Split, seed: number, i: number, level: number | null): SearchTask {
  const rand = mulberry32(hash32(`search:${split}:${seed}:${i}${level === null ? '' : `:level${level}`}`));
  // Disjoint countries per split (every fourth country is validation).
  const countries = WORLD.countries.filter((_, j) => (j % 4 === 0) === (split === 'val'));
  const id = `search-${split}-${seed}-${i}${level === null ? '' : `-l${level}`}`;
  return ask(rand, WORLD, countries, id, split, level);
}

function ask(
  rand: () => number,
  w: World,
  countries: Country[],
  id: string,
  split: Split,
  level: number | null,
): SearchTask {
  const country = countries[Math.floor(rand() * countries.length)];
  // The mixed stream (no level) is the historical one: four kinds, one and two hops, half each.
  if (level === null) {
    const kind = Math.floor(rand() * 4);
    return QUESTIONS[kind < 2 ? 1 : 2][kind % 2](rand, country, id, split, w);
  }
  const qs = QUESTIONS[level as 1 | 2 | 3];
  return qs[Math.floor(rand() * qs.length)](rand, country, id, split, w);
}

const SYSTEM = (turn: number) =>
  `You answer questions using the search tool. When you know the answer, reply with <answer>ANSWER</answer> and nothing else.${turn > 0 ? ` This is step ${turn + 1}.` : ''}`;

export const searchHarness: Harness<SearchTask> = {
  name: 'search',
  levels: [
    {
      level: 1,
      label: '1 hop',
      description: "one article holds the answer (a city's founding year, a currency)",
    },
    {
      level: 2,
      label: '2 hops',
      description: "the country's article names its capital, whose article holds the answer",
    },
    {
      level: 3,
      label: '3 hops',
      description:
        "a city's article names its country, whose article names the capital, whose article holds the answer",
    },
  ],
  reward: SEARCH_REWARD,
  makeTasks(split, seed, n, level = null) {
    checkLevel(searchHarness, level);
    return Array.from({ length: n }, (_, i) => makeTask(split, seed, i, level));
  },
  levelOf(task) {
    return task.hops.length;
  },
  pretrainTasks(seed, n, level = null) {
    checkLevel(searchHarness, level);
    return Array.from({ length: n }, (_, i) => {
      const rand = mulberry32(
        hash32(`search:pretrain:${seed}:${i}${level === null ? '' : `:level${level}`}`),
      );
      const world = hash32(`search:pretrain-world:${seed}:${i}`);
      const w = worldOf({ world });
      const id = `search-pretrain-${seed}-${i}${level === null ? '' : `-l${level}`}`;
      return { ...ask(rand, w, w.countries, id, 'train', level), world };
    });
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
          const out = runSearchTool(tc.function.name, tc.function.arguments, worldOf(task).docs);
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
