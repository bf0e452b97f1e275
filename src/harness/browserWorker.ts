/** The browser side of the worker pool: harness workers are module Web Workers running worker.ts. */
import type { WorkerHandle } from './pool';

/** Adapts a DOM Worker to the pool's WorkerHandle. */
export function workerHandle(w: Worker): WorkerHandle {
  let onFailure: (reason: string) => void = () => {};
  w.onerror = (ev) => {
    ev.preventDefault();
    onFailure(ev.message || 'uncaught error in worker');
  };
  w.onmessageerror = () => onFailure('a message from the worker could not be deserialized');
  return {
    post: (msg, transfer) => w.postMessage(msg, (transfer ?? []) as Transferable[]),
    onMessage: (cb) => {
      w.onmessage = (ev) => cb(ev.data);
    },
    onFailure: (cb) => {
      onFailure = cb;
    },
    terminate: () => w.terminate(),
  };
}

export function spawnBrowserHarnessWorker(): WorkerHandle {
  return workerHandle(new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }));
}
