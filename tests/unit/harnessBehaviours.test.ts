/**
 * Each history behaviour must produce the merge effect it exists for. The trajectory merge rule (Agent
 * Lightning `trace_aggregator.level=trajectory`): call k merges into the row of call k-1 only if its prompt ids
 * start with call k-1's prompt ids + response ids.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import { ScriptedEngine } from '../../src/harness/engines';
import type { Behaviour } from '../../src/harness/harness';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness } from '../../src/harness/registry';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';
import type { SearchTask } from '../../src/harness/search';
import { qwen3 } from './qwen3';

let tok: ChatTokenizer;
beforeAll(() => {
  tok = qwen3();
});

function extendsPrevious(prev: ModelCall, next: ModelCall): boolean {
  const ctx = [...(prev.promptTokenIds ?? []), ...(prev.responseTokenIds ?? [])];
  const p = next.promptTokenIds ?? new Int32Array();
  if (p.length < ctx.length) return false;
  return ctx.every((id, i) => p[i] === id);
}

/** For each call after the first: does it extend the previous one? */
function mergeProfile(r: Rollout): boolean[] {
  return r.calls.slice(1).map((c, i) => extendsPrevious(r.calls[i], c));
}

/** Two-hop search rollouts (three calls: search, search, answer) with the scripted expert. */
async function twoHop(behaviours: Behaviour[]): Promise<Rollout[]> {
  const spec: RunSpec = { harness: 'search', split: 'train', n: 24, groupSize: 1, seed: 11, behaviours };
  const plan = planRollouts(spec)
    .filter((p) => (p.task as SearchTask).hops.length === 2)
    .slice(0, 3);
  expect(plan.length).toBe(3);
  const h = getHarness('search');
  const tasks = new Map(plan.map((p) => [p.job.rolloutId, p.task]));
  const engine = new ScriptedEngine(tok, (c) => h.expert(tasks.get(c.rolloutId) as SearchTask, c.messages));
  const rs = await runInline(spec, plan, new LlmProxy({ engine, tokenizer: tok }));
  for (const r of rs) {
    expect(r.state).toBe('succeeded');
    expect(r.finalReward).toBe(1);
    expect(r.calls).toHaveLength(3);
  }
  return rs;
}

describe('history behaviours and the trajectory merge rule (real Qwen3 template and ids)', () => {
  it('without behaviours every call extends the previous prompt+response (one merged row)', async () => {
    for (const r of await twoHop([])) expect(mergeProfile(r)).toEqual([true, true]);
  });

  it('strip-think: dropping earlier <think> blocks breaks the merge at the second call', async () => {
    for (const r of await twoHop(['strip-think'])) {
      expect(mergeProfile(r)).toEqual([false, false]);
      expect(r.calls[1].request.messages.some((m) => m.content?.includes('<think>'))).toBe(false);
    }
  });

  it('sliding-window: merges while the window holds everything, breaks when a turn falls out', async () => {
    for (const r of await twoHop(['sliding-window'])) expect(mergeProfile(r)).toEqual([true, false]);
  });

  it('summarize: replacing old turns with a summary breaks the merge once it kicks in', async () => {
    for (const r of await twoHop(['summarize'])) {
      expect(mergeProfile(r)).toEqual([true, false]);
      expect(r.calls[2].request.messages[2].content).toMatch(/^Summary of the 1 earlier step/);
    }
  });

  it('reformat-tool-output: re-serialised tool traffic breaks the merge after it was acted on', async () => {
    for (const r of await twoHop(['reformat-tool-output'])) {
      expect(mergeProfile(r)).toEqual([true, false]);
      const args = r.calls[2].request.messages.find((m) => m.tool_calls)?.tool_calls?.[0].function.arguments;
      expect(args).toMatch(/^\{"query":"/);
    }
  });

  it('changing-system-prompt: a system prompt that changes per turn breaks every merge', async () => {
    for (const r of await twoHop(['changing-system-prompt'])) {
      expect(mergeProfile(r)).toEqual([false, false]);
      expect(r.calls[1].request.messages[0].content).not.toBe(r.calls[0].request.messages[0].content);
    }
  });
});
