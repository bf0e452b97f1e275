/**
 * Where a run keeps its files, injected so the same loop writes to a folder under Node (src/cli/runStorage.ts),
 * to the origin-private file system in the page (`opfsStorage`), or to memory in tests. Paths are relative
 * and '/'-separated: `metrics.jsonl`, `traces/step_000003.jsonl`, `checkpoints/step_000005.safetensors`.
 */
export interface TrainStorage {
  writeFile(path: string, data: Uint8Array | string): Promise<void>;
  appendFile(path: string, text: string): Promise<void>;
  /** null when the file does not exist */
  readFile(path: string): Promise<Uint8Array | null>;
  /** relative paths of the files directly in a folder ('' for the root), sorted */
  list(dir: string): Promise<string[]>;
}

export function checkStoragePath(path: string): void {
  if (!/^[\w.-]+(\/[\w.-]+)*$/.test(path) || path.split('/').some((p) => p === '..' || p === '.'))
    throw new Error(`storage path '${path}' must be relative, '/'-separated names of [A-Za-z0-9_.-]`);
}

const enc = new TextEncoder();
const bytes = (d: Uint8Array | string) => (typeof d === 'string' ? enc.encode(d) : d);

/** Files in a Map (tests, and runs that keep nothing). */
export class MemoryStorage implements TrainStorage {
  readonly files = new Map<string, Uint8Array>();
  async writeFile(path: string, data: Uint8Array | string): Promise<void> {
    checkStoragePath(path);
    this.files.set(path, new Uint8Array(bytes(data)));
  }
  async appendFile(path: string, text: string): Promise<void> {
    checkStoragePath(path);
    const old = this.files.get(path) ?? new Uint8Array(0);
    const add = enc.encode(text);
    const out = new Uint8Array(old.length + add.length);
    out.set(old);
    out.set(add, old.length);
    this.files.set(path, out);
  }
  async readFile(path: string): Promise<Uint8Array | null> {
    return this.files.get(path) ?? null;
  }
  async list(dir: string): Promise<string[]> {
    const prefix = dir ? `${dir.replace(/\/+$/, '')}/` : '';
    return [...this.files.keys()]
      .filter((k) => k.startsWith(prefix) && !k.slice(prefix.length).includes('/'))
      .sort();
  }
  text(path: string): string {
    const b = this.files.get(path);
    return b ? new TextDecoder().decode(b) : '';
  }
}

/** The browser's origin-private file system, under one folder per run (`runs/<name>/…`). */
export function opfsStorage(runDir: string): TrainStorage {
  checkStoragePath(runDir);
  const dirOf = async (path: string, create: boolean): Promise<[FileSystemDirectoryHandle, string]> => {
    const parts = `${runDir}/${path}`.split('/');
    let dir = await navigator.storage.getDirectory();
    for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create });
    return [dir, parts[parts.length - 1]];
  };
  const read = async (path: string): Promise<Uint8Array | null> => {
    try {
      const [dir, name] = await dirOf(path, false);
      const f = await (await dir.getFileHandle(name)).getFile();
      return new Uint8Array(await f.arrayBuffer());
    } catch {
      return null;
    }
  };
  return {
    async writeFile(path, data) {
      checkStoragePath(path);
      const [dir, name] = await dirOf(path, true);
      const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
      await w.write(bytes(data) as Uint8Array<ArrayBuffer>);
      await w.close();
    },
    async appendFile(path, text) {
      checkStoragePath(path);
      const [dir, name] = await dirOf(path, true);
      const handle = await dir.getFileHandle(name, { create: true });
      const size = (await handle.getFile()).size;
      const w = await handle.createWritable({ keepExistingData: true });
      await w.seek(size);
      await w.write(text);
      await w.close();
    },
    readFile: read,
    async list(d) {
      const out: string[] = [];
      let dir: FileSystemDirectoryHandle;
      try {
        const parts = d ? `${runDir}/${d}`.split('/') : [runDir];
        dir = await navigator.storage.getDirectory();
        for (const p of parts) dir = await dir.getDirectoryHandle(p);
      } catch {
        return [];
      }
      for await (const [name, h] of (
        dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }
      ).entries())
        if (h.kind === 'file') out.push(d ? `${d}/${name}` : name);
      return out.sort();
    },
  };
}
