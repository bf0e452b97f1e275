/**
 * A seeded generator of task-like training text for the tokenizer: instruction-following prompts with
 * verifiable constraints, search questions with tool calls and answers, and small programs, rendered in the
 * chat format the policy sees (the special tokens are split off before BPE counts, so they only shape the
 * surrounding text). Deterministic for a given seed.
 */
import { mulberry32 } from '../../core/random';

const TOPICS = [
  'the ocean',
  'a city at night',
  'mountain weather',
  'coffee',
  'autumn leaves',
  'a library',
  'trains',
  'the moon',
  'gardening',
  'a rainy morning',
  'bicycles',
  'friendship',
  'winter',
  'a small robot',
  'the desert',
  'music',
  'bread',
  'rivers',
  'a lighthouse',
  'chess',
];
const CONSTRAINTS = [
  (n: number) => `Answer in exactly ${n} words.`,
  (n: number) => `Use at most ${n} sentences.`,
  () => 'Do not use any commas.',
  () => 'Write everything in lowercase letters.',
  () => 'Write everything in UPPERCASE LETTERS.',
  (n: number) => `Include the keyword "blue" at least ${n} times.`,
  () => 'End your response with the phrase "Is there anything else?"',
  () => 'Wrap your entire response in double quotation marks.',
  (n: number) => `Your response must have ${n} bullet points in markdown, like: * point`,
  () => 'Give your answer a title wrapped in double angular brackets, such as <<title>>.',
  () => 'Respond in JSON format.',
  (n: number) => `Highlight at least ${n} sections with markdown, i.e. *highlighted section*.`,
];
const WORDS =
  'the a of and to in is it that was for on are with as his they be at one have this from or had by hot word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find'.split(
    ' ',
  );
const FACTS: [string, string, string][] = [
  ['What is the capital of France?', 'capital of France', 'Paris'],
  ['Who wrote Pride and Prejudice?', 'Pride and Prejudice author', 'Jane Austen'],
  ['How many moons does Mars have?', 'Mars moons count', '2'],
  ['What year did the Apollo 11 mission land on the Moon?', 'Apollo 11 landing year', '1969'],
  ['What is the chemical symbol for gold?', 'chemical symbol gold', 'Au'],
  ['Which river flows through Cairo?', 'river through Cairo', 'the Nile'],
  ['What is the tallest mountain on Earth?', 'tallest mountain on Earth', 'Mount Everest'],
  ['Who painted the Mona Lisa?', 'Mona Lisa painter', 'Leonardo da Vinci'],
  ['What is the boiling point of water at sea level in Celsius?', 'boiling point of water Celsius', '100'],
  ['Which planet is known as the Red Planet?', 'Red Planet', 'Mars'],
  ['What is the largest ocean?', 'largest ocean', 'the Pacific Ocean'],
  ['Who developed the theory of general relativity?', 'general relativity author', 'Albert Einstein'],
];
const NAMES = [
  'total',
  'count',
  'items',
  'result',
  'value',
  'left',
  'right',
  'index',
  'acc',
  'node',
  'xs',
  'ys',
  'word',
  'line',
  'score',
];

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

function sentence(r: Rand, n: number): string {
  const w = Array.from({ length: n }, () => pick(r, WORDS));
  w[0] = w[0][0].toUpperCase() + w[0].slice(1);
  return `${w.join(' ')}.`;
}

function chat(system: string | null, turns: [string, string][]): string {
  let s = system ? `<|im_start|>system\n${system}<|im_end|>\n` : '';
  for (const [role, content] of turns) s += `<|im_start|>${role}\n${content}<|im_end|>\n`;
  return s;
}

function instruction(r: Rand): string {
  const topic = pick(r, TOPICS);
  const n = int(r, 2, 6);
  const c = pick(r, CONSTRAINTS)(n);
  const prompt = `Write a short paragraph about ${topic}. ${c}`;
  const body = Array.from({ length: int(r, 1, 3) }, () => sentence(r, int(r, 5, 12))).join(' ');
  const think = `The user wants a paragraph about ${topic}. Constraint: ${c} I will check it before answering.`;
  return chat(null, [
    ['user', prompt],
    ['assistant', `<think>\n${think}\n</think>\n\n${body}`],
  ]);
}

function search(r: Rand): string {
  const [q, query, a] = pick(r, FACTS);
  const call = JSON.stringify({ name: 'search', arguments: { query } });
  const doc = `${query}: ${a}. ${sentence(r, int(r, 6, 10))}`;
  return (
    chat('You are a helpful assistant that can search the web.', [['user', q]]) +
    `<|im_start|>assistant\n<think>\nI should look this up.\n</think>\n\n<tool_call>\n${call}\n</tool_call><|im_end|>\n` +
    `<|im_start|>user\n<tool_response>\n${doc}\n</tool_response><|im_end|>\n` +
    `<|im_start|>assistant\nThe answer is <answer>${a}</answer>.<|im_end|>\n`
  );
}

function program(r: Rand): string {
  const a = pick(r, NAMES);
  const b = pick(
    r,
    NAMES.filter((x) => x !== a),
  );
  const k = int(r, 1, 9);
  const variants = [
    `def ${a}_sum(${b}):\n    ${a} = 0\n    for x in ${b}:\n        if x % ${k} == 0:\n            ${a} += x\n    return ${a}\n\nprint(${a}_sum([${int(r, 1, 20)}, ${int(r, 1, 20)}, ${int(r, 1, 20)}]))\n`,
    `function ${a}(${b}) {\n  let out = [];\n  for (let i = 0; i < ${b}.length; i++) {\n    if (${b}[i] > ${k}) out.push(${b}[i] * 2);\n  }\n  return out;\n}\nconsole.log(${a}([${int(r, 0, 9)}, ${int(r, 0, 9)}, ${int(r, 0, 9)}]));\n`,
    `const ${a} = (${b}) => ${b}.filter((x) => x !== ${k}).map((x) => x + 1);\n`,
    `for i in range(${k}):\n    print(i * ${int(r, 2, 9)}, end=" ")\n`,
  ];
  const code = pick(r, variants);
  return chat(null, [
    ['user', `What does this program print?\n\`\`\`\n${code}\`\`\``],
    ['assistant', `<think>\nLet me trace the code step by step.\n</think>\n\nIt prints ${int(r, 0, 99)}.`],
  ]);
}

/** `count` documents, cycling through the three kinds in a seeded random order. */
export function* generateCorpus(count: number, seed = 1): Generator<string> {
  const r = mulberry32(seed);
  const kinds = [instruction, search, program];
  for (let i = 0; i < count; i++) yield pick(r, kinds)(r);
}
