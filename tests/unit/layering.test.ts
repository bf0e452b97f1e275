import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const src = join(root, 'src');

/**
 * The layering as docs/ARCHITECTURE.md states it: the "Layers" table, one row per `src/<folder>/`, whose
 * "may import" column names the folders (`core/`, …) or says "nothing else in `src/`", "everything above" (the
 * rows before it) or "all but `ui/`". A sub-folder named there (`server/protocol/`) allows that part of a layer only.
 */
function documentedLayers(): Map<string, Set<string>> {
  const doc = readFileSync(join(root, 'docs/ARCHITECTURE.md'), 'utf8');
  const rows = [...doc.matchAll(/^\| `src\/([a-z]+)\/` \|[^\n]*\| ([^|\n]+) \|$/gm)];
  if (rows.length === 0)
    throw new Error('docs/ARCHITECTURE.md has no layer table rows (| `src/x/` | … | may import |)');
  const names = rows.map((r) => r[1]);
  const out = new Map<string, Set<string>>();
  rows.forEach((r, i) => {
    const [, layer, rule] = r;
    const named = [...rule.matchAll(/`([a-z]+)\/`/g)].map((m) => m[1]);
    const parts = [...rule.matchAll(/`([a-z]+\/[a-z]+)\/`/g)].map((m) => m[1]);
    let allowed: string[];
    if (/nothing else in/.test(rule)) allowed = [];
    else if (/everything above/.test(rule)) allowed = names.slice(0, i);
    else if (/all but/.test(rule)) allowed = names.filter((n) => n !== layer && !named.includes(n));
    else if (named.length) allowed = named;
    else throw new Error(`cannot read the "may import" rule of src/${layer}/: "${rule.trim()}"`);
    out.set(layer, new Set([layer, ...allowed, ...parts]));
  });
  return out;
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Static and dynamic imports, `export … from` and `import.meta.glob`-free `new URL(…, import.meta.url)` sources. */
function importsOf(text: string): string[] {
  const specs: string[] = [];
  for (const m of text.matchAll(/(?:^|[^\w.])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]/gm))
    specs.push(m[1]);
  for (const m of text.matchAll(/(?:^|[^\w.])import\s*['"]([^'"]+)['"]/gm)) specs.push(m[1]);
  for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]);
  // workers are modules too: new URL('./lab.worker.ts', import.meta.url); other URLs are assets
  for (const m of text.matchAll(/new URL\(\s*['"](\.[^'"]+\.(?:ts|tsx|js))['"]\s*,\s*import\.meta\.url/g))
    specs.push(m[1]);
  return specs;
}

const layerOf = (file: string) => relative(src, file).split(/[\\/]/)[0];

describe('layering of src/ (docs/ARCHITECTURE.md)', () => {
  const layers = documentedLayers();
  const files = walk(src);

  it('documents every folder of src/', () => {
    const folders = readdirSync(src).filter((n) => statSync(join(src, n)).isDirectory());
    for (const f of folders) expect(layers.has(f), `src/${f}/ is not in the layer table`).toBe(true);
  });

  it('has no import against the layering', () => {
    const bad: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      const allowed = layers.get(from);
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const target = resolve(dirname(file), spec);
        const rel = relative(src, target);
        if (rel.startsWith('..')) {
          bad.push(`${relative(root, file)} imports ${spec}, outside src/`);
          continue;
        }
        const [to, sub] = rel.split(/[\\/]/);
        if (!allowed?.has(to) && !allowed?.has(`${to}/${sub}`))
          bad.push(`${relative(root, file)} (${from}/) imports ${spec} (${to}/)`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('keeps core/ free of Node-only APIs and the DOM', () => {
    const bad: string[] = [];
    for (const file of files.filter((f) => layerOf(f) === 'core')) {
      const text = readFileSync(file, 'utf8');
      for (const spec of importsOf(text))
        if (
          spec.startsWith('node:') ||
          ['fs', 'path', 'os', 'child_process', 'worker_threads'].includes(spec)
        )
          bad.push(`${relative(root, file)} imports ${spec}`);
      const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const g of ['document', 'window', 'navigator', 'process', 'Buffer', 'require'])
        if (new RegExp(`(?<![\\w.$])${g}\\s*[.(]`).test(code)) bad.push(`${relative(root, file)} uses ${g}`);
    }
    expect(bad).toEqual([]);
  });

  it('would catch a violation: the rule reader and the import scanner on a made-up file', () => {
    expect(layers.get('core')).toEqual(new Set(['core']));
    expect(layers.get('ui')?.has('engine')).toBe(true);
    expect(layers.get('cli')?.has('ui')).toBe(false);
    expect(layers.get('ui')?.has('server')).toBe(false);
    expect(layers.get('ui')?.has('server/protocol')).toBe(true);
    expect(
      importsOf(
        `import { x } from '../ui/store';\nimport type { Y } from "../engine/model";\nconst m = await import('../cli/lab');`,
      ),
    ).toEqual(['../ui/store', '../engine/model', '../cli/lab']);
    expect(
      importsOf(
        `new Worker(new URL('./w.worker.ts', import.meta.url)); new URL('../x.json', import.meta.url)`,
      ),
    ).toEqual(['./w.worker.ts']);
  });
});
