/**
 * The Hugging Face folders the app ships (the tiny random-weight Llama / Qwen2 / Qwen3 models of
 * python/tiny_models/, committed under tests/models/), served as build assets and read over HTTP as
 * FolderReaders; and the names a run's actor_rollout_ref.model.path gives a folder in the page:
 * `shipped:<name>` (one of these) or `opfs:<name>` (the brought folder kept in the browser, opfsCache.ts).
 */
import type { FolderReader } from '../../engine/onnx/hfFolder';
import { cachedFolder } from './opfsCache';

// Vite rewrites this at build time: every file of the shipped folders → its URL
const files = import.meta.glob('../../../tests/models/{llama,qwen2,qwen3}/*', {
  query: '?url',
  import: 'default',
  eager: true,
}) as Record<string, string>;

/** name → (relative path → URL) */
const SHIPPED = new Map<string, Map<string, string>>();
for (const [key, url] of Object.entries(files)) {
  const m = /tests\/models\/([^/]+)\/(.+)$/.exec(key);
  if (!m || m[2] === 'reference.json') continue;
  const folder = SHIPPED.get(m[1]) ?? new Map<string, string>();
  folder.set(m[2], url);
  SHIPPED.set(m[1], folder);
}

export const shippedModelNames = (): string[] => [...SHIPPED.keys()].sort();

export function shippedFolder(name: string): FolderReader {
  const urls = SHIPPED.get(name);
  if (!urls)
    throw new Error(`no shipped model folder '${name}' (shipped: ${shippedModelNames().join(', ')})`);
  const get = async (p: string) => {
    const url = urls.get(p);
    if (!url) throw new Error(`${p}: is missing`);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${p}: HTTP ${res.status}`);
    return res;
  };
  return {
    paths: () => [...urls.keys()],
    bytes: async (p) => new Uint8Array(await (await get(p)).arrayBuffer()),
    size: async (p) => (await (await get(p)).blob()).size,
  };
}

export type PageModel = { kind: 'shipped'; name: string } | { kind: 'opfs'; name: string };

/** A model path that names a folder in the page, or null (the GPT-2 policy's 'sft', 'init' or a checkpoint). */
export function pageModelOf(path: string): PageModel | null {
  const m = /^(shipped|opfs):(.+)$/.exec(path);
  if (!m) return null;
  return { kind: m[1] as PageModel['kind'], name: m[2] };
}

export const pageModelPath = (m: PageModel): string => `${m.kind}:${m.name}`;

/** The folder a page model names: a shipped one, or the one kept in OPFS (refused when OPFS holds another). */
export async function pageModelFolder(m: PageModel): Promise<FolderReader> {
  if (m.kind === 'shipped') return shippedFolder(m.name);
  const cached = await cachedFolder();
  if (!cached)
    throw new Error(
      `the brought folder ${m.name} is not kept in this browser (OPFS holds none): pick it again`,
    );
  if (cached.name !== m.name)
    throw new Error(
      `the brought folder ${m.name} is not kept in this browser (OPFS holds ${cached.name}): pick it again`,
    );
  return cached.reader;
}
