/**
 * Instruction following: one turn, verifiable constraints in the style of IFEval (word counts, casing,
 * required and banned words, format). Reward: 0 unless the response mentions the topic (so random text cannot
 * collect the constraints it satisfies by accident, like "avoid the word X"); otherwise the fraction of
 * constraints met (partial credit): INSTRUCTION_REWARD. Levels count the constraints (1 to 5).
 */
import { mulberry32 } from '../core/random';
import type { ChatMessage } from '../core/trace/types';
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

/** The reward definition (Harness.reward). */
export const INSTRUCTION_REWARD =
  "partial credit: 0 unless the topic is mentioned, else the fraction of the constraints met; IFEval's instruction-level strict accuracy (Zhou et al. 2023) gated on the topic, the verifiable-constraint reward of RLVR on instruction following (Tulu 3's IFEval verifier; Agent Lightning's LLM-in-Sandbox instruction following)";

export type Constraint =
  | { kind: 'min-words'; n: number }
  | { kind: 'max-words'; n: number }
  | { kind: 'lowercase' }
  | { kind: 'uppercase' }
  | { kind: 'include'; word: string }
  | { kind: 'ban'; word: string }
  | { kind: 'bullets'; n: number }
  | { kind: 'ends-with'; phrase: string }
  | { kind: 'title' };

export interface InstructionTask extends TaskBase {
  topic: string;
  constraints: Constraint[];
  prompt: string;
}

const TOPICS = [
  'ocean',
  'autumn',
  'bicycles',
  'coffee',
  'libraries',
  'volcanoes',
  'trains',
  'gardens',
  'bridges',
  'honey',
  'lighthouses',
  'chess',
  'glaciers',
  'markets',
  'kites',
  'owls',
];
const FILLER = [
  'the',
  'quiet',
  'bright',
  'morning',
  'people',
  'often',
  'find',
  'simple',
  'joy',
  'in',
  'small',
  'things',
  'every',
  'day',
  'brings',
  'new',
  'stories',
  'worth',
  'sharing',
  'with',
  'friends',
  'and',
  'neighbors',
  'who',
  'care',
  'about',
  'places',
  'near',
  'home',
  'light',
  'water',
  'stone',
  'wind',
  'history',
  'careful',
  'patient',
  'warm',
  'open',
  'long',
  'road',
];
const EXTRA = [
  'harmony',
  'journey',
  'rhythm',
  'silver',
  'ancient',
  'gentle',
  'curious',
  'festival',
  'horizon',
  'lantern',
];
const ENDINGS = ['Thank you for reading.', 'That is all for now.', 'Any other questions?', 'The end.'];

export function countWords(text: string): number {
  return text.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
}

function hasWord(text: string, word: string): boolean {
  return new RegExp(`(^|[^\\p{L}\\p{N}])${word}([^\\p{L}\\p{N}]|$)`, 'iu').test(text);
}

export function checkConstraint(c: Constraint, text: string): boolean {
  const t = text.trim();
  switch (c.kind) {
    case 'min-words':
      return countWords(t) >= c.n;
    case 'max-words':
      return countWords(t) <= c.n;
    case 'lowercase':
      return t === t.toLowerCase() && /\p{L}/u.test(t);
    case 'uppercase':
      return t === t.toUpperCase() && /\p{L}/u.test(t);
    case 'include':
      return hasWord(t, c.word);
    case 'ban':
      return !hasWord(t, c.word);
    case 'bullets':
      return t.split('\n').filter((l) => /^\s*[-*] \S/.test(l)).length === c.n;
    case 'ends-with':
      return t.endsWith(c.phrase);
    case 'title':
      return /^<<[^<>\n]+>>/.test(t);
  }
}

export function describe(c: Constraint): string {
  switch (c.kind) {
    case 'min-words':
      return `Use at least ${c.n} words.`;
    case 'max-words':
      return `Use at most ${c.n} words.`;
    case 'lowercase':
      return 'Write everything in lowercase letters.';
    case 'uppercase':
      return 'Write everything in capital letters.';
    case 'include':
      return `Include the word "${c.word}".`;
    case 'ban':
      return `Do not use the word "${c.word}".`;
    case 'bullets':
      return `Format the answer as exactly ${c.n} bullet points starting with "- ".`;
    case 'ends-with':
      return `End your response with the exact phrase "${c.phrase}"`;
    case 'title':
      return 'Start with a title wrapped in double angle brackets, like <<my title>>.';
  }
}

