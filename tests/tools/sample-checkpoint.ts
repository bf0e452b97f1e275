/**
 * What a checkpoint writes, task by task: `npx tsx tests/tools/sample-checkpoint.ts --harness H
 * [--checkpoint FILE] [--split train|val|pretrain=val] [--tasks N=4] [--temperature T=1] [--seed S=0]`.
 * Each task's prompt, gold answer, reward and every reply the policy sent (decoded from its token ids), then the
 * mean reward: the view that tells a policy that cannot copy a name from its context from one that cannot
 * follow the format, which the val metrics alone do not.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from '../../src/cli/args';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../src/engine/checkpoint';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import type { TaskBase } from '../../src/harness/harness';
import { PolicyChatEngine } from '../../src/harness/policyEngine';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness, isHarnessName } from '../../src/harness/registry';
import { HarnessRolloutSource, inlineRunner } from '../../src/train/source';

const { flags } = parseArgs(process.argv.slice(2), {
  harness: { type: 'string' },
  checkpoint: { type: 'string' },
  split: { type: 'string' },
  tasks: { type: 'number' },
  temperature: { type: 'number' },
  seed: { type: 'number' },
});
const fail = (msg: string) => {
  console.error(msg);
  process.exit(2);
};
const harness = String(flags.harness ?? '');
if (!isHarnessName(harness)) fail(`--harness must name a harness, got '${harness}'`);
const name = harness as Parameters<typeof getHarness>[0];
const h = getHarness(name);
const split = String(flags.split ?? 'val');
if (split !== 'train' && split !== 'val' && split !== 'pretrain')
  fail(`--split must be train, val or pretrain, got '${split}'`);
if (split === 'pretrain' && !h.pretrainTasks) fail(`harness '${harness}' has no pre-training tasks`);
const n = Number(flags.tasks ?? 4);
if (!Number.isInteger(n) || n < 1) fail(`--tasks must be an integer ≥ 1, got ${flags.tasks}`);
const temperature = Number(flags.temperature ?? 1);
if (!(temperature >= 0)) fail(`--temperature must be ≥ 0, got ${flags.temperature}`);
const seed = Number(flags.seed ?? 0);
const file = String(flags.checkpoint ?? `public/checkpoints/${harness}.safetensors`);
const ck = decodeCheckpoint(new Uint8Array(readFileSync(file)), file);
const tok = loadTokenizer('policy');
const engine = new PolicyChatEngine(new CpuPolicy(ck.config, {}, ck.params), tok, { temperature, seed });
const proxy = new LlmProxy({
  engine,
  tokenizer: tok,
  maxResponseTokens: 256,
  maxContextTokens: ck.config.contextLength,
  temperature,
});
const source = new HarnessRolloutSource({
  harness: name,
  behaviours: [],
  maxTurns: null,
  proxy,
  runner: inlineRunner(proxy.handle),
});
const tasks: TaskBase[] =
  split === 'pretrain' ? (h.pretrainTasks?.(seed, n) ?? []) : h.makeTasks(split as 'train' | 'val', seed, n);
source.submit(
  tasks.map((task, i) => ({
    dataId: task.id,
    task,
    split: task.split,
    step: 0,
    sampleIdx: i,
    rolloutIds: [`sample-${i}`],
  })),
);
const byId = new Map(tasks.map((t, i) => [`sample-${i}`, t]));
let total = 0;
try {
  for (let i = 0; i < tasks.length; i++) {
    const r = await source.next();
    total += r.finalReward ?? 0;
    const t = byId.get(r.rolloutId) as TaskBase & Record<string, unknown>;
    const prompt = t.question ?? t.prompt ?? t.id;
    const gold = t.answer ?? t.topic ?? '';
    console.log(`--- ${t.id}: ${prompt}\n    gold ${JSON.stringify(gold)}, reward ${r.finalReward}`);
    for (const c of r.calls) console.log(`  > ${JSON.stringify(tok.decode(c.responseTokenIds ?? []))}`);
  }
} finally {
  source.close();
}
console.log(
  `${harness} ${file} (${split}, T=${temperature}): mean reward ${(total / tasks.length).toFixed(3)}`,
);
