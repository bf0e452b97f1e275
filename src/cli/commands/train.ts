/**
 * `lab train`: RL on a harness with the project's policy, in this process (harness agents in worker_threads,
 * the proxy in-process, the trainer on the CPU engine or WebGPU via Dawn). Every config key is a flag named
 * after its upstream key (`--adv-estimator`, `--loss-agg-mode`, `--trace-aggregator-level`, `--rollout-n`,
 * `--async`, …) and also takes Hydra-style `key=value` overrides with the full upstream path. Writes the run
 * folder: metrics.jsonl (verl's file-logger format), traces/step_*.jsonl, checkpoints/, config.json.
 */
import { constants as bufferConstants } from 'node:buffer';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GpuContext } from '../../engine/gpu/device';
import { LlamaConfigError, parseLlamaConfig } from '../../engine/llama/config';
import type { MemoryLimits } from '../../engine/llama/memoryFit';
import {
  broughtModel,
  runAdapterLimits,
  runCpuLimits,
  runMemoryRefusal,
  runTarget,
} from '../../train/broughtModel';
import { decodeTrainCheckpoint, type TrainCheckpoint, trainCheckpointConfig } from '../../train/checkpoint';
import {
  applyDotlist,
  CONFIG_FIELDS,
  type ConfigField,
  checkConsistency,
  cloneConfig,
  fieldByPath,
  resolveTrainConfig,
  setConfigValue,
  type TrainConfig,
  TrainConfigError,
} from '../../train/config';
import type { TrainEvent } from '../../train/events';
import {
  type BroughtModel,
  type LaunchedRun,
  launchRun,
  RunLaunchError,
  type RunPlatform,
} from '../../train/launch';
import { rolloutChoiceLabel } from '../../train/rolloutEngines';
import { nodeRolloutEnv } from '../../train/rolloutEnvNode';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { loadLlamaModel } from '../llamaModel';
import { spawnNodeHarnessWorker } from '../nodeWorkers';
import { dirStorage } from '../runStorage';
import { loadTokenizer } from '../tokenizers';
import { nodeGpuContext, reexecWithSwiftShader } from '../webgpuNode';
import { presetUsage, runTrainPreset } from './trainPreset';

const PUBLIC = fileURLToPath(new URL('../../../public/', import.meta.url));

const FLAG_COLUMN = 48;

/** One flag's help line; a flag with its values wider than the column puts the description on the next line. */
export function flagUsage(f: ConfigField): string {
  const v =
    f.kind === 'bool' ? '' : ` ${f.kind === 'enum' ? (f.choices?.() ?? []).join('|') : f.kind.toUpperCase()}`;
  const head = `  --${f.flag}${v}`;
  const text = `${f.path}: ${f.help}`;
  return head.length + 2 <= FLAG_COLUMN
    ? head.padEnd(FLAG_COLUMN) + text
    : `${head}\n${' '.repeat(FLAG_COLUMN)}${text}`;
}

const usage = `lab train [--out DIR] [--resume DIR|FILE] [--config FILE.json] [--console] [--quiet] [FLAGS…] [key=value…]
  --out DIR          run folder (metrics.jsonl, traces/, checkpoints/, config.json); default runs/<harness>-<seed>
  --resume DIR|FILE  continue from a training checkpoint (a run folder's latest, or a .safetensors file)
  --config FILE      a JSON TrainConfig (any subset of keys), applied before flags
  --console          also print verl's console line (step:N - key:value - …) per step
  key=value          any config key by its full path, e.g. algorithm.adv_estimator=rloo
${presetUsage}
 bool flags take no value (--async); --no-<flag> sets one false. Config flags:
${CONFIG_FIELDS.map(flagUsage).join('\n')}`;

export function trainFlagSpec() {
  const spec: Record<string, { type: 'bool' | 'string' | 'number'; multiple?: boolean }> = {
    out: { type: 'string' },
    resume: { type: 'string' },
    config: { type: 'string' },
    console: { type: 'bool' },
    quiet: { type: 'bool' },
    preset: { type: 'string' },
    steps: { type: 'string' },
  };
  for (const f of CONFIG_FIELDS) {
    spec[f.flag] = { type: f.kind === 'bool' ? 'bool' : 'string' };
    if (f.kind === 'bool') spec[`no-${f.flag}`] = { type: 'bool' };
  }
  return spec;
}

