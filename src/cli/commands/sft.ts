/**
 * `lab sft`: the SFT warm start of a harness, written as a policy checkpoint. With the defaults this is how
 * the shipped public/checkpoints/<harness>.safetensors are made (tests/tools/make-checkpoints.sh); the CPU
 * engine is deterministic, so the same seed gives the same bytes.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { encodeCheckpoint, saveCheckpointFile } from '../../engine/checkpoint';
import { CpuPolicy } from '../../engine/policy/cpuPolicy';
import { HARNESSES, isHarnessName } from '../../harness/registry';
import { MODEL_PRESETS, type ModelPreset, policyConfigFor } from '../../train/models';
import { hashSeed } from '../../train/rng';
import { runSft } from '../../train/sft';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { loadTokenizer } from '../tokenizers';

const usage = `lab sft --harness ${HARNESSES.names().join('|')} --out FILE.safetensors
    [--seed S=1] [--tasks N=256] [--task-level L] [--steps K=300] [--batch-rows B=16] [--lr LR=3e-3]
    [--model-preset ${Object.keys(MODEL_PRESETS).join('|')}=tiny] [--context T=1024] [--every N=20]
  supervised steps on the scripted expert's trajectories (token-mean NLL on trainable tokens), CPU engine.`;

function int(v: unknown, flag: string, dflt: number, min = 1): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${flag} must be an integer ≥ ${min}, got ${v}`);
  return n;
}

export const command: Command = {
  summary: "SFT warm start on a harness's scripted expert trajectories; writes a policy checkpoint",
  usage,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      harness: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'number' },
      tasks: { type: 'number' },
      'task-level': { type: 'number' },
      steps: { type: 'number' },
      'batch-rows': { type: 'number' },
      lr: { type: 'number' },
      'model-preset': { type: 'string' },
      context: { type: 'number' },
      every: { type: 'number' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const harness = flags.harness as string | undefined;
    if (!harness || !isHarnessName(harness))
      throw new UsageError(
        `--harness must be one of ${HARNESSES.names().join(', ')}, got ${harness ?? 'nothing'}`,
      );
    const out = flags.out as string | undefined;
    if (!out) throw new UsageError('--out is required');
    const preset = (flags['model-preset'] as string | undefined) ?? 'tiny';
    if (!Object.hasOwn(MODEL_PRESETS, preset))
      throw new UsageError(
        `--model-preset must be one of ${Object.keys(MODEL_PRESETS).join(', ')}, got '${preset}'`,
      );
    const seed = int(flags.seed, 'seed', 1, 0);
    const levels = HARNESSES.get(harness).levels.map((l) => l.level);
    const level = flags['task-level'] === undefined ? null : int(flags['task-level'], 'task-level', 1);
    if (level !== null && !levels.includes(level))
      throw new UsageError(
        `--task-level must be one of ${harness}'s levels ${levels.join(', ')}, got ${level}`,
      );
    const steps = int(flags.steps, 'steps', 300);
    const lr = flags.lr === undefined ? 3e-3 : Number(flags.lr);
    if (!(lr > 0)) throw new UsageError(`--lr must be > 0, got ${flags.lr}`);
    const every = int(flags.every, 'every', 20);
    const tokenizer = loadTokenizer('policy');
    const config = policyConfigFor(
      preset as ModelPreset,
      tokenizer.vocabSize,
      int(flags.context, 'context', 1024, 2),
      hashSeed(seed, 'sft-init') % 2 ** 31,
    );
    const policy = new CpuPolicy(config, { weightDecay: 0.01, beta2: 0.99 });
    const t0 = performance.now();
    const r = await runSft(
      policy,
      tokenizer,
      {
        harness,
        seed,
        tasks: int(flags.tasks, 'tasks', 256),
        level,
        steps,
        batchRows: int(flags['batch-rows'], 'batch-rows', 16),
        lr,
      },
      (s) => {
        if (s.step % every === 0 || s.step === steps)
          console.log(
            `sft step ${s.step}/${steps}: loss ${s.loss.toFixed(4)}, grad norm ${s.gradNorm.toFixed(3)}, lr ${s.lr.toExponential(2)} (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
          );
      },
    );
    mkdirSync(dirname(out), { recursive: true });
    await saveCheckpointFile(
      out,
      encodeCheckpoint(config, policy.params, {
        'harness_lab.sft': JSON.stringify({
          harness,
          seed,
          ...(level === null ? {} : { task_level: level }),
          steps,
          lr,
          preset,
          expert_rows: r.rows,
          expert_tokens: r.tokens,
          final_loss: r.losses[r.losses.length - 1],
        }),
      }),
    );
    console.log(
      `sft: ${r.rows} expert rows (${r.tokens} trainable tokens, ${r.failedExperts} failed experts) → ${out}`,
    );
    return 0;
  },
};
