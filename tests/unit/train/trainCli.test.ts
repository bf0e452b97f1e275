import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../../src/cli/args';
import { command as train } from '../../../src/cli/commands/train';
import { spawnNodeHarnessWorker } from '../../../src/cli/nodeWorkers';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { initParams, resolveConfig } from '../../../src/engine/model';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { serveChannel } from '../../../src/harness/http';
import { WorkerPool } from '../../../src/harness/pool';
import { resolveTrainConfig } from '../../../src/train/config';
import { createLocalRun } from '../../../src/train/local';
import { MemoryStorage } from '../../../src/train/storage';
import { parseFileLogger } from '../../../src/train/verlLog';

const dir = mkdtempSync(join(tmpdir(), 'train-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const small = [
  '--harness',
  'instruction-short',
  '--model',
  'init',
  '--train-batch-size',
  '2',
  '--rollout-n',
  '2',
  '--ppo-mini-batch-size',
  '1',
  '--max-response-length',
  '8',
  '--workers',
  '1',
  '--train-tasks',
  '8',
  '--val-tasks',
  '2',
  '--test-freq',
  '1',
  '--save-freq',
  '1',
  '--quiet',
];

describe('lab train', () => {
  it('turns bad flags and overrides into usage errors naming them', async () => {
    await expect(train.run(['--rollout-n', '0'])).rejects.toThrow(
      new UsageError('--rollout-n: actor_rollout_ref.rollout.n must be ≥ 1, got 0'),
    );
    await expect(train.run(['--adv-estimator', 'ppo'])).rejects.toThrow(
      /--adv-estimator: algorithm.adv_estimator must be one of/,
    );
    await expect(train.run(['--bogus'])).rejects.toThrow('unknown flag --bogus');
    await expect(train.run(['algorithm.adv_estimatr=grpo'])).rejects.toThrow(
      'algorithm.adv_estimatr is not a known key',
    );
    await expect(train.run(['stray'])).rejects.toThrow("unexpected argument 'stray'");
    await expect(train.run(['--async', '--async-train-batch-size', '4'])).rejects.toThrow(
      'agentlightning.async_rollout.async_train_batch_size (4) must be > data.train_batch_size (8)',
    );
    await expect(train.run(['--async', '--no-async'])).rejects.toThrow(
      '--async and --no-async given together',
    );
    // the rollout engine: a name, device or precision that cannot be served here names its flag
    await expect(train.run(['--rollout-name', 'vllm'])).rejects.toThrow(
      "--rollout-name: actor_rollout_ref.rollout.name must be one of policy, onnxruntime-web, transformers.js, got 'vllm'",
    );
    await expect(
      train.run(['--rollout-name', 'onnxruntime-web', '--rollout-device', 'webgpu']),
    ).rejects.toThrow(
      "--rollout-device: lab.rollout_device 'webgpu' is not available for 'onnxruntime-web' in Node (here: 'wasm'; in the page: 'wasm', 'webgpu')",
    );
    await expect(train.run(['--rollout-precision', 'int8'])).rejects.toThrow(
      "--rollout-precision: lab.rollout_precision must be f32 with actor_rollout_ref.rollout.name 'policy'",
    );
    await expect(
      train.run(['--rollout-name', 'transformers.js', '--rollout-precision', 'f8']),
    ).rejects.toThrow('--rollout-precision: lab.rollout_precision must be one of f32, f16, int8');
    await expect(train.run(['--resume', join(dir, 'nowhere')])).rejects.toThrow('does not exist');
    await expect(train.run(['--model', join(dir, 'missing.safetensors')])).rejects.toThrow('not found');
  });

  it('runs, writes the run folder, and resumes from it', async () => {
    const out = join(dir, 'run');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await train.run([...small, '--total-training-steps', '1', '--out', out])).toBe(0);
      expect(await train.run(['--resume', out, '--total-training-steps', '2', '--out', out, '--quiet'])).toBe(
        0,
      );
    } finally {
      log.mockRestore();
    }
    const lines = parseFileLogger(readFileSync(join(out, 'metrics.jsonl'), 'utf8'));
    expect(lines.map((l) => l.step)).toEqual([0, 1, 2]);
    expect(lines[2].data['lab/policy_version']).toBe(2);
    expect(existsSync(join(out, 'traces', 'step_000002.jsonl'))).toBe(true);
    expect(readFileSync(join(out, 'checkpoints', 'latest'), 'utf8')).toBe(
      'checkpoints/step_000002.safetensors',
    );
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).lab.harness).toBe('instruction-short');
  });

  it('samples on transformers.js (f16 weights) when asked, syncing its weights after each update', async () => {
    const out = join(dir, 'tjs');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const flags = ['--rollout-name', 'transformers.js', '--rollout-precision', 'f16'];
      expect(await train.run([...small, ...flags, '--total-training-steps', '2', '--out', out])).toBe(0);
    } finally {
      log.mockRestore();
    }
    const all = parseFileLogger(readFileSync(join(out, 'metrics.jsonl'), 'utf8'));
    // step 0: validation before training (on transformers.js too)
    expect(all.map((l) => l.step)).toEqual([0, 1, 2]);
    const lines = all.slice(1);
    for (const l of lines) {
      expect(l.data['lab/weight_sync/bytes']).toBeGreaterThan(0);
      expect(l.data['timing_s/update_weights']).toBeGreaterThan(0);
      expect(l.data['training/rollout_probs_diff_valid']).toBe(1);
      // f16 weights against the trainer's f32: a small, real gap
      expect(l.data['lab/rollout_logprob_diff/max']).toBeGreaterThan(1e-6);
      expect(l.data['lab/rollout_logprob_diff/max']).toBeLessThan(0.1);
    }
    const trace = readFileSync(join(out, 'traces', 'step_000002.jsonl'), 'utf8');
    const calls = trace
      .trim()
      .split('\n')
      .flatMap((line) => JSON.parse(line).calls as { engine: { engine: string; policy_version: number } }[]);
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) expect(c.engine).toMatchObject({ engine: 'transformers.js', policy_version: 1 });
  });
});

