/**
 * transformers.js (`@huggingface/transformers` 4.x) as a rollout engine over a model folder in the HF layout:
 * our exported policy (hfFolder.ts), a Llama-family safetensors folder exported in HF's ONNX decoder layout
 * (exportLlama.ts `exportLlamaHfFolder`, external data past 2 GiB), or any ONNX chat model a user brings. It loads with
 * `AutoModelForCausalLM.from_pretrained` and generates with its own `generate()` loop (its KV cache, position
 * ids, stopping criteria); the token at each step is chosen by a LogitsProcessor that applies our seeded host-side
 * choice (sampling.ts) to the step's raw logits and masks every other id, so the greedy step that follows takes
 * it. The ids and log-probs are therefore those of transformers.js's numerics under our seeded sampler.
 *
 * Nothing is fetched from a hub (`env.allowRemoteModels = false`; browser, file and wasm caches off). In the
 * page, files are served to transformers.js from memory through `env.fetch` under a private path prefix, and it
 * runs on onnxruntime-web (device 'wasm' or 'webgpu'), whose wasm the caller points
 * `env.backends.onnx.wasm.wasmPaths` at. In Node transformers.js loads model files from disk by path (it hands
 * onnxruntime-node a path, not bytes) and runs on onnxruntime-node's CPU EP: a folder without a `dir` is
 * written to a temporary folder first (folder.ts).
 */
import type * as TJs from '@huggingface/transformers';
import { mulberry32 } from '../../core/random';
import { serialQueue } from '../../core/serial';
import type { LlamaFolder } from '../llama/hfFolder';
import type { PolicyConfig } from '../model';
import { checkSampleRequest, pickToken } from '../sampling';
import type { WeightPrecision } from './causalLm';
import { exportLlamaHfFolder } from './exportLlama';
import {
  exportHfFolder,
  type FolderFiles,
  type FolderReader,
  type HfTokenizerFiles,
  type ModelFolder,
  ModelFolderError,
  mapReader,
  onnxFileOf,
  readModelFolder,
} from './hfFolder';
import type { RolloutSampler, SampleRequest, SampleResult, SyncCost } from './sampler';

type Transformers = typeof TJs;

/** Where the engine serves model folders to transformers.js from. */
const PREFIX = '/__harness_lab_models__/';
const folders = new Map<string, FolderReader>();
let serial = 0;
let lib: Promise<Transformers> | null = null;

/**
 * The transformers.js module, configured once for local-only loading: remote models, browser cache, file cache
 * and the wasm cache off, and `env.fetch` answering our private prefix from memory. Other URLs (the page's own
 * ORT wasm) go to the platform fetch.
 */
export function transformersEnv(): Promise<Transformers> {
  lib ??= import('@huggingface/transformers').then((t) => {
    const env = t.env;
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.useBrowserCache = false;
    env.useFSCache = false;
    env.useWasmCache = false;
    env.localModelPath = PREFIX;
    const platformFetch = env.fetch;
    env.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const i = url.indexOf(PREFIX);
      if (i < 0) return platformFetch(input as never, init as never);
      const [id, ...rest] = url.slice(i + PREFIX.length).split('/');
      const reader = folders.get(id);
      const path = rest.join('/');
      if (!reader?.paths().includes(path)) return new Response('not found', { status: 404 });
      const size = await reader.size(path);
      const body = reader.blob ? await reader.blob(path) : await reader.bytes(path);
      return new Response(body as BodyInit, { status: 200, headers: { 'content-length': String(size) } });
    }) as typeof env.fetch;
    return t;
  });
  return lib;
}

export type TransformersDevice = 'cpu' | 'wasm' | 'webgpu';