/** Applies parsed flags and positional key=value overrides; a bad value is a usage error naming the flag. */
export function configFromArgs(
  base: TrainConfig,
  flags: Record<string, unknown>,
  positionals: string[],
): TrainConfig {
  const c = cloneConfig(base);
  for (const f of CONFIG_FIELDS) {
    const on = flags[f.flag];
    const off = f.kind === 'bool' ? flags[`no-${f.flag}`] : undefined;
    if (on !== undefined && off !== undefined)
      throw new UsageError(`--${f.flag} and --no-${f.flag} given together`);
    if (on === undefined && off === undefined) continue;
    const raw = f.kind === 'bool' ? String(on !== undefined) : String(on);
    try {
      setConfigValue(c, f.path, raw);
    } catch (e) {
      if (e instanceof TrainConfigError) throw new UsageError(`--${f.flag}: ${e.message}`);
      throw e;
    }
  }
  for (const p of positionals)
    if (!p.includes('=')) throw new UsageError(`unexpected argument '${p}' (overrides are key=value)`);
  try {
    applyDotlist(c, positionals);
    checkConsistency(c);
  } catch (e) {
    // a combination that does not hold names the flag of the key it blames
    if (e instanceof TrainConfigError) {
      const flag = fieldByPath(e.path)?.flag;
      throw new UsageError(flag ? `--${flag}: ${e.message}` : e.message);
    }
    throw e;
  }
  return c;
}

/** Whether actor_rollout_ref.model.path names a Hugging Face model folder (a directory with config.json). */
function isModelFolder(path: string): boolean {
  return existsSync(join(path, 'config.json')) && statSync(path).isDirectory();
}

/** A training checkpoint's file and bytes, from a run folder (its checkpoints/latest) or a file. */
function resumeFile(path: string): { file: string; bytes: Uint8Array } {
  if (!existsSync(path)) throw new UsageError(`--resume: ${path} does not exist`);
  let file = path;
  if (statSync(path).isDirectory()) {
    const latest = join(path, 'checkpoints', 'latest');
    if (!existsSync(latest))
      throw new UsageError(`--resume: ${path} has no checkpoints/latest (no checkpoint was saved)`);
    file = join(path, readFileSync(latest, 'utf8').trim());
  }
  return { file, bytes: new Uint8Array(readFileSync(file)) };
}

/**
 * The brought model of a Hugging Face folder for a run (train/broughtModel.ts: LoRA or full fine-tuning on the
 * CPU engine, or with lab.backend webgpu (or auto on a hardware adapter) on the WebGPU engine in Dawn; a resumed
 * checkpoint restored), its refusals named by flag.
 */
async function llamaRunPolicy(
  cfg: TrainConfig,
  resume: { file: string; bytes: Uint8Array } | null,
): Promise<BroughtModel & { checkpoint: TrainCheckpoint | null }> {
  const m = cfg.actor_rollout_ref.model;
  // lab.backend webgpu / auto: the WebGPU engine (Dawn) where the adapter holds the model, else the CPU one
  const backend = cfg.lab.backend;
  let gpu: GpuContext | null = null;
  if (backend !== 'cpu')
    try {
      gpu = await nodeGpuContext();
    } catch (e) {
      if (backend === 'webgpu') throw new UsageError(`--backend webgpu: ${(e as Error).message}`);
    }
  // as for the GPT-2 policy (train/launch.ts): auto does not pick a software adapter, slower than the CPU engine
  if (backend === 'auto' && gpu?.status.isFallbackAdapter) {
    gpu.destroy();
    gpu = null;
  }
  try {
    // the step's memory against where it will train, from config.json alone: refused before any weight is read
    const limits = folderRunLimits(cfg, m.path, gpu);
    if (gpu && limits.kind === 'cpu') {
      gpu.destroy();
      gpu = null;
    }
    const loaded = await loadLlamaModel(m.path, {
      contextLength: cfg.actor_rollout_ref.rollout.max_model_len,
    });
    loaded.engine.dispose();
    const run = await broughtModel(cfg, loaded.folder, {
      name: m.path,
      tokenizerName: loaded.tokenizer.name,
      resume,
      gpu,
      limits,
    });
    return { ...run.model, checkpoint: run.checkpoint };
  } catch (e) {
    gpu?.destroy();
    if (e instanceof RunLaunchError)
      throw new UsageError(`--${fieldByPath(e.path)?.flag ?? e.path}: ${e.detail}`);
    throw e;
  }
}

/**
 * The CLI's CPU engine limits: the machine's memory (os.totalmem) for the whole step, and V8's longest typed
 * array (buffer.constants.MAX_LENGTH elements: 2^32 on Node 20) for each single array; lab.memory_limit_mib
 * replaces the total where set.
 */
export function nodeCpuLimits(): Extract<MemoryLimits, { kind: 'cpu' }> {
  return {
    kind: 'cpu',
    budget: totalmem(),
    label: "machine's memory",
    budgetNote: 'os.totalmem()',
    maxArrayLength: bufferConstants.MAX_LENGTH,
  };
}