describe('a crashing harness worker', () => {
  it('fails its rollout with the reason; the step goes on and is trained', async () => {
    const tok = loadTokenizer('policy');
    const model = resolveConfig({
      vocabSize: 1024,
      contextLength: 1024,
      layers: 1,
      width: 32,
      heads: 2,
      seed: 4,
    });
    const cfg = resolveTrainConfig({
      lab: { harness: 'instruction-short', train_tasks: 8, workers: 2 },
      data: { train_batch_size: 2, max_response_length: 8 },
      actor_rollout_ref: { actor: { ppo_mini_batch_size: 1 }, rollout: { n: 2 } },
      trainer: { total_training_steps: 1, test_freq: 0, val_before_train: false },
    });
    const storage = new MemoryStorage();
    const crashing = new URL('../../tools/crashingTrainWorker.ts', import.meta.url);
    const local = createLocalRun({
      config: cfg,
      policy: new CpuPolicy(model, {}, initParams(model)),
      tokenizer: tok,
      storage,
      makeRunner: (handler) =>
        new WorkerPool({
          size: 2,
          spawn: () => spawnNodeHarnessWorker(crashing),
          connect: (port) => serveChannel(port, handler),
          timeoutMs: 60_000,
        }),
    });
    const summary = await local.run.run();
    local.close();
    expect(summary.steps).toBe(1);
    const [line] = parseFileLogger(storage.text('metrics.jsonl'));
    expect(line.data['lab/n_failed_rollouts']).toBe(1);
    expect(line.data['lab/rollout_failures/crash']).toBe(1);
    expect(line.data['actor/n_updates']).toBeGreaterThan(0);
    const failed = storage
      .text('traces/step_000001.jsonl')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((r) => r.state === 'failed');
    expect(failed.error).toContain('simulated harness crash');
    // the call made before the crash is kept in the trace
    expect(failed.calls.length).toBe(1);
  });
});