export interface TransformersLmOptions {
  /** 'cpu' in Node (onnxruntime-node); 'wasm' or 'webgpu' in the page (onnxruntime-web) */
  device: TransformersDevice;
  /** the ONNX variant to load (transformers.js dtype name); default: the folder's default */
  dtype?: string;
  /** a label for traces */
  name?: string;
  /** our policy's config when the folder is our export (needed for syncWeights) */
  policy?: { config: PolicyConfig; tokenizer: HfTokenizerFiles; precision: WeightPrecision };
  /**
   * a Llama-family Hugging Face folder a run trains (its params unused): syncWeights re-exports it with the
   * given weights in its layout (exportLlamaHfFolder, f32)
   */
  llama?: LlamaFolder;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
const isNode =
  typeof process !== 'undefined' &&
  typeof process.versions?.node === 'string' &&
  typeof window === 'undefined';

function num(v: unknown, what: string): number {
  if (!Number.isInteger(v) || (v as number) < 1)
    throw new ModelFolderError('config.json', `has no valid ${what}`);
  return v as number;
}

export class TransformersCausalLm implements RolloutSampler {
  readonly backend: string;
  precision: string;
  vocabSize = 0;
  contextLength = 0;
  folder: ModelFolder | null = null;
  modelBytes = 0;
  private model: TJs.PreTrainedModel | null = null;
  /** the temporary folder the current model was written to (Node), removed on the next load */
  private removeTemp: (() => Promise<void>) | null = null;
  private readonly serial = serialQueue();

  private constructor(private readonly opts: TransformersLmOptions) {
    this.backend = `transformers.js-${opts.device}`;
    this.precision = opts.policy?.precision ?? opts.dtype ?? 'fp32';
  }

  /** Loads a folder (checked first: a missing or malformed file is a ModelFolderError naming it). */
  static async load(reader: FolderReader, opts: TransformersLmOptions): Promise<TransformersCausalLm> {
    const lm = new TransformersCausalLm(opts);
    await lm.serial(() => lm.loadFolder(reader));
    return lm;
  }

  /** Exports our policy to an in-memory folder and loads it. */
  static async fromPolicy(
    params: Float32Array,
    opts: TransformersLmOptions & { policy: NonNullable<TransformersLmOptions['policy']> },
  ): Promise<TransformersCausalLm> {
    const lm = new TransformersCausalLm(opts);
    await lm.syncWeights(params);
    return lm;
  }

  private async loadFolder(reader: FolderReader): Promise<void> {
    const folder = await readModelFolder(reader);
    const dtype = this.opts.dtype ?? folder.defaultDtype;
    if (!folder.dtypes.includes(dtype))
      throw new ModelFolderError(
        onnxFileOf(dtype),
        `is missing (the folder has: ${folder.dtypes.join(', ')})`,
      );
    const c = folder.config as Record<string, unknown>;
    const text = (c.text_config ?? c) as Record<string, unknown>;
    const vocab = num(text.vocab_size, "'vocab_size'");
    const ctx = num(
      text.n_positions ?? text.max_position_embeddings ?? text.n_ctx,
      "'max_position_embeddings'",
    );
    const t = await transformersEnv();
    let id = `m${++serial}`;
    let removeTemp: (() => Promise<void>) | null = null;
    if (isNode) {
      if (reader.dir) id = reader.dir;
      else {
        const files: FolderFiles = new Map();
        for (const p of reader.paths()) files.set(p, await reader.bytes(p));
        const { tempModelFolder } = await import(/* @vite-ignore */ './folder');
        const tmp = await tempModelFolder(files);
        id = tmp.dir;
        removeTemp = tmp.remove;
      }
    } else folders.set(id, reader);
    let model: TJs.PreTrainedModel;
    try {
      model = await t.AutoModelForCausalLM.from_pretrained(id, {
        dtype: dtype as TJs.DataType,
        device: this.opts.device,
        use_external_data_format: folder.externalData[dtype]?.length ?? 0,
      });
    } catch (e) {
      await removeTemp?.();
      throw new ModelFolderError(
        onnxFileOf(dtype),
        `could not be loaded by transformers.js: ${(e as Error).message}`,
      );
    } finally {
      folders.delete(id);
    }
    await this.removeTemp?.();
    this.removeTemp = removeTemp;
    const old = this.model;
    this.model = model;
    this.folder = folder;
    this.vocabSize = vocab;
    this.contextLength = ctx;
    if (!this.opts.policy) this.precision = dtype;
    this.modelBytes = await reader.size(onnxFileOf(dtype));
    if (old) await old.dispose();
  }

  /** A Llama-family folder with these weights (its layout's), exported in memory and loaded. */
  static async fromLlama(
    folder: LlamaFolder,
    params: Float32Array,
    opts: Omit<TransformersLmOptions, 'llama' | 'policy'>,
  ): Promise<TransformersCausalLm> {
    const lm = new TransformersCausalLm({ ...opts, llama: folder });
    await lm.syncWeights(params);
    return lm;
  }

