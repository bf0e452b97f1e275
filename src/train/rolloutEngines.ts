/**
 * Which engine serves a run's rollouts while our engine trains: `actor_rollout_ref.rollout.name` (verl's key,
 * whose values upstream are hf / vllm / sglang / trtllm) names one of the engines below, `lab.rollout_device`
 * its device and `lab.rollout_precision` the weight precision it computes with. A registry: the config's
 * choices, the CLI's flags, the page's form and the tests iterate it.
 *
 *   policy           the project's engine (WGSL on WebGPU, or the CPU reference): the trainer's own instance,
 *                    colocated as verl's hybrid engine; the same numerics, so no mismatch beyond f32 rounding
 *   onnxruntime-web  the policy exported as an ONNX causal LM with KV cache, on the wasm EP (Node and the
 *                    page) or the webgpu EP (the page)
 *   transformers.js  the exported Hugging Face folder in transformers.js's own generate() loop: onnxruntime-node's
 *                    CPU EP in Node, onnxruntime-web's wasm or webgpu in the page
 *
 * The separate engines start from the trainer's current weights and re-export them at every sync; their
 * log-probs differ from the trainer's by their numerics and by the precision (f16 / int8 weight-only), the
 * mismatch rollout correction exists for. One factory serves Node and the page: what differs there (which
 * onnxruntime-web entry, where the tokenizer files come from, transformers.js's wasm) is a `RolloutEngineEnv`
 * (rolloutEnvNode.ts, rolloutEnvPage.ts), chosen by platform unless one is given.
 */

