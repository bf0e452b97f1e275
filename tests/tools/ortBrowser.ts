/**
 * onnxruntime-web in a page (the bench page and tests/browser): the wasm EP from the package's default entry
 * (`onnxruntime-web`) and the WebGPU EP from `onnxruntime-web/webgpu`, the two entries the package exports for
 * them in 1.30. Each entry loads its own .wasm, which Vite serves from node_modules through `?url` imports
 * (the package exports both files), so nothing is fetched from a CDN.
 */
import * as ortWasm from 'onnxruntime-web';
import ortWebgpuBinary from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import ortWasmBinary from 'onnxruntime-web/ort-wasm-simd-threaded.jsep.wasm?url';
import * as ortWebgpu from 'onnxruntime-web/webgpu';
import { onnxTargets } from '../../src/engine/onnx/export';

export type OrtEp = 'wasm' | 'webgpu';

export interface OrtForward {
  ep: OrtEp;
  /** wasm worker threads the session may use (1 without cross-origin isolation) */
  threads: number;
  /**
   * One log-prob forward of the batch given to openOrt, read back to the host: `target_logp`, row t =
   * log p(token t+1); `location` is where ORT left the output ('gpu-buffer' only when the WebGPU EP computed it).
   */
  run(): Promise<{ logProbs: Float32Array; location: string }>;
  release(): Promise<void>;
}

let threads = 0;

/**
 * Wasm worker threads for both entries; ORT reads this once, when its wasm first initialises, so it may only
 * be set before the first session. Default: up to 4 when the page is cross-origin isolated (SharedArrayBuffer
 * needs COOP/COEP), else 1. Each worker compiles the ~27 MB module again, so a short test asks for 1.
 */
export function setOrtThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new Error(`ORT threads must be a positive integer, got ${n}`);
  if (threads > 0 && threads !== n) throw new Error(`ORT already initialised with ${threads} thread(s)`);
  if (n > 1 && !globalThis.crossOriginIsolated)
    throw new Error(`${n} ORT threads need a cross-origin isolated page (COOP/COEP headers)`);
  configure(n);
}

function configure(n?: number): number {
  if (threads > 0) return threads;
  threads = n ?? (globalThis.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1);
  ortWasm.env.wasm.wasmPaths = { wasm: ortWasmBinary };
  ortWebgpu.env.wasm.wasmPaths = { wasm: ortWebgpuBinary };
  ortWasm.env.wasm.numThreads = threads;
  ortWebgpu.env.wasm.numThreads = threads;
  return threads;
}

/** A session of an exported model on one EP, bound to one (B, T) batch. Throws if the EP cannot run. */
export async function openOrt(
  ep: OrtEp,
  model: Uint8Array,
  tokens: Uint32Array,
  B: number,
  T: number,
): Promise<OrtForward> {
  const threads = configure();
  const ort = ep === 'wasm' ? ortWasm : ortWebgpu;
  // On WebGPU the output stays on the GPU and is downloaded below, as our engine reads its log-probs back.
  const session = await ort.InferenceSession.create(model, {
    executionProviders: [ep],
    ...(ep === 'webgpu' ? { preferredOutputLocation: 'gpu-buffer' as const } : {}),
  });
  const feeds = {
    tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
    targets: new ort.Tensor('int64', onnxTargets(tokens, B, T), [B, T, 1]),
  };
  return {
    ep,
    threads,
    async run() {
      const out = (await session.run(feeds)).target_logp;
      const location = out.location;
      // getData(true) downloads a GPU-resident tensor and frees its buffer; on CPU data it just returns it.
      const logProbs = (await out.getData(true)) as Float32Array;
      return { logProbs, location };
    },
    release: () => session.release(),
  };
}