export function scoreInstruction(task: InstructionTask, text: string): number {
  if (!hasWord(text, task.topic)) return 0;
  return task.constraints.filter((c) => checkConstraint(c, text)).length / task.constraints.length;
}

function pick<T>(rand: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rand() * xs.length)];
}

/** The constraint families a level draws from (casing: lower or upper; format: bullets or a title). */
const FAMILIES = ['min-words', 'max-words', 'casing', 'include', 'ban', 'format', 'ends-with'] as const;

/** A seeded Fisher-Yates permutation of 0..n-1. */
function permutationOf(rand: () => number, n: number): number[] {
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p;
}

/** The highest level: five constraints or more (the mixed stream has up to seven). */
const TOP_LEVEL = 5;

function makeTask(split: Split | 'pretrain', seed: number, i: number, level: number | null): InstructionTask {
  const rand = mulberry32(
    hash32(`instruction:${split}:${seed}:${i}${level === null ? '' : `:level${level}`}`),
  );
  // Splits use disjoint topics, so validation measures transfer rather than memorised prompts; pre-training
  // tasks are about invented words neither split uses.
  const topic =
    split === 'pretrain'
      ? inventedWord(rand, 2 + Math.floor(rand() * 2))
      : pick(
          rand,
          TOPICS.filter((_, j) => (j % 4 === 0) === (split === 'val')),
        );
  const cs: Constraint[] = [];
  // The mixed stream (no level) draws each family with its own probability (the historical tasks); a level
  // draws exactly `level` families, each at most once, so the level is the constraint count.
  const families = level === null ? null : new Set(permutationOf(rand, FAMILIES.length).slice(0, level));
  const has = (f: (typeof FAMILIES)[number], p: number) =>
    families === null ? rand() < p : families.has(FAMILIES.indexOf(f));
  const lo = 15 + Math.floor(rand() * 20);
  if (has('min-words', 0.7)) cs.push({ kind: 'min-words', n: lo });
  if (has('max-words', 0.6)) cs.push({ kind: 'max-words', n: lo + 15 + Math.floor(rand() * 25) });
  const casing = families === null ? rand() : families.has(FAMILIES.indexOf('casing')) ? rand() * 0.45 : 1;
  if (casing < 0.3) cs.push({ kind: 'lowercase' });
  else if (casing < 0.45) cs.push({ kind: 'uppercase' });
  const inc = pick(rand, EXTRA);
  if (has('include', 0.7)) cs.push({ kind: 'include', word: inc });
  if (has('ban', 0.6))
    cs.push({
      kind: 'ban',
      word: pick(
        rand,
        FILLER.filter((w) => w.length > 3),
      ),
    });
  const fmt = families === null ? rand() : families.has(FAMILIES.indexOf('format')) ? rand() * 0.6 : 1;
  if (fmt < 0.35) cs.push({ kind: 'bullets', n: 2 + Math.floor(rand() * 3) });
  else if (fmt < 0.6) cs.push({ kind: 'title' });
  if (has('ends-with', 0.4)) {
    const up = cs.some((c) => c.kind === 'uppercase');
    const low = cs.some((c) => c.kind === 'lowercase');
    const p = pick(rand, ENDINGS);
    cs.push({ kind: 'ends-with', phrase: up ? p.toUpperCase() : low ? p.toLowerCase() : p });
  }
  if (cs.length === 0) cs.push({ kind: 'min-words', n: lo });
  const prompt = `Write a short piece about ${topic}.\n${cs.map((c) => `- ${describe(c)}`).join('\n')}`;
  const id = `instruction-${split}-${seed}-${i}${level === null ? '' : `-l${level}`}`;
  return { id, split: split === 'pretrain' ? 'train' : split, topic, constraints: cs, prompt };
}

