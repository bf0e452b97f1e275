/// <reference lib="webworker" />
/** Browser Web Worker entry: `new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })`. */
import type { PortLike } from './http';
import { serveHarnessWorker } from './workerMain';

serveHarnessWorker(self as unknown as PortLike);
