/**
 * A run's engines for a brought Hugging Face folder (Llama / Qwen2 / Qwen3), the same for `lab train --model DIR`
 * and the Train tab's trainer worker: LoRA when actor_rollout_ref.model.lora_rank > 0 (verl's keys, PEFT's
 * semantics, PEFT's init from the run seed), else full fine-tuning, on the CPU engine (or, given a WebGPU context,
 * the WebGPU engine where the adapter holds the model: engine/policy createPolicyEngine); a resumed checkpoint's
 * trainable tensors and optimizer state restored (decoded with the trainable layout); the KL reference is the
 * frozen base (LoRA, no second copy) or a second copy (full). Before anything is allocated the step's memory is
 * checked against the platform's limits (engine/llama/memoryFit.ts), and a run that cannot fit is refused naming
 * the term and by how much. Every refusal is a RunLaunchError naming the config key.
 */
import { ChatTokenizer } from '../core/tokenize/tokenizer';
import { roundToDtype } from '../engine/cpu/half';
import type { GpuContext } from '../engine/gpu/device';
import type { LlamaFolder } from '../engine/llama/hfFolder';
import { checkLoraConfig, type LoraConfig, LoraConfigError, parseTargetModules } from '../engine/llama/lora';
import {
  type MemoryFit,
  type MemoryLimits,
  stepBuffers,
  trainStepFit,
  webgpuLimits,
} from '../engine/llama/memoryFit';
import { createPolicyEngine, type PolicyEngine } from '../engine/policy';
import { LlamaCpuPolicy } from '../engine/policy/llamaCpuPolicy';
import type { LlamaGpuPolicy } from '../engine/policy/llamaGpuPolicy';
import { decodeTrainCheckpoint, type TrainCheckpoint } from './checkpoint';
import type { TrainConfig } from './config';
import { type BroughtModel, RunLaunchError } from './launch';
import { paddedLength } from './layout';
import { trainerOptions } from './objective';
import { hashSeed } from './rng';

const LORA_KEY: Record<string, string> = {
  r: 'actor_rollout_ref.model.lora_rank',
  lora_alpha: 'actor_rollout_ref.model.lora_alpha',
  target_modules: 'actor_rollout_ref.model.target_modules',
};

/** The run's LoRA config (null: full fine-tuning), or a RunLaunchError naming the key. */
export function runLoraConfig(cfg: TrainConfig): LoraConfig | null {
  const m = cfg.actor_rollout_ref.model;
  if (m.lora_rank === 0) return null;
  try {
    return checkLoraConfig({
      r: m.lora_rank,
      alpha: m.lora_alpha,
      targetModules: parseTargetModules(m.target_modules),
    });
  } catch (e) {
    if (e instanceof LoraConfigError)
      throw new RunLaunchError(LORA_KEY[e.field] ?? 'actor_rollout_ref.model', e.message);
    throw e;
  }
}

/**
 * The step a run trains on: the rows of one micro-batch (ppo_micro_batch_size_per_gpu, at most a mini-batch's
 * ppo_mini_batch_size × rollout.n rows), each as long as the longest row can be laid out (train/layout.ts): the
 * level's prompt + response limits (data.max_* at transition level, trajectory_max_* at trajectory level),
 * padded to its length bucket, at most the context (rollout.max_model_len, capped by the model's positions).
 */
export function runStepShape(cfg: TrainConfig, maxPositions: number) {
  const a = cfg.actor_rollout_ref;
  const context = Math.min(a.rollout.max_model_len, maxPositions);
  const o = trainerOptions(cfg);
  return {
    rows: Math.min(a.actor.ppo_micro_batch_size_per_gpu, a.actor.ppo_mini_batch_size * a.rollout.n),
    tokens: paddedLength(Math.min(o.maxPromptLength + o.maxResponseLength, context), context),
  };
}

/** The step's memory against `limits`, for the run's LoRA keys and shape. */
export function runMemoryFit(
  cfg: TrainConfig,
  model: LlamaFolder['config'],
  limits: MemoryLimits,
): MemoryFit {
  const lora = runLoraConfig(cfg);
  checkBaseDtypeKey(cfg, lora);
  const shape = runStepShape(cfg, model.maxPositions);
  return trainStepFit(model, lora, shape, limits, cfg.lab.lora_base_dtype);
}

/** lab.memory_limit_mib as a budget, when set (> 0): it replaces the platform's figure or estimate. */
export function statedBudget(cfg: TrainConfig): { bytes: number; note: string } | undefined {
  const m = cfg.lab.memory_limit_mib;
  return m > 0 ? { bytes: m * 2 ** 20, note: 'lab.memory_limit_mib' } : undefined;
}

