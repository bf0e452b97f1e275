/**
 * Node side of model folders (hfFolder.ts): write an exported folder to disk, and read one back as a
 * FolderReader. Node-only (node:fs); the page reads picked or dropped directories instead (ui/models/).
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import type { FolderFiles, FolderReader } from './hfFolder';

export async function writeModelFolder(dir: string, files: FolderFiles): Promise<void> {
  for (const [path, bytes] of files) {
    const target = join(dir, ...path.split('/'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, bytes);
  }
}

async function walk(root: string, dir: string, out: string[]): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) await walk(root, full, out);
    else if (e.isFile()) out.push(relative(root, full).split(sep).join('/'));
  }
}

export async function nodeFolderReader(dir: string): Promise<FolderReader> {
  const paths: string[] = [];
  await walk(dir, dir, paths);
  return {
    dir,
    paths: () => paths,
    bytes: async (p) => new Uint8Array(await readFile(join(dir, ...p.split('/')))),
    size: async (p) => (await stat(join(dir, ...p.split('/')))).size,
  };
}

/** Writes files to a new temporary folder; returns its path and a function removing it. */
export async function tempModelFolder(
  files: FolderFiles,
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-lab-model-'));
  await writeModelFolder(dir, files);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