const SYSTEM = 'You are a careful writer. Follow every instruction exactly.';

/** Builds a response that meets every constraint: the scripted expert. */
export function expertResponse(task: InstructionTask): string {
  const get = <K extends Constraint['kind']>(k: K) =>
    task.constraints.find((c) => c.kind === k) as Extract<Constraint, { kind: K }> | undefined;
  const min = get('min-words')?.n ?? 0;
  const max = get('max-words')?.n ?? Number.POSITIVE_INFINITY;
  const target = Number.isFinite(max) ? Math.max(min, Math.floor((min + max) / 2)) : Math.max(min + 4, 24);
  const banned = new Set(task.constraints.flatMap((c) => (c.kind === 'ban' ? [c.word] : [])));
  const required = [task.topic, ...task.constraints.flatMap((c) => (c.kind === 'include' ? [c.word] : []))];
  const ending = get('ends-with')?.phrase;
  const title = get('title') ? `<<notes on ${task.topic}>>` : '';
  const fixed = countWords(title) + (ending ? countWords(ending) : 0);
  const words = [...required];
  const pool = FILLER.filter((w) => !banned.has(w));
  for (let k = 0; words.length < target - fixed; k++) words.push(pool[k % pool.length]);
  const bullets = get('bullets')?.n;
  let body: string;
  if (bullets) {
    const per = Math.ceil(words.length / bullets);
    const lines: string[] = [];
    for (let b = 0; b < bullets; b++)
      lines.push(`- ${words.slice(b * per, (b + 1) * per).join(' ') || task.topic}`);
    body = lines.join('\n');
  } else body = `${words.join(' ')}.`;
  let text = [title, body, ending ?? ''].filter((s) => s !== '').join('\n');
  if (get('lowercase')) text = text.toLowerCase();
  if (get('uppercase')) text = text.toUpperCase();
  const plan = `The piece must mention ${task.topic} and meet ${task.constraints.length} constraint(s); I will aim for about ${target} words.`;
  return `<think>\n${plan}\n</think>\n\n${text}`;
}

export const instructionHarness: Harness<InstructionTask> = {
  name: 'instruction',
  levels: Array.from({ length: TOP_LEVEL }, (_, k) => ({
    level: k + 1,
    label: `${k + 1}${k + 1 === TOP_LEVEL ? '+' : ''} constraint${k ? 's' : ''}`,
    description: `${k + 1 === TOP_LEVEL ? `${TOP_LEVEL} (${TOP_LEVEL} or more in the mixed stream)` : k + 1} verifiable constraint${k ? 's' : ''} on a piece about a topic`,
  })),
  reward: INSTRUCTION_REWARD,
  makeTasks(split, seed, n, level = null) {
    checkLevel(instructionHarness, level);
    return Array.from({ length: n }, (_, i) => makeTask(split, seed, i, level));
  },
  levelOf(task) {
    return Math.min(task.constraints.length, TOP_LEVEL);
  },
  pretrainTasks(seed, n, level = null) {
    checkLevel(instructionHarness, level);
    return Array.from({ length: n }, (_, i) => makeTask('pretrain', seed, i, level));
  },
  async run(client: ChatClient, task: InstructionTask, opts: HarnessOptions): Promise<HarnessOutcome> {
    const conv = new Conversation(() => SYSTEM, { role: 'user', content: task.prompt }, opts.behaviours);
    const res = await client.complete({ messages: conv.view(), max_tokens: opts.maxTokens ?? 400 });
    const choice = res.choices?.[0];
    const text = answerText(choice?.message?.content);
    const reward = scoreInstruction(task, text);
    return { reward, turns: 1, ended: choice?.finish_reason === 'length' ? 'truncated' : 'answered' };
  },
  expert(task: InstructionTask, _messages: ChatMessage[]) {
    return expertResponse(task);
  },
};