/** A WebGPU adapter's limits for this run: its buffer limits, the total from lab.memory_limit_mib or the estimate. */
export function runAdapterLimits(
  cfg: TrainConfig,
  adapter: { maxBufferSize: number; maxStorageBufferBindingSize: number },
  label: string,
): MemoryLimits {
  return webgpuLimits(adapter, label, statedBudget(cfg));
}

/** CPU limits for this run: the platform's (`limits`) with lab.memory_limit_mib, when set, as the budget. */
export function runCpuLimits(cfg: TrainConfig, limits: Extract<MemoryLimits, { kind: 'cpu' }>): MemoryLimits {
  const stated = statedBudget(cfg);
  return stated ? { ...limits, budget: stated.bytes, budgetNote: stated.note } : limits;
}

/**
 * Where a folder run trains and so which limits its step is checked against: the adapter's (`adapter`, null:
 * none) with lab.backend webgpu, or with auto where the adapter holds the step (else the CPU engine, as
 * broughtModel's engines fall back), the CPU limits with lab.backend cpu.
 */
export function runTarget(
  cfg: TrainConfig,
  model: LlamaFolder['config'],
  adapter: MemoryLimits | null,
  cpu: MemoryLimits,
): MemoryLimits {
  const backend = cfg.lab.backend;
  if (backend === 'cpu' || !adapter) return cpu;
  if (backend === 'webgpu') return adapter;
  return runMemoryFit(cfg, model, adapter).problems.length ? cpu : adapter;
}

const set = (cfg: TrainConfig, path: string, value: unknown): TrainConfig => {
  const c = structuredClone(cfg) as unknown as Record<string, Record<string, unknown>>;
  const keys = path.split('.');
  let at: Record<string, unknown> = c;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[keys[keys.length - 1]] = value;
  return c as unknown as TrainConfig;
};

