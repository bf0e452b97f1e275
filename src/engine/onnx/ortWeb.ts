/**
 * onnxruntime-web in the page, for the rollout engines (ortLm.ts, transformersLm.ts): the wasm EP from the
 * package's default entry and the webgpu EP from `onnxruntime-web/webgpu` (the entry transformers.js imports too,
 * so one configuration serves both). Each entry's .wasm and its Emscripten factory (.mjs) are imported with
 * Vite's `?url`, so the app serves them itself; nothing comes from a CDN. The factory is served as its own file
 * because wasm worker threads are started from the factory's URL: were it bundled into an app chunk, each thread
 * would load the app. Browser-only (Vite asset imports).
 */
import * as ortWasm from 'onnxruntime-web';
import ortWebgpuFactory from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import ortWebgpuBinary from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import ortWasmFactory from 'onnxruntime-web/ort-wasm-simd-threaded.jsep.mjs?url';
import ortWasmBinary from 'onnxruntime-web/ort-wasm-simd-threaded.jsep.wasm?url';
import * as ortWebgpu from 'onnxruntime-web/webgpu';
import type { OrtEp, OrtModule } from './ortLm';
import { transformersEnv } from './transformersLm';

let threads = 0;

/** Wasm threads both entries use; fixed when ORT first initialises (default: up to 4 if cross-origin isolated). */
export function configureOrtWeb(n?: number): number {
  if (threads > 0) {
    if (n !== undefined && n !== threads)
      throw new Error(`ORT already initialised with ${threads} thread(s)`);
    return threads;
  }
  if (n !== undefined && (!Number.isInteger(n) || n < 1))
    throw new Error(`ORT threads must be a positive integer, got ${n}`);
  if (n !== undefined && n > 1 && !globalThis.crossOriginIsolated)
    throw new Error(`${n} ORT threads need a cross-origin isolated page (COOP/COEP headers)`);
  threads = n ?? (globalThis.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1);
  ortWasm.env.wasm.wasmPaths = { wasm: ortWasmBinary, mjs: ortWasmFactory };
  ortWebgpu.env.wasm.wasmPaths = { wasm: ortWebgpuBinary, mjs: ortWebgpuFactory };
  ortWasm.env.wasm.numThreads = threads;
  ortWebgpu.env.wasm.numThreads = threads;
  // the webgpu EP warns that shape ops run on the CPU, as designed
  ortWasm.env.logLevel = 'error';
  ortWebgpu.env.logLevel = 'error';
  return threads;
}

/** The ORT entry for an execution provider, configured. */
export function ortForEp(ep: OrtEp): OrtModule {
  configureOrtWeb();
  return (ep === 'wasm' ? ortWasm : ortWebgpu) as unknown as OrtModule;
}

/** The same wasm paths for transformers.js's onnxruntime-web (its env.backends.onnx is the webgpu entry's env). */
export function configureTransformersWasm(env: { backends: { onnx?: unknown } }): void {
  configureOrtWeb();
  const onnx = env.backends.onnx as { wasm?: { wasmPaths?: unknown; numThreads?: number } } | undefined;
  if (!onnx?.wasm) throw new Error('transformers.js has no onnxruntime-web backend in this environment');
  onnx.wasm.wasmPaths = { wasm: ortWebgpuBinary, mjs: ortWebgpuFactory };
  onnx.wasm.numThreads = threads;
}

/** transformers.js configured for the page: local-only (transformersEnv) and on the app's own ORT wasm. */
export async function pageTransformers() {
  const t = await transformersEnv();
  configureTransformersWasm(t.env as unknown as { backends: { onnx?: unknown } });
  return t;
}