/**
 * `instruction-short`: the same family with answers a tiny policy can learn in a few RL steps on a CPU:
 * "Write exactly N words about TOPIC. Use the word W." (N in 3..7). Reward: the fraction of the three
 * requirements met (the topic mentioned, exactly N words, the word used), so partial answers are graded
 * rather than zeroed, as RL on a small batch needs. The scripted expert is a chatty demonstrator: on about
 * 40% of tasks (fixed per task id) it signs off with "Hope this helps!", which breaks the exact word count.
 * Supervised training imitates the habit however long it runs; the reward does not pay for it, which is the
 * gap RL on this harness closes. Splits are disjoint sets of
 * (topic, count, word) combinations over shared word lists (a tiny model cannot copy words it never saw
 * written out), so validation asks for combinations never trained on.
 */
export interface ShortInstructionTask extends TaskBase {
  topic: string;
  words: number;
  include: string;
  prompt: string;
}

/** Every fourth combination (by a hash of the combination, not of the seed) is validation. */
export function shortComboSplit(topic: string, words: number, include: string): Split {
  return hash32(`instruction-short-combo:${topic}:${words}:${include}`) % 4 === 0 ? 'val' : 'train';
}

function makeShortTask(split: Split, seed: number, i: number): ShortInstructionTask {
  const rand = mulberry32(hash32(`instruction-short:${split}:${seed}:${i}`));
  let topic: string;
  let words: number;
  let include: string;
  do {
    topic = pick(rand, TOPICS);
    words = 3 + Math.floor(rand() * 5);
    include = pick(rand, EXTRA);
  } while (shortComboSplit(topic, words, include) !== split);
  const prompt = `Write exactly ${words} words about ${topic}. Use the word "${include}".`;
  return { id: `instruction-short-${split}-${seed}-${i}`, split, topic, words, include, prompt };
}

/** The reward definition (Harness.reward). */
export const SHORT_INSTRUCTION_REWARD =
  'partial credit: the fraction of the three requirements met (the topic, exactly N words, the given word); IFEval instruction-level accuracy without the topic gate';

export function scoreShortInstruction(task: ShortInstructionTask, text: string): number {
  const met =
    (hasWord(text, task.topic) ? 1 : 0) +
    (countWords(text.trim()) === task.words ? 1 : 0) +
    (hasWord(text, task.include) ? 1 : 0);
  return met / 3;
}

/** The expert's sign-off on ~40% of tasks (by a hash of the task id). */
export const SHORT_SIGN_OFF = 'Hope this helps!';
export function shortExpertSignsOff(task: ShortInstructionTask): boolean {
  return hash32(`instruction-short-sign-off:${task.id}`) % 10 < 4;
}

/** The expert: the topic, the word, filler words up to the count and a full stop; sometimes a sign-off. */
export function shortExpertResponse(task: ShortInstructionTask): string {
  const words = [task.topic, task.include];
  for (let k = 0; words.length < task.words; k++) words.push(FILLER[k % FILLER.length]);
  return `${words.join(' ')}.${shortExpertSignsOff(task) ? ` ${SHORT_SIGN_OFF}` : ''}`;
}

export const shortInstructionHarness: Harness<ShortInstructionTask> = {
  name: 'instruction-short',
  // One kind of task; level 1 names it (and draws the same tasks as no level).
  levels: [
    { level: 1, label: '3 requirements', description: 'exactly N words (3 to 7), the topic, one given word' },
  ],
  reward: SHORT_INSTRUCTION_REWARD,
  makeTasks(split, seed, n, level = null) {
    checkLevel(shortInstructionHarness, level);
    return Array.from({ length: n }, (_, i) => makeShortTask(split, seed, i));
  },
  levelOf() {
    return 1;
  },
  async run(client: ChatClient, task: ShortInstructionTask, opts: HarnessOptions): Promise<HarnessOutcome> {
    const conv = new Conversation(() => SYSTEM, { role: 'user', content: task.prompt }, opts.behaviours);
    const res = await client.complete({ messages: conv.view(), max_tokens: opts.maxTokens ?? 48 });
    const choice = res.choices?.[0];
    const text = answerText(choice?.message?.content);
    const reward = scoreShortInstruction(task, text);
    return { reward, turns: 1, ended: choice?.finish_reason === 'length' ? 'truncated' : 'answered' };
  },
  expert(task: ShortInstructionTask) {
    return shortExpertResponse(task);
  },
};
