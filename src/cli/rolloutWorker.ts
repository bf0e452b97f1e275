/** Node worker_threads entry for harness workers: the same worker body as the browser's Web Worker. */
import { parentPort } from 'node:worker_threads';
import type { PortLike } from '../harness/http';
import { serveHarnessWorker } from '../harness/workerMain';

if (!parentPort) throw new Error('rolloutWorker.ts must run in a worker thread');
serveHarnessWorker(parentPort as unknown as PortLike);