import { createRegistry } from '../core/registry';
import type { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { LlamaFolder } from '../engine/llama/hfFolder';
import { WEIGHT_PRECISIONS, type WeightPrecision } from '../engine/onnx/causalLm';
import type { HfTokenizerFiles } from '../engine/onnx/hfFolder';
import { OrtCausalLm, type OrtEp, type OrtModule } from '../engine/onnx/ortLm';
import type { RolloutSampler } from '../engine/onnx/sampler';
import { TransformersCausalLm, type TransformersDevice } from '../engine/onnx/transformersLm';
import type { PolicyEngine } from '../engine/policy/types';
import {
  ColocatedRolloutEngine,
  DeferredRolloutEngine,
  type RolloutEngine,
  SamplerRolloutEngine,
} from './rolloutEngine';

export type RolloutPlatform = 'node' | 'page';

/** `lab.rollout_device` values; `auto` is the engine's first device on the platform. */
export const ROLLOUT_DEVICES = ['auto', 'cpu', 'wasm', 'webgpu'] as const;
export type RolloutDevice = (typeof ROLLOUT_DEVICES)[number];

/** What the platform provides to build engines with. */
export interface RolloutEngineEnv {
  platform: RolloutPlatform;
  /** the onnxruntime-web entry for an EP, its wasm served by the app (never a CDN) */
  ort(ep: OrtEp): Promise<OrtModule>;
  /** configures transformers.js for the platform before its first use (the page's ORT wasm paths) */
  transformers?(): Promise<void>;
  /** the policy tokenizer's tokenizer.json and tokenizer_config.json (the exported folder carries them) */
  tokenizerFiles(): Promise<HfTokenizerFiles>;
}

/** What the three config fields choose, resolved for a platform. */
export interface RolloutChoice {
  name: string;
  /** a concrete device ('trainer' for the colocated policy) */
  device: string;
  precision: WeightPrecision;
}

interface BuildContext {
  policy: PolicyEngine;
  /** the Llama-family folder the trainer's engine was built from (its params unused), or null: our GPT-2 policy */
  model: LlamaFolder | null;
  tokenizer: ChatTokenizer;
  env: RolloutEngineEnv;
  seed: number;
  device: string;
  precision: WeightPrecision;
}

export interface RolloutEngineSpec {
  name: string;
  help: string;
  /** devices on each platform; 'auto' is the first */
  devices: Record<RolloutPlatform, readonly string[]>;
  precisions: readonly WeightPrecision[];
  /** samples from the trainer's own engine: nothing to build, no environment needed */
  colocated: boolean;
  create(ctx: BuildContext): Promise<RolloutEngine>;
}

/** The rollout engines by `actor_rollout_ref.rollout.name`. */
export const ROLLOUT_ENGINES = createRegistry<RolloutEngineSpec>('rollout engine');
const spec = (s: RolloutEngineSpec) => ROLLOUT_ENGINES.register(s.name, s);

spec({
  name: 'policy',
  help: "the project's engine (WebGPU or CPU): the trainer's own instance, colocated",
  devices: { node: ['trainer'], page: ['trainer'] },
  precisions: ['f32'],
  colocated: true,
  create: async (c) => new ColocatedRolloutEngine(c.policy, c.tokenizer, { seed: c.seed }),
});
spec({
  name: 'onnxruntime-web',
  help: 'onnxruntime-web over the exported ONNX causal LM (wasm EP; webgpu EP in the page)',
  devices: { node: ['wasm'], page: ['wasm', 'webgpu'] },
  precisions: WEIGHT_PRECISIONS,
  colocated: false,
  create: async (c) => {
    if (c.model)
      throw new Error(
        `a Hugging Face model folder (${c.model.config.modelType}) has no onnxruntime-web rollout engine here; use 'transformers.js' or 'policy'`,
      );
    const ep = c.device as OrtEp;
    const ort = await c.env.ort(ep);
    const lm = await OrtCausalLm.create(
      { ort, ep, config: c.policy.config, precision: c.precision },
      await c.policy.getParams(),
    );
    return new SamplerRolloutEngine('onnxruntime-web', lm, c.tokenizer, { seed: c.seed });
  },
});
spec({
  name: 'transformers.js',
  help: "transformers.js's generate() over the exported folder (onnxruntime-node CPU; wasm / webgpu in the page)",
  devices: { node: ['cpu'], page: ['wasm', 'webgpu'] },
  precisions: WEIGHT_PRECISIONS,
  colocated: false,
  create: async (c) => {
    await c.env.transformers?.();
    if (c.model) return llamaTransformers(c, c.model);
    const tokenizer = await c.env.tokenizerFiles();
    const lm = await TransformersCausalLm.fromPolicy(await c.policy.getParams(), {
      device: c.device as TransformersDevice,
      policy: { config: c.policy.config, tokenizer, precision: c.precision },
    });
    return new SamplerRolloutEngine('transformers.js', lm, c.tokenizer, { seed: c.seed });
  },
});

/**
 * transformers.js over a Llama-family folder the trainer trains: the folder exported with the trainer's merged
 * weights (LoRA merged in as PEFT's merge_and_unload: W + s·B·A; full fine-tuning: the weights themselves), and at
 * every weight sync exported and loaded again with the merged weights of that moment (the run hands the trainable
 * tensors to syncWeights; for LoRA those are the adapter, so the merge is asked of the trainer here).
 */
async function llamaTransformers(c: BuildContext, model: LlamaFolder): Promise<RolloutEngine> {
  if (c.precision !== 'f32')
    throw new Error(
      `a Hugging Face model folder is exported in f32 only (lab.rollout_precision '${c.precision}')`,
    );
  const trainer = c.policy as PolicyEngine & { mergedParams?: () => Promise<Float32Array> };
  const merged = trainer.mergedParams?.bind(trainer);
  if (!merged) throw new Error(`the trainer's engine (${c.policy.backend}) gives no merged weights`);
  const lm = await TransformersCausalLm.fromLlama(model, await merged(), {
    device: c.device as TransformersDevice,
  });
  const synced: RolloutSampler = {
    get backend() {
      return lm.backend;
    },
    get precision() {
      return lm.precision;
    },
    get vocabSize() {
      return lm.vocabSize;
    },
    get contextLength() {
      return lm.contextLength;
    },
    sample: (req) => lm.sample(req),
    syncWeights: async () => lm.syncWeights(await merged()),
    dispose: () => lm.dispose(),
  };
  return new SamplerRolloutEngine('transformers.js', synced, c.tokenizer, { seed: c.seed });
}

/** The three fields a rollout engine is chosen by (a TrainConfig has them). */
export interface RolloutFields {
  actor_rollout_ref: { rollout: { name: string } };
  lab: { rollout_device: string; rollout_precision: string; seed: number };
}

/** A choice that cannot be served: the config key to blame and why. */
export interface RolloutProblem {
  path: string;
  message: string;
}

const quote = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(', ');

/**
 * Checks the choice; with a platform, also that the device exists there, and resolves 'auto'. Without one,
 * only what holds everywhere (the config's own consistency check).
 */
export function resolveRolloutChoice(
  c: RolloutFields,
  platform?: RolloutPlatform,
): { choice: RolloutChoice | null; problem: RolloutProblem | null } {
  const name = c.actor_rollout_ref.rollout.name;
  const s = ROLLOUT_ENGINES.find(name);
  const fail = (path: string, message: string) => ({ choice: null, problem: { path, message } });
  if (!s)
    return fail(
      'actor_rollout_ref.rollout.name',
      `must be one of ${ROLLOUT_ENGINES.names().join(', ')}, got '${name}'`,
    );
  const precision = c.lab.rollout_precision as WeightPrecision;
  if (!s.precisions.includes(precision))
    return fail(
      'lab.rollout_precision',
      s.colocated
        ? `must be f32 with actor_rollout_ref.rollout.name '${name}' (it samples on the trainer's own f32 engine), got '${precision}'`
        : `must be one of ${s.precisions.join(', ')} for '${name}', got '${precision}'`,
    );
  const device = c.lab.rollout_device;
  if (s.colocated && device !== 'auto')
    return fail(
      'lab.rollout_device',
      `must be auto with actor_rollout_ref.rollout.name '${name}' (it samples on the trainer's own engine, lab.backend), got '${device}'`,
    );
  const everywhere = [...new Set([...s.devices.node, ...s.devices.page])];
  if (!s.colocated && device !== 'auto' && !everywhere.includes(device))
    return fail(
      'lab.rollout_device',
      `must be auto or one of ${everywhere.join(', ')} for '${name}', got '${device}'`,
    );
  if (!platform) return { choice: null, problem: null };
  const here = s.devices[platform];
  const chosen = device === 'auto' ? here[0] : device;
  if (!here.includes(chosen)) {
    const other = platform === 'node' ? 'page' : 'node';
    return fail(
      'lab.rollout_device',
      `'${device}' is not available for '${name}' in ${platform === 'node' ? 'Node' : 'the page'} (here: ${quote(here)}; in ${other === 'node' ? 'Node' : 'the page'}: ${quote(s.devices[other])})`,
    );
  }
  return { choice: { name, device: chosen, precision }, problem: null };
}

/** Where this code runs: Node (CLI, tests, benchmarks) or a browser page / Web Worker. */
export function currentPlatform(): RolloutPlatform {
  return typeof process !== 'undefined' &&
    typeof process.versions?.node === 'string' &&
    typeof window === 'undefined'
    ? 'node'
    : 'page';
}

/** The platform's environment: Node's (onnxruntime-web from node_modules, files from public/) or the page's. */
export async function defaultRolloutEnv(): Promise<RolloutEngineEnv> {
  if (currentPlatform() === 'node') {
    // not bundled into the page (node:fs)
    const m = await import(/* @vite-ignore */ './rolloutEnvNode');
    return m.nodeRolloutEnv();
  }
  const m = await import('./rolloutEnvPage');
  return m.pageRolloutEnv();
}

export class RolloutEngineError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path} ${message}`);
  }
}

export interface RolloutEngineOptions {
  config: RolloutFields;
  /** the trainer's engine: the colocated policy samples on it; the others start from its current weights */
  policy: PolicyEngine;
  tokenizer: ChatTokenizer;
  /** the Llama-family folder the trainer's engine was built from (its params unused); absent: our GPT-2 policy */
  model?: LlamaFolder | null;
  /** default: the platform's (defaultRolloutEnv) */
  env?: RolloutEngineEnv | (() => Promise<RolloutEngineEnv>);
}

/**
 * A short name of the choice, for logs and the engine's name until it is built ('onnxruntime-web wasm int8';
 * with a platform, 'auto' is resolved).
 */
export function rolloutChoiceLabel(c: RolloutFields, platform?: RolloutPlatform): string {
  const name = c.actor_rollout_ref.rollout.name;
  if (ROLLOUT_ENGINES.find(name)?.colocated) return `${name} (colocated)`;
  const device = (platform && resolveRolloutChoice(c, platform).choice?.device) || c.lab.rollout_device;
  return `${name} ${device} ${c.lab.rollout_precision}`;
}

/** Builds the chosen engine (an ONNX session, a folder load) once it is known the platform has it. */
export async function createRolloutEngine(o: RolloutEngineOptions): Promise<RolloutEngine> {
  const spec = ROLLOUT_ENGINES.find(o.config.actor_rollout_ref.rollout.name);
  const env = spec?.colocated
    ? null
    : typeof o.env === 'function'
      ? await o.env()
      : (o.env ?? (await defaultRolloutEnv()));
  const { choice, problem } = resolveRolloutChoice(o.config, env?.platform ?? currentPlatform());
  if (problem || !choice) throw new RolloutEngineError(problem?.path ?? '', problem?.message ?? '');
  const s = ROLLOUT_ENGINES.get(choice.name);
  try {
    return await s.create({
      policy: o.policy,
      model: o.model ?? null,
      tokenizer: o.tokenizer,
      env: env as RolloutEngineEnv,
      seed: o.config.lab.seed,
      device: choice.device,
      precision: choice.precision,
    });
  } catch (e) {
    throw new RolloutEngineError(
      'actor_rollout_ref.rollout.name',
      `'${choice.name}' on ${choice.device} (${choice.precision} weights) could not start: ${(e as Error).message}`,
    );
  }
}

/**
 * The chosen engine at once: the colocated policy as it is, any other built in the background behind a
 * `DeferredRolloutEngine` (a run waits for `ready()` before its first rollout and fails with the reason when it
 * cannot be built). This is what `createLocalRun` uses, so Node and the page construct engines the same way.
 */
export function rolloutEngineFor(o: RolloutEngineOptions): RolloutEngine {
  const c = o.config;
  if (ROLLOUT_ENGINES.find(c.actor_rollout_ref.rollout.name)?.colocated) {
    const { problem } = resolveRolloutChoice(c);
    if (problem) throw new RolloutEngineError(problem.path, problem.message);
    return new ColocatedRolloutEngine(o.policy, o.tokenizer, { seed: c.lab.seed });
  }
  return new DeferredRolloutEngine(rolloutChoiceLabel(c), createRolloutEngine(o));
}
