/** A run folder on disk as the trainer's TrainStorage (metrics.jsonl, traces/, checkpoints/ under one directory). */
import { appendFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { checkStoragePath, type TrainStorage } from '../train/storage';

export function dirStorage(root: string): TrainStorage {
  const at = async (path: string) => {
    checkStoragePath(path);
    const full = join(root, ...path.split('/'));
    await mkdir(dirname(full), { recursive: true });
    return full;
  };
  return {
    async writeFile(path, data) {
      await writeFile(await at(path), data);
    },
    async appendFile(path, text) {
      await appendFile(await at(path), text);
    },
    async readFile(path) {
      checkStoragePath(path);
      try {
        return new Uint8Array(await readFile(join(root, ...path.split('/'))));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
    },
    async list(dir) {
      try {
        const entries = await readdir(dir ? join(root, ...dir.split('/')) : root, { withFileTypes: true });
        return entries
          .filter((e) => e.isFile())
          .map((e) => (dir ? `${dir}/${e.name}` : e.name))
          .sort();
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw e;
      }
    },
  };
}
