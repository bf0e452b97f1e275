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
  /** one log-prob forward of the batch given to openOrt: `target_logp`, row t = log p(token t+1) */
  run(): Promise<Float32Array>;
  release(): Promise<void>;
}

let threads = 0;
function configure(): number {
  if (threads > 0) return threads;
  ortWasm.env.wasm.wasmPaths = { wasm: ortWasmBinary };
  ortWebgpu.env.wasm.wasmPaths = { wasm: ortWebgpuBinary };
  // Worker threads need cross-origin isolation (SharedArrayBuffer); without it the EP runs single-threaded.
  threads = globalThis.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;
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
  const session = await ort.InferenceSession.create(model, { executionProviders: [ep] });
  const feeds = {
    tokens: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [B, T]),
    targets: new ort.Tensor('int64', onnxTargets(tokens, B, T), [B, T, 1]),
  };
  return {
    ep,
    threads,
    async run() {
      const out = (await session.run(feeds)).target_logp;
      // The WebGPU EP may hand back a GPU-resident tensor; getData() downloads it (and is a no-op on CPU data).
      return (await out.getData()) as Float32Array;
    },
    release: () => session.release(),
  };
}