/** The largest integer in [lo, hi] for which `fits` holds (fits is monotone: true up to some value), or null. */
function largest(lo: number, hi: number, fits: (v: number) => boolean): number | null {
  if (hi < lo || !fits(lo)) return null;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Which settings make a refused step fit `limits` (each found by asking the fit again): each one that is
 * enough changed alone — a lower LoRA rank (or LoRA instead of full fine-tuning), a packed 16-bit base (WebGPU
 * only: the CPU engine holds the base in f32), a smaller micro-batch, a shorter max response (or prompt)
 * length — else one combination (the 16-bit base, one row per micro-batch, then the longest response, prompt or
 * the highest rank that fits). Empty when the step fits; `enough` false when not even the combination fits.
 */
export function memoryRemedies(
  cfg: TrainConfig,
  model: LlamaFolder['config'],
  limits: MemoryLimits,
): { alone: string[]; combined: string[]; enough: boolean } {
  const fits = (c: TrainConfig) => runMemoryFit(c, model, limits).problems.length === 0;
  if (fits(cfg)) return { alone: [], combined: [], enough: true };
  const o = trainerOptions(cfg);
  const trajectory = o.traceAggregatorLevel.startsWith('trajectory');
  const responseKey = trajectory
    ? 'agentlightning.trace_aggregator.trajectory_max_response_length'
    : 'data.max_response_length';
  const promptKey = trajectory
    ? 'agentlightning.trace_aggregator.trajectory_max_prompt_length'
    : 'data.max_prompt_length';
  const microKey = 'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu';
  const rankKey = 'actor_rollout_ref.model.lora_rank';
  // each knob on a config: the change that makes it fit (or null) and its boldest change (or null)
  const knobs = (c: TrainConfig) => {
    const rank = c.actor_rollout_ref.model.lora_rank;
    const resp = trainerOptions(c).maxResponseLength;
    const prompt = trainerOptions(c).maxPromptLength;
    const rows = runStepShape(c, model.maxPositions).rows;
    const list: { fit: () => [TrainConfig, string] | null; bold: () => [TrainConfig, string] | null }[] = [];
    const dtype = () => {
      if (limits.kind !== 'webgpu' || rank === 0 || c.lab.lora_base_dtype !== 'f32') return null;
      return [set(c, 'lab.lora_base_dtype', 'bf16'), 'lab.lora_base_dtype bf16'] as [TrainConfig, string];
    };
    list.push({
      fit: () => {
        const d = dtype();
        return d && fits(d[0]) ? [d[0], `${d[1]} (the frozen base packed: half the weight memory)`] : null;
      },
      bold: dtype,
    });
    list.push({
      fit: () => {
        const v = largest(1, rows - 1, (n) => fits(set(c, microKey, n)));
        return v === null ? null : [set(c, microKey, v), `${microKey} ${v} (now ${rows} rows)`];
      },
      bold: () => (rows > 1 ? [set(c, microKey, 1), `${microKey} 1 (now ${rows} rows)`] : null),
    });
    list.push({
      fit: () => {
        const v = largest(1, resp - 1, (n) => fits(set(c, responseKey, n)));
        return v === null ? null : [set(c, responseKey, v), `${responseKey} ${v} (now ${resp})`];
      },
      bold: () => null,
    });
    list.push({
      fit: () => {
        const v = largest(1, prompt - 1, (n) => fits(set(c, promptKey, n)));
        return v === null ? null : [set(c, promptKey, v), `${promptKey} ${v} (now ${prompt})`];
      },
      bold: () => null,
    });
    list.push({
      fit: () => {
        if (rank === 0)
          return fits(set(c, rankKey, 16))
            ? [set(c, rankKey, 16), `${rankKey} 16 (LoRA instead of full fine-tuning)`]
            : null;
        const v = largest(1, rank - 1, (n) => fits(set(c, rankKey, n)));
        return v === null ? null : [set(c, rankKey, v), `${rankKey} ${v} (now ${rank})`];
      },
      bold: () => null,
    });
    return list;
  };
  const alone = knobs(cfg)
    .map((k) => k.fit()?.[1])
    .filter((x): x is string => x !== undefined);
  if (alone.length) return { alone, combined: [], enough: true };
  // no one setting is enough: the bold changes in turn, until one knob's change makes it fit
  let c = cfg;
  const combined: string[] = [];
  for (let i = 0; i < 5; i++) {
    const k = knobs(c)[i];
    const f = k.fit();
    if (f) return { alone, combined: [...combined, f[1]], enough: true };
    const b = k.bold();
    if (b) {
      c = b[0];
      combined.push(b[1]);
    }
  }
  return { alone, combined, enough: false };
}

/**
 * The sentence a refused run shows: the step against its target (the largest single buffer and the total, each
 * with its limit), what does not fit and by how much, and which setting would make it fit.
 */
export function runMemoryRefusal(
  cfg: TrainConfig,
  model: LlamaFolder['config'],
  limits: MemoryLimits,
): string | null {
  const fit = runMemoryFit(cfg, model, limits);
  const refused = memoryRefusal(fit);
  if (!refused) return null;
  const r = memoryRemedies(cfg, model, limits);
  if (r.alone.length) return `${refused}. It would fit with ${r.alone.join(', or ')}`;
  if (r.enough) return `${refused}. It would fit with ${r.combined.join(' and ')} together`;
  return `${refused}. It does not fit even with ${r.combined.length ? r.combined.join(' and ') : 'any of lora_rank, lab.lora_base_dtype, the micro-batch or the row lengths changed'}`;
}

/** The sentence of a fit's problems: what does not fit, by how much (memoryFit's messages). */
export function memoryRefusal(fit: MemoryFit): string | null {
  if (fit.problems.length === 0) return null;
  return `cannot fit: ${fit.problems.map((p) => p.message).join('; ')}`;
}

/** The step's largest single allocation and its limit on this target, for a page's table. */
export function largestBuffer(
  cfg: TrainConfig,
  model: LlamaFolder['config'],
  fit: MemoryFit,
): { what: string; bytes: number; limit: number | null; limitName: string | null } {
  const stored = fit.limits.kind === 'webgpu' ? cfg.lab.lora_base_dtype : 'f32';
  const l = fit.limits;
  if (l.kind === 'webgpu') {
    const small = l.maxBufferSize <= l.maxStorageBufferBindingSize;
    const adapterLimit = Math.min(l.maxBufferSize, l.maxStorageBufferBindingSize);
    const [b] = stepBuffers(model, fit.memory, stored, { adapterLimit, lora: runLoraConfig(cfg) !== null });
    return {
      what: b.what,
      bytes: b.bytes,
      limit: adapterLimit - (b.headroom ?? 0),
      limitName: small ? 'maxBufferSize' : 'maxStorageBufferBindingSize',
    };
  }
  const [b] = stepBuffers(model, fit.memory, stored);
  return {
    what: b.what.replace('buffer', 'array'),
    bytes: b.bytes,
    limit: l.maxArrayLength === undefined ? null : 4 * l.maxArrayLength,
    limitName: l.maxArrayLength === undefined ? null : 'longest Float32Array',
  };
}

/** A 16-bit base (lab.lora_base_dtype) is a LoRA run's frozen base: refused for full fine-tuning. */
function checkBaseDtypeKey(cfg: TrainConfig, lora: LoraConfig | null): void {
  const dtype = cfg.lab.lora_base_dtype;
  if (dtype !== 'f32' && !lora)
    throw new RunLaunchError(
      'lab.lora_base_dtype',
      `a ${dtype} base needs LoRA (actor_rollout_ref.model.lora_rank > 0); full fine-tuning keeps the weights in f32`,
    );
}

type LlamaEngine = LlamaCpuPolicy | LlamaGpuPolicy;

export interface BroughtRun {
  model: BroughtModel;
  /** the resumed checkpoint (its run state), or null */
  checkpoint: TrainCheckpoint | null;
}

export async function broughtModel(
  cfg: TrainConfig,
  folder: LlamaFolder,
  opts: {
    /** the folder's name or path (adapter_config.json's base_model_name_or_path, and the run's weights label) */
    name: string;
    tokenizerName: string;
    limits?: MemoryLimits;
    resume?: { bytes: Uint8Array; file: string } | null;
    /** a WebGPU context to train on (lab.backend webgpu / auto); the run owns it once returned */
    gpu?: GpuContext | null;
  },
): Promise<BroughtRun> {
  const rolloutName = cfg.actor_rollout_ref.rollout.name;
  if (rolloutName !== 'policy' && rolloutName !== 'transformers.js')
    throw new RunLaunchError(
      'actor_rollout_ref.rollout.name',
      `a Hugging Face model folder samples from the trainer's own engine ('policy') or from transformers.js on its export ('transformers.js'), got '${rolloutName}'`,
    );
  const lora = runLoraConfig(cfg);
  checkBaseDtypeKey(cfg, lora);
  const baseDtype = cfg.lab.lora_base_dtype;
  if (opts.limits) {
    const refused = runMemoryRefusal(cfg, folder.config, opts.limits);
    if (refused) throw new RunLaunchError('actor_rollout_ref.model.path', `${opts.name}: ${refused}`);
  }
  const contextLength = Math.min(cfg.actor_rollout_ref.rollout.max_model_len, folder.config.maxPositions);
  const loraOpt = (params?: Float32Array) =>
    lora ? { config: lora, seed: hashSeed(cfg.lab.seed, 'lora') % 2 ** 31, params } : undefined;
  const gpu = opts.gpu ?? null;
  const make = async (params?: Float32Array): Promise<LlamaEngine> => {
    if (!gpu)
      return new LlamaCpuPolicy(
        folder.config,
        roundToDtype(folder.params, baseDtype),
        {},
        { contextLength, baseModel: opts.name, lora: loraOpt(params) },
      );
    try {
      const { engine } = await createPolicyEngine({
        llama: folder,
        backend: cfg.lab.backend === 'cpu' ? 'auto' : cfg.lab.backend,
        context: gpu,
        contextLength,
        baseModel: opts.name,
        lora: loraOpt(params),
        baseDtype,
      });
      return engine as LlamaEngine;
    } catch (e) {
      throw new RunLaunchError('lab.backend', (e as Error).message);
    }
  };
  let policy = await make();
  let checkpoint: TrainCheckpoint | null = null;
  if (opts.resume) {
    try {
      checkpoint = decodeTrainCheckpoint(opts.resume.bytes, opts.resume.file, policy.trainableLayout);
    } catch (e) {
      policy.dispose();
      throw new RunLaunchError('resume', (e as Error).message);
    }
    if (lora) {
      policy.dispose();
      policy = await make(checkpoint.params);
    } else await policy.setParams(checkpoint.params);
    await policy.setOptimizerState(checkpoint.optimizer);
  }
  // the factory fell back to the CPU engine (the adapter cannot hold the model): the context is not needed
  const onGpu = policy.backend === 'webgpu' ? gpu : null;
  if (gpu && !onGpu) gpu.destroy();
  let reference: PolicyEngine | null = null;
  if (cfg.actor_rollout_ref.actor.use_kl_loss)
    reference = lora ? policy.referencePolicy() : new LlamaCpuPolicy(folder.config, folder.params);
  const kind = lora
    ? `LoRA r=${lora.r} alpha=${lora.alpha} (${lora.targetModules.join(',')})${baseDtype === 'f32' ? '' : `, ${baseDtype} base`}`
    : 'full fine-tuning';
  const tj = folder.tokenizer;
  return {
    model: {
      policy,
      reference,
      tokenizer: new ChatTokenizer(opts.tokenizerName, tj.tokenizerJson, tj.tokenizerConfig),
      source: `${opts.name} (${folder.config.modelType}, ${kind}${checkpoint ? `, resume step ${checkpoint.state.step}` : ''})`,
      gpu: onGpu,
      folder: { ...folder, params: new Float32Array(0) },
    },
    checkpoint,
  };
}