  /**
   * Re-exports the folder (in memory) with these weights and reloads it: our policy's export, or the Llama-family
   * folder a run trains (the weights in its layout). A brought ONNX folder has no trainer weights.
   */
  syncWeights(params: Float32Array): Promise<SyncCost> {
    const p = this.opts.policy;
    const llama = this.opts.llama;
    if (!p && !llama)
      return Promise.reject(
        new Error(
          'syncWeights: this engine runs a brought model (inference only); it has no trainer weights',
        ),
      );
    if (llama && params.length !== llama.layout.total)
      return Promise.reject(
        new Error(
          `syncWeights: ${params.length} weights for a ${llama.config.modelType} layout of ${llama.layout.total}`,
        ),
      );
    return this.serial(async () => {
      const t0 = now();
      const files: FolderFiles = llama
        ? exportLlamaHfFolder({ ...llama, params })
        : exportHfFolder(
            (p as NonNullable<typeof p>).config,
            params,
            (p as NonNullable<typeof p>).tokenizer,
            {
              precision: (p as NonNullable<typeof p>).precision,
            },
          );
      const t1 = now();
      await this.loadFolder(mapReader(files));
      const t2 = now();
      return { exportMs: t1 - t0, loadMs: t2 - t1, totalMs: t2 - t0, bytes: this.modelBytes };
    });
  }

  sample(req: SampleRequest): Promise<SampleResult> {
    return this.serial(async () => {
      const model = this.model;
      if (!model) throw new Error('transformers.js engine has no model (disposed?)');
      checkSampleRequest(req, this.vocabSize, this.contextLength);
      const t = await transformersEnv();
      const rand = mulberry32(req.seed);
      const chosen: { id: number; logProb: number }[] = [];
      const V = this.vocabSize;
      class SeededChoice extends t.LogitsProcessor {
        override _call(_ids: bigint[][], logits: TJs.Tensor): TJs.Tensor {
          const data = logits.data as Float32Array;
          if (data.length !== V)
            throw new Error(`transformers.js engine: step logits have ${data.length} values, expected ${V}`);
          const c = pickToken(data, req.temperature, req.topP, rand);
          chosen.push(c);
          data.fill(Number.NEGATIVE_INFINITY);
          data[c.id] = 0;
          return logits;
        }
      }
      const n = req.promptIds.length;
      const maxNew = Math.min(req.maxTokens, this.contextLength - n);
      const stop = req.stopIds ?? [];
      const processors = new t.LogitsProcessorList();
      processors.push(new SeededChoice());
      const out = (await model.generate({
        input_ids: new t.Tensor('int64', BigInt64Array.from(req.promptIds, BigInt), [1, n]),
        attention_mask: new t.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
        max_new_tokens: maxNew,
        // generation is ours: no sampling, penalties or forced tokens of the folder's generation_config
        do_sample: false,
        num_beams: 1,
        repetition_penalty: 1,
        no_repeat_ngram_size: 0,
        min_length: 0,
        min_new_tokens: null,
        bad_words_ids: null,
        suppress_tokens: null,
        begin_suppress_tokens: null,
        forced_bos_token_id: null,
        forced_eos_token_id: null,
        eos_token_id: stop.length ? stop : null,
        logits_processor: processors,
      } as unknown as Parameters<TJs.PreTrainedModel['generate']>[0])) as TJs.Tensor;
      const seq = Array.from(out.data as BigInt64Array, Number).slice(n);
      if (seq.length !== chosen.length || seq.some((id, i) => id !== chosen[i].id))
        throw new Error(
          `transformers.js engine: generate() returned ${seq.length} tokens, the sampler chose ${chosen.length} (ids differ)`,
        );
      const last = seq[seq.length - 1];
      const finishReason = stop.includes(last) ? 'stop' : 'length';
      return { tokenIds: seq, logProbs: chosen.map((c) => c.logProb), finishReason };
    });
  }

  async dispose(): Promise<void> {
    await this.serial(async () => {
      const m = this.model;
      this.model = null;
      if (m) await m.dispose();
      await this.removeTemp?.();
      this.removeTemp = null;
    });
  }
}
