/**
 * A brought model as the page's rollout engine (inference only): the picked folder, its checked configuration,
 * and runs of a harness against it — harness agents in Web Workers, the proxy and the engine (transformers.js on
 * onnxruntime-web, loaded with the first run) in the page. Each run's trace (engine ids and log-probs, JSONL) opens in the Trace view with
 * the model's own tokenizer. Not view state: a local folder cannot live in the URL.
 */
import { create } from 'zustand';
import { ChatTokenizer } from '../../core/tokenize/tokenizer';
import { toJsonlTrace } from '../../core/trace/io';
import { type ModelFolder, readModelFolder } from '../../engine/onnx/hfFolder';
import type { TransformersDevice } from '../../engine/onnx/transformersLm';
import { spawnBrowserHarnessWorker } from '../../harness/browserWorker';
import { serveChannel } from '../../harness/http';
import { WorkerPool } from '../../harness/pool';
import { LlmProxy } from '../../harness/proxy';
import type { HarnessName } from '../../harness/registry';
import { planRollouts, type RunSpec, runRollouts } from '../../harness/runner';
import type { SamplerChatEngine } from '../../harness/samplerEngine';
import { useLab } from '../lab/labStore';
import { useView } from '../store';
import type { PickedFolder } from './folderInput';

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
}

export interface RunSummary {
  rollouts: number;
  failed: number;
  calls: number;
  responseTokens: number;
  seconds: number;
}

interface ModelsState {
  folder: PickedFolder | null;
  info: ModelFolder | null;
  error: string | null;
  status: string | null;
  running: boolean;
  traceUrl: string | null;
  traceName: string | null;
  summary: RunSummary | null;
  pick: (folder: PickedFolder | Error) => Promise<void>;
  run: (opts: ModelRunOptions) => Promise<void>;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The loaded engine, reused while the folder, device and dtype stay the same. */
let loaded: { key: string; engine: SamplerChatEngine; tokenizer: ChatTokenizer } | null = null;
let folderSerial = 0;

async function dropEngine() {
  const e = loaded?.engine;
  loaded = null;
  await e?.dispose();
}

export const useModels = create<ModelsState>((set, get) => ({
  folder: null,
  info: null,
  error: null,
  status: null,
  running: false,
  traceUrl: null,
  traceName: null,
  summary: null,
  pick: async (folder) => {
    await dropEngine();
    if (folder instanceof Error) {
      set({ folder: null, info: null, error: folder.message, status: null });
      return;
    }
    folderSerial++;
    set({ folder, info: null, error: null, status: `checking ${folder.name}…` });
    try {
      const info = await readModelFolder(folder.reader);
      set({ info, status: null });
    } catch (e) {
      set({ error: message(e), status: null });
    }
  },
  run: async (opts) => {
    const { folder, info } = get();
    if (!folder || !info || get().running) return;
    set({ running: true, error: null, summary: null, status: 'loading the model…' });
    const t0 = performance.now();
    let pool: WorkerPool | null = null;
    try {
      const key = `${folderSerial}:${opts.device}:${opts.dtype}`;
      if (loaded?.key !== key) {
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
        loaded = { key, ...made };
      }
      const { engine, tokenizer } = loaded;
      const proxy = new LlmProxy({
        engine,
        tokenizer,
        temperature: opts.temperature,
        maxResponseTokens: opts.maxTokens,
        maxContextTokens: engine.sampler.contextLength,
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
        },
      });
      const tj = info.tokenizer;
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
