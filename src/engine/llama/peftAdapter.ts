/**
 * LoRA adapters as PEFT saves and loads them (`PeftModel.save_pretrained` / `from_pretrained`): a folder with
 * `adapter_config.json` (peft_type LORA, r, lora_alpha, target_modules, …) and `adapter_model.safetensors`
 * whose tensors are named `base_model.model.<module>.lora_A.weight` / `.lora_B.weight` (lora.ts). Pure: files
 * in, files out; every error names the file and the field or tensor. What PEFT can express and this engine
 * does not run (DoRA, per-layer rank or alpha patterns, layer subsets, trained biases, extra saved modules,
 * dropout) is refused by name rather than silently dropped.
 */
import { type FolderReader, ModelFolderError, readFolderJson } from '../onnx/hfFolder';
import type { LlamaConfig } from './config';
import {
  checkLoraConfig,
  LoraAdapter,
  type LoraConfig,
  LoraConfigError,
  loraLayout,
  parseTargetModules,
} from './lora';
import { encodeSafetensors, readSafetensors, WeightFileError } from './safetensors';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

type Json = Record<string, unknown>;

/** The adapter_config.json PEFT writes for a LoRA adapter of a causal LM, with the fields this engine uses. */
export function adapterConfigJson(c: LoraConfig, baseModel: string | null = null): Json {
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    r: c.r,
    lora_alpha: c.alpha,
    target_modules: [...c.targetModules],
    lora_dropout: 0.0,
    bias: 'none',
    fan_in_fan_out: false,
    use_rslora: c.useRslora === true,
    use_dora: false,
    init_lora_weights: true,
    modules_to_save: null,
    layers_to_transform: null,
    rank_pattern: {},
    alpha_pattern: {},
    inference_mode: true,
  };
}

/** adapter_config.json → a checked LoraConfig; fields PEFT allows but the engine does not run are refused. */
export function parseAdapterConfig(j: Json): LoraConfig {
  const fail = (field: string, detail: string): never => {
    throw new ModelFolderError(ADAPTER_CONFIG, `${field}: ${detail}`);
  };
  if (j.peft_type !== 'LORA') fail('peft_type', `is ${JSON.stringify(j.peft_type)}; only LORA adapters load`);
  const off = (field: string, ok: (v: unknown) => boolean, why: string) => {
    if (j[field] !== undefined && !ok(j[field]))
      fail(field, `${JSON.stringify(j[field])} is not supported (${why})`);
  };
  const empty = (v: unknown) =>
    v === null || (typeof v === 'object' && Object.keys(v as object).length === 0);
  off('use_dora', (v) => v === false || v === null, 'DoRA is not implemented');
  off('bias', (v) => v === 'none', "trained biases are not implemented; use 'none'");
  off('fan_in_fan_out', (v) => v === false, 'Llama-family projections are nn.Linear');
  off('lora_dropout', (v) => v === 0, 'dropout on the adapter input is not implemented');
  off('layers_to_transform', (v) => v === null, 'every layer is adapted');
  off('layers_pattern', (v) => v === null || (Array.isArray(v) && v.length === 0), 'every layer is adapted');
  off('rank_pattern', empty, 'one rank for all targets');
  off('alpha_pattern', empty, 'one alpha for all targets');
  off('modules_to_save', (v) => v === null || (Array.isArray(v) && v.length === 0), 'only LoRA tensors load');
  off('trainable_token_indices', (v) => v === null, 'only LoRA tensors load');
  off('exclude_modules', (v) => v === null || (Array.isArray(v) && v.length === 0), 'not implemented');
  off('use_qalora', (v) => v === false, 'not implemented');
  off('lora_bias', (v) => v === false, 'a bias on lora_B is not implemented');
  off('target_parameters', (v) => v === null, 'only nn.Linear modules are adapted');
  off('layer_replication', (v) => v === null, 'not implemented');
  off('alora_invocation_tokens', (v) => v === null, 'activated LoRA is not implemented');
  off('use_bdlora', (v) => v === null || v === false, 'not implemented');
  try {
    return checkLoraConfig({
      r: j.r as number,
      alpha: j.lora_alpha as number,
      targetModules: parseTargetModules(j.target_modules),
      useRslora: j.use_rslora === true,
    });
  } catch (e) {
    if (e instanceof LoraConfigError) fail(e.field, e.detail);
    throw e;
  }
}

/** The two files of an adapter folder (PEFT's layout). */
export function encodeAdapter(
  adapter: LoraAdapter,
  baseModel: string | null = null,
): { [ADAPTER_CONFIG]: string; [ADAPTER_WEIGHTS]: Uint8Array } {
  const weights = encodeSafetensors(
    adapter.layout.tensors.map((t) => ({
      name: t.name,
      shape: t.shape,
      data: adapter.params.subarray(t.offset, t.offset + t.size),
    })),
    { format: 'pt' },
  );
  return {
    [ADAPTER_CONFIG]: `${JSON.stringify(adapterConfigJson(adapter.config, baseModel), null, 2)}\n`,
    [ADAPTER_WEIGHTS]: weights,
  };
}

/** Reads an adapter folder for a model config: every tensor of the layout present with its shape, nothing else. */
export async function readAdapter(r: FolderReader, model: LlamaConfig): Promise<LoraAdapter> {
  const present = new Set(r.paths());
  for (const f of [ADAPTER_CONFIG, ADAPTER_WEIGHTS])
    if (!present.has(f))
      throw new ModelFolderError(f, 'is missing (a PEFT LoRA adapter folder holds both files)');
  const config = parseAdapterConfig(await readFolderJson(r, ADAPTER_CONFIG, present));
  const adapter = new LoraAdapter(model, config, new Float32Array(loraLayout(model, config).total));
  let tensors: ReturnType<typeof readSafetensors>;
  try {
    tensors = readSafetensors(await r.bytes(ADAPTER_WEIGHTS), ADAPTER_WEIGHTS);
  } catch (e) {
    if (e instanceof WeightFileError)
      throw new ModelFolderError(ADAPTER_WEIGHTS, e.message.slice(ADAPTER_WEIGHTS.length + 2));
    throw e;
  }
  const seen = new Set<string>();
  for (const [name, t] of tensors) {
    // PEFT saves without the adapter name; a file saved with it (".lora_A.default.weight") is read the same
    const canonical = name.replace(/\.lora_([AB])\.default\.weight$/, '.lora_$1.weight');
    const entry = adapter.layout.byName.get(canonical);
    if (!entry)
      throw new ModelFolderError(
        ADAPTER_WEIGHTS,
        `tensor '${name}' is not part of a LoRA adapter with this adapter_config.json on a ${model.modelType} model with ${model.layers} layers`,
      );
    if (JSON.stringify(t.shape) !== JSON.stringify(entry.shape))
      throw new ModelFolderError(
        ADAPTER_WEIGHTS,
        `tensor '${name}' has shape ${JSON.stringify(t.shape)}; r=${config.r} on this model implies ${JSON.stringify(entry.shape)}`,
      );
    adapter.params.set(t.data, entry.offset);
    seen.add(canonical);
  }
  const missing = adapter.layout.tensors.filter((t) => !seen.has(t.name)).map((t) => t.name);
  if (missing.length)
    throw new ModelFolderError(
      ADAPTER_WEIGHTS,
      `tensor${missing.length > 1 ? 's' : ''} missing: ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}`,
    );
  return adapter;
}
