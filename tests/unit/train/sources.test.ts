import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { readAglEvents, toAglEventsBundle } from '../../../src/core/trace/io';
import type { Rollout } from '../../../src/core/trace/types';
import { initParams, resolveConfig } from '../../../src/engine/model';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { LlmProxy } from '../../../src/harness/proxy';
import { resolveTrainConfig } from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { ColocatedRolloutEngine, CopyRolloutEngine } from '../../../src/train/rolloutEngine';
import { TrainRun } from '../../../src/train/run';
import {
  type GroupRequest,
  HarnessRolloutSource,
  inlineRunner,
  type RolloutSource,
} from '../../../src/train/source';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';

const tok = loadTokenizer('policy');
const model = resolveConfig({
  vocabSize: 1024,
  contextLength: 1024,
  layers: 1,
  width: 32,
  heads: 2,
  seed: 6,
});
const config = resolveTrainConfig({
  lab: { harness: 'instruction-short', train_tasks: 8, val_tasks: 2 },
  data: { train_batch_size: 2, max_response_length: 8 },
  actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 2 } },
  trainer: { total_training_steps: 2, test_freq: 0, val_before_train: false },
});

/**
 * Rollouts as a remote Agent Lightning gateway hands them to a trainer: the agents run elsewhere (here, behind
 * an inner source) and what arrives is the gateway's events, read back with core's reader; the trainer knows
 * which data id it enqueued under each rollout id, as AglRolloutManager does.
 */
class GatewayShapedSource implements RolloutSource {
  private readonly enqueued = new Map<string, GroupRequest>();
  constructor(private readonly inner: HarnessRolloutSource) {}
  get rejections() {
    return this.inner.rejections;
  }
  submit(groups: GroupRequest[]) {
    for (const g of groups) for (const rid of g.rolloutIds) this.enqueued.set(rid, g);
    this.inner.submit(groups);
  }
  async next(): Promise<Rollout> {
    const raw = await this.inner.next();
    const batch = readAglEvents(JSON.parse(JSON.stringify(toAglEventsBundle([raw]))));
    expect(batch.issues).toEqual([]);
    const r = batch.rollouts[0];
    const g = this.enqueued.get(r.rolloutId) as GroupRequest;
    return {
      ...r,
      dataId: g.dataId,
      step: g.step,
      sampleIdxInStep: raw.sampleIdxInStep,
      metadata: raw.metadata,
    };
  }
  pending() {
    return this.inner.pending();
  }
  pause(reason: string, s?: number) {
    return this.inner.pause(reason, s);
  }
  resume() {
    this.inner.resume();
  }
  setPolicyVersion(v: number) {
    this.inner.setPolicyVersion(v);
  }
  close() {
    this.inner.close();
  }
}

describe('where rollouts come from is separate from how a step trains on them', () => {
  it('trains on rollouts that arrive as Agent Lightning gateway events', async () => {
    const policy = new CpuPolicy(model, {}, initParams(model));
    const engine = new ColocatedRolloutEngine(policy, tok, { seed: 1 });
    const proxy = new LlmProxy({
      engine: engine.chat({ temperature: 1, topP: 1 }),
      tokenizer: tok,
      temperature: 1,
      maxResponseTokens: 8,
    });
    const inner = (p: LlmProxy) =>
      new HarnessRolloutSource({
        harness: 'instruction-short',
        behaviours: [],
        maxTurns: null,
        proxy: p,
        runner: inlineRunner(p.handle),
      });
    const storage = new MemoryStorage();
    const run = new TrainRun({
      config,
      policy,
      tokenizer: tok,
      rolloutEngine: engine,
      source: new GatewayShapedSource(inner(proxy)),
      valSource: inner(new LlmProxy({ engine: engine.chat({ temperature: 0, topP: 1 }), tokenizer: tok })),
      storage,
    });
    const summary = await run.run();
    expect(summary.steps).toBe(2);
    const lines = parseFileLogger(storage.text('metrics.jsonl'));
    expect(lines[1].data['training/n_sample_trained']).toBe(4);
    // the gateway's events carry the engine's log-probs and the policy version (server.version) through
    expect(lines[1].data['training/rollout_probs_diff_max']).toBeLessThan(1e-3);
    expect(lines[1].data['lab/staleness/call_max']).toBe(0);
  });

  it('a rollout engine separate from the trainer gets the weights at each sync', async () => {
    const trainer = new CpuPolicy(model, {}, initParams(model));
    const sampler = new CpuPolicy(model, {}, initParams(model));
    const storage = new MemoryStorage();
    const local = createLocalRun({
      config: { ...config, trainer: { ...config.trainer, total_training_steps: 3 } },
      policy: trainer,
      tokenizer: tok,
      rolloutEngine: new CopyRolloutEngine(sampler, tok, { seed: 1 }),
      storage,
      makeRunner: (h) => inlineRunner(h),
    });
    await local.run.run();
    local.close();
    expect(Array.from(await sampler.getParams())).toEqual(Array.from(await trainer.getParams()));
    // every step's rollouts were sampled with the weights the trainer then recomputed them with
    for (const l of parseFileLogger(storage.text('metrics.jsonl')))
      expect(l.data['training/rollout_probs_diff_max']).toBeLessThan(1e-3);
  });
});
