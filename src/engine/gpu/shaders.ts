/**
 * WGSL sources from `shaders/`, by file name without extension.
 * Under Vite (the page, vitest) they are bundled with import.meta.glob; under plain Node (tsx CLIs, benchmarks)
 * they are read from disk next to this repository's `shaders/` folder.
 */
const bundled: Record<string, string> = {};

// Vite rewrites this call at build time; plain Node has no import.meta.glob and takes the disk path below.
try {
  const files = import.meta.glob('/shaders/*.wgsl', { query: '?raw', import: 'default', eager: true });
  for (const [path, src] of Object.entries(files)) {
    const name = path.slice(path.lastIndexOf('/') + 1, -'.wgsl'.length);
    bundled[name] = src as string;
  }
} catch {
  // not running under Vite
}

export async function shaderSource(name: string): Promise<string> {
  const hit = bundled[name];
  if (hit !== undefined) return hit;
  if (typeof process !== 'undefined' && process.versions?.node) {
    const fs = await import(/* @vite-ignore */ 'node:fs/promises');
    const url = new URL(`../../../shaders/${name}.wgsl`, import.meta.url);
    try {
      return await fs.readFile(url, 'utf8');
    } catch {
      throw new Error(`shader '${name}' not found: no file ${url.pathname}`);
    }
  }
  throw new Error(
    `shader '${name}' not found in shaders/ (known: ${Object.keys(bundled).join(', ') || 'none'})`,
  );
}
