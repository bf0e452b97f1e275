import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { spawnNodeHarnessWorker } from '../../../src/cli/nodeWorkers';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { decodeTrainCheckpoint } from '../../../src/train/checkpoint';
import { resolveTrainConfig, type TrainConfig } from '../../../src/train/config';
import { launchRun, RunLaunchError, type RunPlatform } from '../../../src/train/launch';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';

const platform: RunPlatform = {
  name: 'node',
  tokenizer: loadTokenizer('policy'),
  readShipped: async (p) => {
    throw new Error(`nothing shipped here (${p})`);
  },
  gpu: async () => ({ available: false, reason: 'no adapter on this machine' }),
  spawnHarnessWorker: () => spawnNodeHarnessWorker(),
};

const small = (over: Record<string, unknown> = {}): TrainConfig =>
  resolveTrainConfig({
    ...over,
    lab: {
      harness: 'instruction-short',
      train_tasks: 8,
      val_tasks: 2,
      workers: 1,
      ...(over.lab ?? {}),
    },
    data: { train_batch_size: 2, max_response_length: 8 },
    actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 2 }, model: { path: 'init' } },
    trainer: { total_training_steps: 1, test_freq: 0, save_freq: 1, val_before_train: false },
  });

describe('launchRun (the one way lab train and the page build a run)', () => {
  it('refuses what the platform cannot give, naming the key, before any engine exists', async () => {
    const made = vi.spyOn(CpuPolicy.prototype, 'dispose');
    try {
      const e = await launchRun({
        config: small({ lab: { backend: 'webgpu' } }),
        platform,
        storage: null,
      }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(RunLaunchError);
      expect((e as RunLaunchError).path).toBe('lab.backend');
      expect((e as RunLaunchError).detail).toBe('webgpu: no adapter on this machine');
      const r = await launchRun({
        config: resolveTrainConfig({
          actor_rollout_ref: { rollout: { name: 'onnxruntime-web' } },
          lab: { rollout_device: 'webgpu' },
        }),
        platform,
        storage: null,
      }).catch((x: unknown) => x);
      expect(r).toBeInstanceOf(RunLaunchError);
      expect((r as RunLaunchError).path).toBe('lab.rollout_device');
      expect((r as Error).message).toMatch(
        /^lab\.rollout_device 'webgpu' is not available for 'onnxruntime-web' in Node/,
      );
      // nothing was built, so nothing was released
      expect(made).not.toHaveBeenCalled();
    } finally {
      made.mockRestore();
    }
  });

  it("'auto' without a device trains on the CPU and says why; a failure after the engine exists releases it", async () => {
    const dispose = vi.spyOn(CpuPolicy.prototype, 'dispose');
    try {
      await expect(
        launchRun({
          config: small({ lab: { backend: 'auto' } }),
          platform,
          storage: null,
          beforeLoop: async () => {
            throw new Error('storage refused');
          },
        }),
      ).rejects.toThrow('storage refused');
      expect(dispose).toHaveBeenCalledTimes(1);
      const launched = await launchRun({
        config: small({ lab: { backend: 'auto' } }),
        platform,
        storage: null,
      });
      expect(launched.backend).toBe('cpu');
      expect(launched.note).toBe('WebGPU unavailable (no adapter on this machine): on the CPU engine');
      expect(launched.gpu).toBeNull();
      launched.close();
      expect(dispose).toHaveBeenCalledTimes(2);
    } finally {
      dispose.mockRestore();
    }
  });

  it('runs a step, then resumes from its checkpoint with its weights and run state', async () => {
    const storage = new MemoryStorage();
    const first = await launchRun({ config: small(), platform, storage });
    expect(first.weights).toMatch(/init/);
    expect(first.resumedFromStep).toBeNull();
    try {
      expect((await first.local.run.run()).steps).toBe(1);
    } finally {
      first.close();
    }
    const latest = storage.text('checkpoints/latest').trim();
    const bytes = await storage.readFile(latest);
    const resume = decodeTrainCheckpoint(bytes as Uint8Array, latest);
    const order: string[] = [];
    const cfg = { ...resume.config, trainer: { ...resume.config.trainer, total_training_steps: 2 } };
    const second = await launchRun({
      config: cfg,
      resume,
      platform,
      storage,
      beforeLoop: async () => {
        order.push('beforeLoop');
      },
      onEvent: (e) => {
        if (order.length === 1) order.push(e.type);
      },
    });
    try {
      expect(second.weights).toBe('checkpoint of step 1');
      expect(second.resumedFromStep).toBe(1);
      expect((await second.local.run.run()).steps).toBe(2);
    } finally {
      second.close();
    }
    expect(order[0]).toBe('beforeLoop');
    expect(parseFileLogger(storage.text('metrics.jsonl')).map((l) => l.step)).toEqual([1, 2]);
    expect(parseFileLogger(storage.text('metrics.jsonl'))[1].data['lab/policy_version']).toBe(2);
  });

  it('is the only place in src/ that builds a run loop or its harness pool for training', () => {
    const root = join(import.meta.dirname, '../../../src');
    const hits: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name) && /\bcreateLocalRun\(/.test(readFileSync(p, 'utf8')))
          hits.push(p.slice(root.length + 1));
      }
    };
    walk(root);
    // local.ts defines it; the launcher is its one caller (lab train and the page's trainer worker call the launcher)
    expect(hits.sort()).toEqual(['train/launch.ts', 'train/local.ts']);
    for (const f of ['cli/commands/train.ts', 'ui/train/train.worker.ts'])
      expect(readFileSync(join(root, f), 'utf8')).toMatch(/\blaunchRun\(/);
  });
});