/**
 * A folder run's target and limits (train/broughtModel.ts runTarget: Dawn's adapter with lab.backend webgpu, or
 * auto where it holds the step; else the CPU engine), its step checked from config.json alone: a step that
 * cannot fit is a RunLaunchError naming what does not fit, the limit and the setting that would make it fit.
 */
function folderRunLimits(cfg: TrainConfig, dir: string, gpu: GpuContext | null): MemoryLimits {
  let model: ReturnType<typeof parseLlamaConfig>;
  try {
    model = parseLlamaConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
  } catch (e) {
    const why = e instanceof LlamaConfigError ? `${e.field}: ${e.detail}` : (e as Error).message;
    throw new RunLaunchError('actor_rollout_ref.model.path', `${join(dir, 'config.json')}: ${why}`);
  }
  const cpu = runCpuLimits(cfg, nodeCpuLimits());
  const adapter = gpu ? runAdapterLimits(cfg, gpu.status.limits, 'Dawn adapter') : null;
  const limits = runTarget(cfg, model, adapter, cpu);
  const refused = runMemoryRefusal(cfg, model, limits);
  if (refused) throw new RunLaunchError('actor_rollout_ref.model.path', `${dir}: ${refused}`);
  return limits;
}

/** A training checkpoint from a run folder (its checkpoints/latest) or a file. */
function loadResume(path: string): TrainCheckpoint {
  const { file, bytes } = resumeFile(path);
  try {
    return decodeTrainCheckpoint(bytes, file);
  } catch (e) {
    throw new UsageError(`--resume: ${(e as Error).message}`);
  }
}

function fmt(v: number | null | undefined, digits = 3): string {
  return v === null || v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits);
}

function progressLine(e: Extract<TrainEvent, { type: 'step' }>, total: number): string {
  const m = e.metrics;
  const t = (k: string) => fmt(m[`timing_s/${k}`], 1);
  const val = m['val/reward'] !== undefined ? `  val ${fmt(m['val/reward'])}` : '';
  return (
    `step ${e.step}/${total}  reward ${fmt(m['critic/rewards/mean'])}${val}  pg_loss ${fmt(m['actor/pg_loss'], 4)}` +
    `  kl ${fmt(m['actor/ppo_kl'], 4)}  clip ${fmt(m['actor/pg_clipfrac'])}  entropy ${fmt(m['actor/entropy'])}` +
    `  rows ${m['training/n_sample_trained'] ?? '-'}  | gen ${t('gen')}s old_lp ${t('old_log_prob')}s update ${t('update_actor')}s` +
    ` sync ${t('update_weights')}s  step ${t('step')}s  ${fmt(m['lab/gen_tokens_per_s'], 0)} gen tok/s`
  );
}

/** Node's part of a run: the policy tokenizer, public/ on disk, Dawn's WebGPU, worker_threads. */
function nodeRunPlatform(cfg: TrainConfig): RunPlatform {
  return {
    name: 'node',
    tokenizer: loadTokenizer('policy'),
    readShipped: async (p) => {
      const full = isAbsolute(p) || existsSync(p) ? p : join(PUBLIC, p);
      if (!existsSync(full))
        throw new UsageError(
          `initial weights ${p} not found${cfg.actor_rollout_ref.model.path === 'sft' ? ' (regenerate the shipped SFT checkpoints with bash tests/tools/make-checkpoints.sh, or use --model init)' : ''}`,
        );
      return new Uint8Array(await readFile(full));
    },
    gpu: () => nodeGpuContext().catch((e: Error) => ({ available: false as const, reason: e.message })),
    spawnHarnessWorker: () => spawnNodeHarnessWorker(),
    rolloutEnv: nodeRolloutEnv(),
  };
}

