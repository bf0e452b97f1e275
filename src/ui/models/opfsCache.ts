/**
 * The brought model folder kept in the browser's origin-private file system (OPFS), so a reload finds it again
 * without picking it anew: one folder at a time under `models/<name>/`, every file copied with its relative
 * path. `cachedFolder` gives it back as a PickedFolder whose files are read from OPFS when asked for.
 */
import type { PickedFolder } from './folderInput';

const ROOT = 'models';

function opfs(): Promise<FileSystemDirectoryHandle> {
  if (typeof navigator === 'undefined' || !navigator.storage?.getDirectory)
    return Promise.reject(new Error('this browser has no origin-private file system (OPFS)'));
  return navigator.storage.getDirectory();
}

async function dirAt(base: FileSystemDirectoryHandle, parts: string[], create: boolean) {
  let d = base;
  for (const p of parts) d = await d.getDirectoryHandle(p, { create });
  return d;
}

/** Replaces the cached folder with `folder` (every file of it). Returns the bytes written. */
export async function cacheFolder(folder: PickedFolder): Promise<number> {
  const root = await opfs();
  await root.removeEntry(ROOT, { recursive: true }).catch(() => {});
  const base = await dirAt(root, [ROOT, folder.name], true);
  let bytes = 0;
  for (const path of folder.reader.paths()) {
    const parts = path.split('/');
    const name = parts.pop() as string;
    const dir = await dirAt(base, parts, true);
    const handle = await dir.getFileHandle(name, { create: true });
    const w = await handle.createWritable();
    const data = folder.reader.blob ? await folder.reader.blob(path) : await folder.reader.bytes(path);
    await w.write(data as Blob);
    await w.close();
    bytes += data instanceof Blob ? data.size : data.byteLength;
  }
  return bytes;
}

async function list(dir: FileSystemDirectoryHandle, prefix: string, out: Map<string, FileSystemFileHandle>) {
  for await (const [name, h] of dir as unknown as AsyncIterable<[string, FileSystemHandle]>) {
    if (h.kind === 'file') out.set(prefix + name, h as FileSystemFileHandle);
    else await list(h as FileSystemDirectoryHandle, `${prefix}${name}/`, out);
  }
}

/** The cached folder, or null when there is none (or no OPFS). */
export async function cachedFolder(): Promise<PickedFolder | null> {
  let base: FileSystemDirectoryHandle;
  try {
    base = await dirAt(await opfs(), [ROOT], false);
  } catch {
    return null;
  }
  const names: string[] = [];
  for await (const [name, h] of base as unknown as AsyncIterable<[string, FileSystemHandle]>)
    if (h.kind === 'directory') names.push(name);
  if (names.length !== 1) return null;
  const files = new Map<string, FileSystemFileHandle>();
  await list(await base.getDirectoryHandle(names[0]), '', files);
  if (files.size === 0) return null;
  const file = async (p: string) => {
    const h = files.get(p);
    if (!h) throw new Error(`${p}: is missing`);
    return h.getFile();
  };
  return {
    name: names[0],
    reader: {
      paths: () => [...files.keys()],
      bytes: async (p) => new Uint8Array(await (await file(p)).arrayBuffer()),
      size: async (p) => (await file(p)).size,
      blob: file,
    },
  };
}

export async function forgetCachedFolder(): Promise<void> {
  const root = await opfs();
  await root.removeEntry(ROOT, { recursive: true }).catch(() => {});
}
