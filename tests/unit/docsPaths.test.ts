import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const DOCS = ['README.md', 'docs/ARCHITECTURE.md', 'docs/TRACE_FORMAT.md', 'tests/golden/README.md'];

/** Every file of the repository (outside node_modules, build output and git), relative paths. */
function repoFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir)) {
      if (['node_modules', '.git', 'dist', 'test-results', '.venv-peer'].includes(name)) continue;
      const p = join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(p).isDirectory()) {
        out.push(`${r}/`);
        walk(p, r);
      } else out.push(r);
    }
  };
  walk(root, '');
  return out;
}

/** Upstream files the docs cite (agentlightning/…, verl/…): not paths of this repository. */
const UPSTREAM = /^(agentlightning|verl|torch|transformers)\//;

/**
 * Paths a document names in backticks: anything with a `/` or a source-file extension, without placeholders.
 * A path the document marks "(planned)" right after it is a layer that does not exist yet.
 */
function namedPaths(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const after = text.slice((m.index ?? 0) + m[0].length, (m.index ?? 0) + m[0].length + 12);
    if (/^\s*\(planned/.test(after)) continue;
    let p = m[1].replace(/[),.:;]+$/, '');
    if (UPSTREAM.test(p)) continue;
    if (/[<>*{}…$|]|^https?:|^\.\.|^[-@]|^\/|=|^npm$/.test(p)) continue; // placeholders, URLs, flags, absolute
    if (/^[A-Za-z0-9_]+\(/.test(p)) continue; // a call such as f(x)
    p = p.replace(/:\w+$/, ''); // path:function
    const isFile = /\.(ts|tsx|mts|mjs|js|json|wgsl|py|sh|txt|md|html|css)$/.test(p);
    if (!isFile && !p.endsWith('/')) continue;
    if (!isFile && !/^(src|tests|python|public|shaders|docs|\.ci)\//.test(p) && !p.includes('/')) continue;
    out.add(p);
  }
  return [...out];
}

/** Folders .gitignore names (build and test output: `test-results/`, `dist/`): made by runs, not committed. */
function ignoredFolders(): string[] {
  return readFileSync(join(root, '.gitignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim().replace(/^\//, ''))
    .filter((l) => l.endsWith('/') && !l.includes('*'));
}

/**
 * A named path exists if it is a path from the repository root, or from `src/` (the docs say `ui/lab/…` for
 * `src/ui/lab/…`), or the end of exactly such a path (a table inside a section about `src/engine/` says
 * `policy/types.ts`).
 */
function exists(p: string, files: string[]): boolean {
  if (ignoredFolders().some((d) => p.startsWith(d))) return true; // an output location
  if (existsSync(join(root, p)) || existsSync(join(root, 'src', p))) return true;
  return files.some((f) => f === p || f.endsWith(`/${p}`));
}

describe('paths named in the docs exist', () => {
  const files = repoFiles();
  for (const doc of DOCS)
    it(doc, () => {
      const text = readFileSync(join(root, doc), 'utf8');
      const missing = namedPaths(text).filter((p) => !exists(p, files));
      expect(missing).toEqual([]);
    });
  it('would catch a missing one', () => {
    expect(
      namedPaths(
        'see `src/core/nope.ts`, `ui/lab/align.ts`, `x <op>.ts`, `src/later/` (planned) and `gpu/<op>.ts`',
      ),
    ).toEqual(['src/core/nope.ts', 'ui/lab/align.ts']);
    expect(exists('src/core/nope.ts', files)).toBe(false);
    expect(exists('ui/lab/pipeline.ts', files)).toBe(true);
    expect(exists('policy/types.ts', files)).toBe(true);
    expect(exists('test-results/e2e/', files)).toBe(true); // output folder, made by the e2e run
  });
});
