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
import { type MemoryFit, type MemoryLimits, trainStepFit } from '../engine/llama/memoryFit';
import { createPolicyEngine, type PolicyEngine } from '../engine/policy';
import { LlamaCpuPolicy } from '../engine/policy/llamaCpuPolicy';
import type { LlamaGpuPolicy } from '../engine/policy/llamaGpuPolicy';
import { decodeTrainCheckpoint, type TrainCheckpoint } from './checkpoint';
import type { TrainConfig } from './config';
import { type BroughtModel, RunLaunchError } from './launch';
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
 * ppo_mini_batch_size × rollout.n rows), each up to the rollout's context.
 */
export function runStepShape(cfg: TrainConfig, maxPositions: number) {
  const a = cfg.actor_rollout_ref;
  return {
    rows: Math.min(a.actor.ppo_micro_batch_size_per_gpu, a.actor.ppo_mini_batch_size * a.rollout.n),
    tokens: Math.min(cfg.actor_rollout_ref.rollout.max_model_len, maxPositions),
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

/** A 16-bit base (lab.lora_base_dtype) is a LoRA run's frozen base: refused for full fine-tuning. */
function checkBaseDtypeKey(cfg: TrainConfig, lora: LoraConfig | null): void {
  const dtype = cfg.lab.lora_base_dtype;
  if (dtype !== 'f32' && !lora)
    throw new RunLaunchError(
      'lab.lora_base_dtype',
      `a ${dtype} base needs LoRA (actor_rollout_ref.model.lora_rank > 0); full fine-tuning keeps the weights in f32`,
    );
}

/** The sentence a refused run shows: what does not fit, by how much. */
export function memoryRefusal(fit: MemoryFit): string | null {
  if (fit.problems.length === 0) return null;
  return `cannot fit: ${fit.problems.map((p) => p.message).join('; ')}`;
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
  if (cfg.actor_rollout_ref.rollout.name !== 'policy')
    throw new RunLaunchError(
      'actor_rollout_ref.rollout.name',
      `a Hugging Face model folder samples from the trainer's own engine ('policy'), got '${cfg.actor_rollout_ref.rollout.name}'`,
    );
  const lora = runLoraConfig(cfg);
  checkBaseDtypeKey(cfg, lora);
  const baseDtype = cfg.lab.lora_base_dtype;
  if (opts.limits) {
    const refused = memoryRefusal(runMemoryFit(cfg, folder.config, opts.limits));
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
    },
    checkpoint,
  };
}
