import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { command as train } from '../../../src/cli/commands/train';
import { readLlamaFolder } from '../../../src/engine/llama/hfFolder';
import { loraLayout } from '../../../src/engine/llama/lora';
import { readAdapter } from '../../../src/engine/llama/peftAdapter';
import { nodeFolderReader } from '../../../src/engine/onnx/folder';
import { decodeTrainCheckpoint } from '../../../src/train/checkpoint';
import { parseFileLogger } from '../../../src/train/verlLog';

const dir = mkdtempSync(join(tmpdir(), 'train-llama-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const model = resolve(__dirname, '../../models/qwen3');

const lora = [
  '--harness',
  'instruction-short',
  '--model',
  model,
  '--lora-rank',
  '4',
  '--lora-alpha',
  '8',
  '--train-batch-size',
  '2',
  '--rollout-n',
  '4',
  '--ppo-mini-batch-size',
  '2',
  '--max-response-length',
  '8',
  '--max-prompt-length',
  '100',
  '--max-model-len',
  '128',
  '--workers',
  '1',
  '--train-tasks',
  '8',
  '--val-tasks',
  '2',
  '--test-freq',
  '0',
  '--save-freq',
  '1',
  '--lr',
  '1e-2',
  '--use-kl-loss',
  '--quiet',
];

const quietly = async (argv: string[]) => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    return await train.run(argv);
  } finally {
    log.mockRestore();
  }
};

const DETERMINISTIC = [
  'actor/pg_loss',
  'actor/grad_norm',
  'actor/kl_loss',
  'actor/entropy',
  'critic/rewards/mean',
];

