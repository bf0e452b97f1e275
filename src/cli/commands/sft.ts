/**
 * `lab sft`: the SFT warm start of a harness, written as a policy checkpoint. With the defaults this is how
 * the shipped public/checkpoints/<harness>.safetensors are made (tests/tools/make-checkpoints.sh); the CPU
 * engine is deterministic, so the same seed gives the same bytes.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, saveCheckpointFile } from '../../engine/checkpoint';
import { CpuPolicy } from '../../engine/policy/cpuPolicy';
import { HARNESSES, isHarnessName } from '../../harness/registry';
import { MODEL_PRESETS, type ModelPreset, policyConfigFor } from '../../train/models';
import { hashSeed } from '../../train/rng';
import { runSft } from '../../train/sft';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { loadTokenizer } from '../tokenizers';

const usage = `lab sft --harness ${HARNESSES.names().join('|')} --out FILE.safetensors
    [--seed S=1] [--tasks N=256] [--pretrain-tasks N=0] [--task-level L] [--steps K=300] [--batch-rows B=16] [--lr LR=3e-3]
    [--model-preset ${Object.keys(MODEL_PRESETS).join('|')}=tiny] [--context T=1024] [--every N=20] [--init FILE]
    [--schedule cosine|constant=cosine] [--warmup W=min(20,K/10)] [--save-every N]
  supervised steps on the scripted expert's trajectories (token-mean NLL on trainable tokens), CPU engine.
  --pretrain-tasks adds the expert's rows on N of the harness's pre-training tasks (generated content neither
  split uses: search asks over a fresh world per task): only copying from the context lowers their loss.
  --init continues from a policy checkpoint (its shape; fresh optimizer state) instead of a seeded initialisation.
  --save-every also writes FILE.stepN.safetensors every N steps (with --schedule constant and --warmup W it is
  the checkpoint --steps N would write).`;

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
      'pretrain-tasks': { type: 'number' },
      'task-level': { type: 'number' },
      steps: { type: 'number' },
      'batch-rows': { type: 'number' },
      lr: { type: 'number' },
      'model-preset': { type: 'string' },
      context: { type: 'number' },
      every: { type: 'number' },
      init: { type: 'string' },
      schedule: { type: 'string' },
      warmup: { type: 'number' },
      'save-every': { type: 'number' },
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
    const pretrainTasks = int(flags['pretrain-tasks'], 'pretrain-tasks', 0, 0);
    if (pretrainTasks > 0 && !HARNESSES.get(harness).pretrainTasks)
      throw new UsageError(`--pretrain-tasks: harness '${harness}' has no pre-training tasks`);
    const steps = int(flags.steps, 'steps', 300);
    const lr = flags.lr === undefined ? 3e-3 : Number(flags.lr);
    if (!(lr > 0)) throw new UsageError(`--lr must be > 0, got ${flags.lr}`);
    const every = int(flags.every, 'every', 20);
    const schedule = (flags.schedule as string | undefined) ?? 'cosine';
    if (schedule !== 'cosine' && schedule !== 'constant')
      throw new UsageError(`--schedule must be cosine or constant, got '${schedule}'`);
    const warmup = int(flags.warmup, 'warmup', Math.min(20, Math.floor(steps / 10)), 0);
    const saveEvery = flags['save-every'] === undefined ? null : int(flags['save-every'], 'save-every', 1);
    if (saveEvery !== null && !out.endsWith('.safetensors'))
      throw new UsageError('--save-every needs an --out ending in .safetensors');
    const tokenizer = loadTokenizer('policy');
    const initFile = flags.init as string | undefined;
    if (initFile !== undefined && (flags['model-preset'] !== undefined || flags.context !== undefined))
      throw new UsageError('--init takes the shape from its checkpoint; drop --model-preset and --context');
    const init = initFile === undefined ? null : readInit(initFile, tokenizer.vocabSize);
    const config =
      init?.config ??
      policyConfigFor(
        preset as ModelPreset,
        tokenizer.vocabSize,
        int(flags.context, 'context', 1024, 2),
        hashSeed(seed, 'sft-init') % 2 ** 31,
      );
    const policy = new CpuPolicy(config, { weightDecay: 0.01, beta2: 0.99 }, init?.params);
    mkdirSync(dirname(out), { recursive: true });
    const expert = { rows: 0, tokens: 0 };
    const checkpointAt = (at: number, rows: number, tokens: number, loss: number) =>
      encodeCheckpoint(config, policy.params, {
        'harness_lab.sft': JSON.stringify({
          harness,
          seed,
          ...(level === null ? {} : { task_level: level }),
          ...(pretrainTasks ? { pretrain_tasks: pretrainTasks } : {}),
          steps: at,
          lr,
          ...(schedule === 'cosine' ? {} : { schedule }),
          ...(flags.warmup === undefined ? {} : { warmup }),
          preset: init ? (init.metadata.preset ?? null) : preset,
          ...(init ? { init: { file: initFile, sft: init.metadata } } : {}),
          expert_rows: rows,
          expert_tokens: tokens,
          final_loss: loss,
        }),
      });
    const t0 = performance.now();
    const r = await runSft(
      policy,
      tokenizer,
      {
        harness,
        seed,
        tasks: int(flags.tasks, 'tasks', 256),
        pretrainTasks,
        level,
        steps,
        batchRows: int(flags['batch-rows'], 'batch-rows', 16),
        lr,
        warmup,
        schedule,
      },
      (s) => {
        if (saveEvery !== null && s.step % saveEvery === 0 && s.step < steps) {
          const file = out.replace(/\.safetensors$/, `.step${s.step}.safetensors`);
          writeFileSync(file, checkpointAt(s.step, expert.rows, expert.tokens, s.loss));
        }
        if (s.step % every === 0 || s.step === steps)
          console.log(
            `sft step ${s.step}/${steps}: loss ${s.loss.toFixed(4)}, grad norm ${s.gradNorm.toFixed(3)}, lr ${s.lr.toExponential(2)} (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
          );
      },
      (rows, tokens) => {
        expert.rows = rows;
        expert.tokens = tokens;
      },
    );
    await saveCheckpointFile(out, checkpointAt(steps, r.rows, r.tokens, r.losses[r.losses.length - 1]));
    console.log(
      `sft: ${r.rows} expert rows (${r.tokens} trainable tokens, ${r.failedExperts} failed experts) → ${out}`,
    );
    return 0;
  },
};

/** A policy checkpoint to continue SFT from, with its own `harness_lab.sft` record (if any). */
function readInit(
  file: string,
  vocabSize: number,
): {
  config: ReturnType<typeof decodeCheckpoint>['config'];
  params: Float32Array;
  metadata: Record<string, unknown>;
} {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(readFileSync(file));
  } catch (e) {
    throw new UsageError(`--init: cannot read '${file}' (${(e as Error).message})`);
  }
  const ck = decodeCheckpoint(bytes, file);
  if (ck.config.vocabSize !== vocabSize)
    throw new UsageError(
      `--init: '${file}' has vocabulary ${ck.config.vocabSize}, the policy tokenizer has ${vocabSize}`,
    );
  const raw = ck.metadata['harness_lab.sft'];
  return { config: ck.config, params: ck.params, metadata: raw ? JSON.parse(raw) : {} };
}
