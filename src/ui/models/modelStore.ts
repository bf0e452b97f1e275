/**
 * A brought model as the page's rollout engine (inference only): the picked folder, its checked configuration,
 * and runs of a harness against it — harness agents in Web Workers, the proxy and the engine in the page. A
 * Llama-family folder (config.json `llama` / `qwen2` / `qwen3` with safetensors weights) samples from our own
 * engine (WebGPU where an adapter can hold it, else the CPU engine) and is kept in OPFS so a reload finds it;
 * an ONNX folder runs in transformers.js on onnxruntime-web, loaded with the first run. A Llama-family folder
 * can also run in transformers.js (engine 'transformers.js': the folder exported as an HF ONNX decoder with KV
 * cache, engine/onnx/exportLlama.ts) with our engine scoring every response, so the trace carries both log-probs
 * and the Trace view shows their gap (harness/engineGap.ts). Each run's trace (engine ids and log-probs, JSONL) opens in the Trace view with
 * the model's own tokenizer. Not view state: a local folder cannot live in the URL.
 */
import { create } from 'zustand';
import { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { toJsonlTrace } from '../../core/trace/io';
import { isLlamaFamily, type LlamaFolder, readLlamaFolder } from '../../engine/llama/hfFolder';
import { type ModelFolder, mapReader, readModelFolder } from '../../engine/onnx/hfFolder';
import type { TransformersDevice } from '../../engine/onnx/transformersLm';
import { createPolicyEngine } from '../../engine/policy';
import type { PolicyEngine } from '../../engine/policy/types';
import { spawnBrowserHarnessWorker } from '../../harness/browserWorker';
import { annotateEngineGap, engineGapLine } from '../../harness/engineGap';
import type { ChatEngine } from '../../harness/engines';
import { serveChannel } from '../../harness/http';
import { PolicyChatEngine } from '../../harness/policyEngine';
import { WorkerPool } from '../../harness/pool';
import { LlmProxy } from '../../harness/proxy';
import type { HarnessName } from '../../harness/registry';
import { planRollouts, type RunSpec, runRollouts } from '../../harness/runner';
import { useLab } from '../lab/labStore';
import { useView } from '../store';
import type { PickedFolder } from './folderInput';
import { cachedFolder, cacheFolder } from './opfsCache';

export interface ModelRunOptions {
  harness: HarnessName;
  /** tasks, and rollouts per task */
  n: number;
  groupSize: number;
  seed: number;
  temperature: number;
  maxTokens: number;
  device: TransformersDevice;
  dtype: string;
  workers: number;
  /** a Llama-family folder: sample on our engine, or in transformers.js with our engine scoring (the gap) */
  engine?: 'ours' | 'transformers.js';
}

export interface RunSummary {
  rollouts: number;
  failed: number;
  calls: number;
  responseTokens: number;
  seconds: number;
  /** the engine that sampled (e.g. `ours, webgpu`, `transformers.js`) */
  engine: string;
  /** transformers.js on a Llama-family folder: its |Δ log-prob| against our engine (engineGapLine) */
  gap: string | null;
}

interface ModelsState {
  folder: PickedFolder | null;
  info: ModelFolder | null;
  /** a Llama-family folder (sampled by our engine) instead of an ONNX one */
  llama: LlamaFolder | null;
  /** 'cached' when the folder is kept in OPFS (a reload restores it), else why not; null while unknown */
  cache: string | null;
  error: string | null;
  status: string | null;
  running: boolean;
  traceUrl: string | null;
  traceName: string | null;
  summary: RunSummary | null;
  pick: (folder: PickedFolder | Error, from?: 'cache') => Promise<void>;
  /** picks the folder kept in OPFS, if any (on opening the tab) */
  restore: () => Promise<void>;
  run: (opts: ModelRunOptions) => Promise<void>;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The loaded engine, reused while the folder, device and dtype stay the same. */
let loaded: {
  key: string;
  engine: ChatEngine & { dispose?: () => unknown };
  tokenizer: ChatTokenizer;
  contextLength: number;
  label: string;
  /** our engine scoring a second engine's responses (transformers.js on a Llama-family folder) */
  scorer?: PolicyEngine;
} | null = null;
/** our engine's context in the page (the folder's max_position_embeddings when smaller) */
const PAGE_CONTEXT = 4096;
let folderSerial = 0;

async function dropEngine() {
  const e = loaded?.engine;
  const scorer = loaded?.scorer;
  loaded = null;
  await e?.dispose?.();
  scorer?.dispose();
}

/** Whether config.json names a Llama-family architecture (our engine's), read before the full check. */
async function llamaFamily(folder: PickedFolder): Promise<boolean> {
  if (!folder.reader.paths().includes('config.json')) return false;
  try {
    return isLlamaFamily(JSON.parse(new TextDecoder().decode(await folder.reader.bytes('config.json'))));
  } catch {
    return false;
  }
}

export const useModels = create<ModelsState>((set, get) => ({
  folder: null,
  info: null,
  llama: null,
  cache: null,
  error: null,
  status: null,
  running: false,
  traceUrl: null,
  traceName: null,
  summary: null,
  pick: async (folder, from) => {
    await dropEngine();
    if (folder instanceof Error) {
      set({ folder: null, info: null, llama: null, cache: null, error: folder.message, status: null });
      return;
    }
    folderSerial++;
    set({ folder, info: null, llama: null, cache: null, error: null, status: `checking ${folder.name}…` });
    try {
      if (await llamaFamily(folder)) {
        const llama = await readLlamaFolder(folder.reader);
        set({ llama, status: from === 'cache' ? null : `keeping ${folder.name} in this browser…` });
        if (from === 'cache') set({ cache: 'cached' });
        else
          try {
            await cacheFolder(folder);
            set({ cache: 'cached', status: null });
          } catch (e) {
            set({ cache: `not kept in this browser (${message(e)})`, status: null });
          }
        return;
      }
      const info = await readModelFolder(folder.reader);
      set({ info, status: null });
    } catch (e) {
      set({ error: message(e), status: null });
    }
  },
  restore: async () => {
    if (get().folder) return;
    const folder = await cachedFolder().catch(() => null);
    if (folder && !get().folder) await get().pick(folder, 'cache');
  },
  run: async (opts) => {
    const { folder, info, llama } = get();
    if (!folder || !(info || llama) || get().running) return;
    set({ running: true, error: null, summary: null, status: 'loading the model…' });
    const t0 = performance.now();
    let pool: WorkerPool | null = null;
    try {
      const second = llama !== null && opts.engine === 'transformers.js';
      const key =
        llama && !second
          ? `${folderSerial}:ours:${opts.seed}`
          : llama
            ? `${folderSerial}:tjs:${opts.device}:${opts.seed}`
            : `${folderSerial}:${opts.device}:${opts.dtype}`;
      if (loaded?.key !== key && llama && second) {
        await dropEngine();
        const contextLength = Math.min(PAGE_CONTEXT, llama.config.maxPositions);
        // ORT, transformers.js and the exporter load with the first such run, not with the page
        const [{ pageTransformers }, { createTransformersFolderEngine }, { exportLlamaHfFolder }] =
          await Promise.all([
            import('../../engine/onnx/ortWeb'),
            import('../../harness/transformersEngine'),
            import('../../engine/onnx/exportLlama'),
          ]);
        await pageTransformers();
        const { engine: scorer } = await createPolicyEngine({ llama, contextLength });
        const made = await createTransformersFolderEngine(mapReader(exportLlamaHfFolder(llama)), {
          device: opts.device,
          seed: opts.seed,
          model: `transformers.js/${llama.config.modelType}/${folder.name}`,
          tokenizer: (f) => new ChatTokenizer(`model:${folder.name}`, f.tokenizerJson, f.tokenizerConfig),
        });
        loaded = {
          key,
          ...made,
          contextLength: Math.min(contextLength, made.engine.sampler.contextLength),
          label: `transformers.js, ${opts.device} (scored by ours, ${scorer.backend})`,
          scorer,
        };
      } else if (loaded?.key !== key && llama) {
        await dropEngine();
        const contextLength = Math.min(PAGE_CONTEXT, llama.config.maxPositions);
        const { engine: policy, fallbackReason } = await createPolicyEngine({ llama, contextLength });
        const tj = llama.tokenizer;
        const tokenizer = new ChatTokenizer(`model:${folder.name}`, tj.tokenizerJson, tj.tokenizerConfig);
        const engine = new PolicyChatEngine(policy, tokenizer, {
          seed: opts.seed,
          model: `ours-${policy.backend}/${llama.config.modelType}/${folder.name}`,
        });
        const label = `ours, ${policy.backend}${fallbackReason ? ` (${fallbackReason})` : ''}`;
        loaded = {
          key,
          engine: Object.assign(engine, { dispose: () => policy.dispose() }),
          tokenizer,
          contextLength,
          label,
        };
      } else if (loaded?.key !== key) {
        await dropEngine();
        // ORT and transformers.js load with the first run, not with the page
        const [{ pageTransformers }, { createTransformersFolderEngine }] = await Promise.all([
          import('../../engine/onnx/ortWeb'),
          import('../../harness/transformersEngine'),
        ]);
        await pageTransformers();
        const made = await createTransformersFolderEngine(folder.reader, {
          device: opts.device,
          dtype: opts.dtype,
          seed: opts.seed,
          tokenizer: (f) => new ChatTokenizer(`model:${folder.name}`, f.tokenizerJson, f.tokenizerConfig),
        });
        loaded = {
          key,
          ...made,
          contextLength: made.engine.sampler.contextLength,
          label: 'transformers.js',
        };
      }
      const { engine, tokenizer, contextLength, label, scorer } = loaded;
      const proxy = new LlmProxy({
        engine,
        tokenizer,
        temperature: opts.temperature,
        maxResponseTokens: opts.maxTokens,
        maxContextTokens: contextLength,
      });
      pool = new WorkerPool({
        size: opts.workers,
        spawn: spawnBrowserHarnessWorker,
        connect: (port) => serveChannel(port, proxy.handle),
        timeoutMs: 600_000,
      });
      const spec: RunSpec = {
        harness: opts.harness,
        split: 'val',
        n: opts.n,
        groupSize: opts.groupSize,
        seed: opts.seed,
        behaviours: [],
      };
      const plan = planRollouts(spec);
      let done = 0;
      set({ status: `rollouts 0/${plan.length}` });
      const rollouts = await runRollouts(spec, plan, proxy, pool, {
        onRollout: () => set({ status: `rollouts ${++done}/${plan.length}` }),
      });
      let gap: string | null = null;
      if (scorer) {
        set({ status: 'scoring the responses with our engine…' });
        gap = engineGapLine(await annotateEngineGap(rollouts, scorer));
      }
      const text = toJsonlTrace(rollouts);
      const name = `${folder.name}-${opts.harness}-s${opts.seed}.jsonl`;
      const blob = new Blob([text], { type: 'application/x-ndjson' });
      const old = get().traceUrl;
      if (old) URL.revokeObjectURL(old);
      const calls = rollouts.flatMap((r) => r.calls);
      set({
        traceUrl: URL.createObjectURL(blob),
        traceName: name,
        status: null,
        summary: {
          rollouts: rollouts.length,
          failed: rollouts.filter((r) => r.state === 'failed').length,
          calls: calls.length,
          responseTokens: calls.reduce((s, c) => s + (c.responseTokenIds?.length ?? 0), 0),
          seconds: (performance.now() - t0) / 1000,
          engine: label,
          gap,
        },
      });
      const tj = (llama ?? (info as ModelFolder)).tokenizer;
      useLab.getState().importSource({
        kind: 'file',
        file: blob,
        name,
        tokenizer: { name: tokenizer.name, json: tj.tokenizerJson, config: tj.tokenizerConfig },
      });
      useView.getState().set({ tab: 'trace', rollout: '', call: 0 });
    } catch (e) {
      set({ error: message(e), status: null });
    } finally {
      pool?.close();
      set({ running: false });
    }
  },
}));