describe('lab train --model DIR (a Hugging Face folder) with LoRA', () => {
  it('refuses LoRA keys that cannot apply, naming the flag', async () => {
    await expect(train.run(['--model', 'init', '--lora-rank', '4'])).rejects.toThrow(
      '--lora-rank: LoRA needs a Hugging Face model folder',
    );
    await expect(train.run([...lora, '--target-modules', 'q_proj,lm_head'])).rejects.toThrow(
      "--target-modules: target_modules: unknown module 'lm_head'",
    );
    await expect(train.run([...lora, '--rollout-name', 'onnxruntime-web'])).rejects.toThrow(
      "--rollout-name: a Hugging Face model folder samples from the trainer's own engine",
    );
  });

  it('refuses, from config.json alone, a step over the stated memory limit, naming the limit and the fix', async () => {
    const err = await train.run([...lora, '--memory-limit-mib', '4']).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const said = (err as Error).message;
    expect(said.startsWith(`--model: ${model}: cannot fit: one LoRA step (`), said).toBe(true);
    expect(said).toMatch(
      /; largest term: \w+ \d+\.\d MiB\) exceeds the machine's memory \(4\.0 MiB, lab\.memory_limit_mib\) by \d+\.\d MiB\. It would fit with /,
    );
    expect(said).toContain('actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu');
  });

  it('rollouts from transformers.js on the folder exported with the merged adapter, re-exported at every weight sync', async () => {
    const out = join(dir, 'tjs');
    const argv = [...lora, '--rollout-name', 'transformers.js'];
    expect(await quietly([...argv, '--total-training-steps', '3', '--out', out])).toBe(0);
    const lines = parseFileLogger(readFileSync(join(out, 'metrics.jsonl'), 'utf8'));
    expect(lines.map((l) => l.step)).toEqual([1, 2, 3]);
    for (const l of lines) {
      // each step's update re-exported the merged weights and loaded them in transformers.js
      expect(l.data['lab/weight_sync/export_s'] as number).toBeGreaterThan(0);
      expect(l.data['lab/weight_sync/load_s'] as number).toBeGreaterThan(0);
      expect(l.data['lab/weight_sync/bytes'] as number).toBeGreaterThan(0);
      // the trainer's recompute of the sampled tokens agrees with transformers.js's: the rollouts were sampled
      // on the weights the trainer had (steps 2 and 3 after the adapter moved)
      expect(l.data['training/rollout_probs_diff_max'] as number, `step ${l.step}`).toBeLessThan(1e-4);
    }
    // the adapter moved the policy away from the base, so a stale export would have disagreed
    expect(lines[2].data['actor/kl_loss'] as number).toBeGreaterThan(0);
  });

  it('three RL steps: finite metrics, the KL against the frozen base grows, checkpoints hold the adapter (PEFT folder too) and AdamW state; resume reproduces step 3', async () => {
    const full = join(dir, 'full');
    const cut = join(dir, 'cut');
    expect(await quietly([...lora, '--total-training-steps', '3', '--out', full])).toBe(0);
    const lines = parseFileLogger(readFileSync(join(full, 'metrics.jsonl'), 'utf8'));
    expect(lines.map((l) => l.step)).toEqual([1, 2, 3]);
    for (const l of lines)
      for (const k of DETERMINISTIC) expect(Number.isFinite(l.data[k]), `${k} at step ${l.step}`).toBe(true);
    // the trainer's recompute of each sampled token (its prompt as context) is the sampler's own log-prob
    for (const l of lines)
      expect(l.data['training/rollout_probs_diff_max'] as number, `step ${l.step}`).toBeLessThan(1e-5);
    // step 1 starts at the base (B = 0): no KL; the adapter then moves the policy away from the base
    expect(lines[0].data['actor/kl_loss']).toBe(0);
    expect(lines[2].data['actor/kl_loss']).toBeGreaterThan(0);
    expect(lines.every((l) => (l.data['actor/grad_norm'] as number) > 0)).toBe(true);

    const folder = await readLlamaFolder(await nodeFolderReader(model));
    const layout = loraLayout(folder.config, {
      r: 4,
      alpha: 8,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    });
    const file = join(full, 'checkpoints', 'step_000003.safetensors');
    const ck = decodeTrainCheckpoint(new Uint8Array(readFileSync(file)), file, layout);
    expect(ck.params.length).toBe(layout.total);
    expect(ck.optimizer.m.length).toBe(layout.total);
    expect(ck.optimizer.step).toBe(3);
    expect(ck.config.actor_rollout_ref.model.lora_rank).toBe(4);
    // the same adapter as PEFT's folder beside it
    const peft = await readAdapter(
      await nodeFolderReader(join(full, 'checkpoints', 'step_000003')),
      folder.config,
    );
    expect(Array.from(peft.params)).toEqual(Array.from(ck.params));
    expect(Math.max(...Array.from(ck.params, Math.abs))).toBeGreaterThan(0);

    expect(await quietly([...lora, '--total-training-steps', '2', '--out', cut])).toBe(0);
    expect(await quietly(['--resume', cut, '--total-training-steps', '3', '--out', cut, '--quiet'])).toBe(0);
    const resumed = parseFileLogger(readFileSync(join(cut, 'metrics.jsonl'), 'utf8'));
    expect(resumed.map((l) => l.step)).toEqual([1, 2, 3]);
    for (const k of DETERMINISTIC) expect(resumed[2].data[k], k).toBe(lines[2].data[k]);
    const cutFile = join(cut, 'checkpoints', 'step_000003.safetensors');
    const again = decodeTrainCheckpoint(new Uint8Array(readFileSync(cutFile)), cutFile, layout);
    expect(Array.from(again.params)).toEqual(Array.from(ck.params));
    expect(Array.from(again.optimizer.v)).toEqual(Array.from(ck.optimizer.v));
    expect(existsSync(join(cut, 'checkpoints', 'step_000003', 'adapter_config.json'))).toBe(true);
    // a policy-only reader is told what the file needs
    await expect(train.run(['--model', file, '--quiet', '--out', join(dir, 'x')])).rejects.toThrow(
      /holds a Hugging Face model's or LoRA adapter's tensors/,
    );
  }, 240_000);
});
