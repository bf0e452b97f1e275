/**
 * A local folder picked with a directory input or dropped on the page, as a FolderReader (relative paths with
 * the folder's own name dropped; files read only when asked for).
 */
import { type FolderReader, stripCommonRoot } from '../../engine/onnx/hfFolder';

export interface PickedFolder {
  name: string;
  reader: FolderReader;
}

/** From `(path, File)` pairs whose paths start with the folder's own name. */
export function folderFromFiles(entries: [string, File][]): PickedFolder {
  if (entries.length === 0) throw new Error('the folder is empty');
  const { prefix, paths } = stripCommonRoot(entries.map(([p]) => p));
  const byPath = new Map(paths.map((p, i) => [p, entries[i][1]]));
  const file = (p: string): File => {
    const f = byPath.get(p);
    if (!f) throw new Error(`${p}: is missing`);
    return f;
  };
  return {
    name: prefix ? prefix.slice(0, -1) : 'model',
    reader: {
      paths: () => [...byPath.keys()],
      bytes: async (p) => new Uint8Array(await file(p).arrayBuffer()),
      size: async (p) => file(p).size,
      blob: async (p) => file(p),
    },
  };
}

/** A directory input's files (`webkitRelativePath` carries the folder's name). */
export function folderFromInput(files: FileList): PickedFolder {
  return folderFromFiles(Array.from(files, (f) => [f.webkitRelativePath || f.name, f] as [string, File]));
}

async function readAll(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = dir.createReader();
  const out: FileSystemEntry[] = [];
  // readEntries returns the listing in batches until an empty one
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
    if (batch.length === 0) return out;
    out.push(...batch);
  }
}

async function walk(entry: FileSystemEntry, path: string, out: [string, File][]): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej));
    out.push([path, file]);
  } else if (entry.isDirectory)
    for (const child of await readAll(entry as FileSystemDirectoryEntry))
      await walk(child, `${path}/${child.name}`, out);
}

/** A dropped folder (drag-and-drop hands over directory entries, not files). */
export async function folderFromDrop(items: DataTransferItemList): Promise<PickedFolder> {
  const entries = Array.from(items)
    .map((i) => i.webkitGetAsEntry())
    .filter((e): e is FileSystemEntry => e !== null);
  const dir = entries.find((e) => e.isDirectory);
  if (!dir) throw new Error('drop a folder (a model directory), not single files');
  const out: [string, File][] = [];
  await walk(dir, dir.name, out);
  return folderFromFiles(out);
}
