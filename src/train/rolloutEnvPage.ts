/**
 * The rollout engines' environment in the page or one of its Web Workers (rolloutEngines.ts): onnxruntime-web's
 * entries with the wasm the app serves itself (engine/onnx/ortWeb.ts), transformers.js on the same ORT, and the
 * policy tokenizer's files fetched from the app (public/tokenizer/). Browser only (Vite asset URLs).
 */
import type { HfTokenizerFiles } from '../engine/onnx/hfFolder';
import { ortForEp, pageTransformers } from '../engine/onnx/ortWeb';
import type { RolloutEngineEnv } from './rolloutEngines';

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

export function pageRolloutEnv(): RolloutEngineEnv {
  return {
    platform: 'page',
    ort: async (ep) => ortForEp(ep),
    async transformers() {
      await pageTransformers();
    },
    async tokenizerFiles(): Promise<HfTokenizerFiles> {
      const base = `${import.meta.env.BASE_URL}tokenizer/`;
      const [tokenizerJson, tokenizerConfig] = await Promise.all([
        getJson(`${base}tokenizer.json`),
        getJson(`${base}tokenizer_config.json`),
      ]);
      return { tokenizerJson, tokenizerConfig };
    },
  };
}