export const command: Command = {
  summary: 'RL training of the policy on a harness (rollouts in worker threads, in-process proxy, verl keys)',
  usage,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, trainFlagSpec());
    if (flags.preset !== undefined) {
      for (const f of ['resume', 'config'])
        if (flags[f] !== undefined) throw new UsageError(`--${f} does not apply with --preset`);
      if (flags.preset !== 'list' && flags.backend !== undefined && flags.backend !== 'cpu') {
        const child = reexecWithSwiftShader();
        if (child !== null) return child;
      }
      return runTrainPreset({
        preset: String(flags.preset),
        out: flags.out === undefined ? undefined : String(flags.out),
        steps: flags.steps === undefined ? undefined : String(flags.steps),
        quiet: Boolean(flags.quiet),
        withFlags: (b) => configFromArgs(b, flags, positionals),
        runOne: async (cfg, out) => {
          mkdirSync(out, { recursive: true });
          const file = join(out, 'preset-variant.json');
          writeFileSync(file, `${JSON.stringify(cfg, null, 2)}\n`);
          const pass = ['quiet', 'console'].filter((f) => flags[f]).map((f) => `--${f}`);
          return command.run(['--config', file, '--out', out, ...pass]);
        },
      });
    }
    if (flags.steps !== undefined)
      throw new UsageError('--steps applies with --preset (else --total-training-steps)');
    let base: TrainConfig;
    let resume: TrainCheckpoint | null = null;
    let resumeBytes: { file: string; bytes: Uint8Array } | null = null;
    if (flags.resume !== undefined) {
      resumeBytes = resumeFile(String(flags.resume));
      let stored: TrainConfig;
      try {
        stored = trainCheckpointConfig(resumeBytes.bytes, resumeBytes.file);
      } catch (e) {
        throw new UsageError(`--resume: ${(e as Error).message}`);
      }
      // a Hugging Face model's run is decoded with its folder's layout, below
      if (isModelFolder(stored.actor_rollout_ref.model.path)) base = stored;
      else {
        resume = loadResume(String(flags.resume));
        base = resume.config;
      }
    } else if (flags.config !== undefined) {
      const path = String(flags.config);
      if (!existsSync(path)) throw new UsageError(`--config: ${path} does not exist`);
      try {
        base = resolveTrainConfig(JSON.parse(readFileSync(path, 'utf8')));
      } catch (e) {
        throw new UsageError(`--config ${path}: ${(e as Error).message}`);
      }
    } else base = resolveTrainConfig({});
    const cfg = configFromArgs(base, flags, positionals);
    if (cfg.lab.backend !== 'cpu') {
      const child = reexecWithSwiftShader();
      if (child !== null) return child;
    }
    const hf = isModelFolder(cfg.actor_rollout_ref.model.path)
      ? await llamaRunPolicy(cfg, resume ? null : resumeBytes)
      : null;
    if (!hf && cfg.actor_rollout_ref.model.lora_rank > 0)
      throw new UsageError(
        '--lora-rank: LoRA needs a Hugging Face model folder as actor_rollout_ref.model.path (--model DIR)',
      );
    if (hf) resume = hf.checkpoint;
    const out = resolve(String(flags.out ?? join('runs', `${cfg.lab.harness}-${cfg.lab.seed}`)));
    const quiet = Boolean(flags.quiet);
    const total = cfg.trainer.total_training_steps;
    let launched: LaunchedRun;
    try {
      launched = await launchRun({
        config: cfg,
        resume,
        model: hf,
        platform: nodeRunPlatform(cfg),
        storage: dirStorage(out),
        consoleLog: Boolean(flags.console),
        onEvent: (e) => {
          if (quiet) return;
          if (e.type === 'step') console.log(progressLine(e, total));
          else if (e.type === 'val')
            console.log(
              `val step ${e.step}: reward ${fmt(e.metrics['val/reward'])}, pass@${cfg.lab.pass_k} ${fmt(e.metrics[`val/pass@${cfg.lab.pass_k}`])}`,
            );
          else if (e.type === 'log') console.log(e.message);
          else if (e.type === 'checkpoint') console.log(`checkpoint ${join(out, e.path)}`);
        },
      });
    } catch (e) {
      // what the config asks for and this machine cannot give names the flag of its key
      if (e instanceof RunLaunchError) {
        const flag = fieldByPath(e.path)?.flag;
        if (e.path === 'lab.backend') {
          console.error(`lab train: --${flag} ${e.detail}`);
          return 1;
        }
        throw new UsageError(`--${flag ?? e.path}: ${e.message}`);
      }
      throw e;
    }
    const local = launched.local;
    if (launched.note) console.error(`lab train: ${launched.note}`);
    const stop = () => local.run.stop();
    process.once('SIGINT', stop);
    if (!quiet)
      console.log(
        `train: ${cfg.lab.harness}, ${launched.backend} backend, rollouts ${rolloutChoiceLabel(cfg, 'node')}, weights ${launched.weights}, ${cfg.agentlightning.async_rollout.enabled ? 'async' : 'sync'}, ${total} step${total === 1 ? '' : 's'} → ${out}`,
      );
    try {
      const summary = await local.run.run();
      if (!quiet)
        console.log(
          `train: ${summary.reason} after ${summary.steps} steps; metrics in ${join(out, 'metrics.jsonl')}`,
        );
    } finally {
      process.off('SIGINT', stop);
      launched.close();
    }
    return 0;
  },
};
