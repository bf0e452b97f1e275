/** Node adapter for the harness worker pool: harness workers as worker_threads. */
import { Worker } from 'node:worker_threads';
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
