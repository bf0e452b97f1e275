/**
 * The page's side of the trainer worker (train.worker.ts): starts one worker for a run, checks every message it
 * sends with the protocol's validator (protocol.ts) and hands it on, and turns a crash, an unreadable message or
 * a bad message into one failure with its reason. The store (trainStore.ts) decides what a message means.
 */
import { type FromTrainWorker, parseFromTrainWorker, type ToTrainWorker } from './protocol';

export interface TrainWorkerHandlers {
  message(m: FromTrainWorker): void;
  /** the worker crashed or sent something that is not a message of the protocol */
  fail(error: string): void;
}

export interface TrainWorkerClient {
  post(msg: ToTrainWorker): void;
  terminate(): void;
}

/** A started worker that has been sent `start` (the run's id, config, resume flag and preset). */
export function startTrainWorker(
  start: Extract<ToTrainWorker, { type: 'start' }>,
  on: TrainWorkerHandlers,
): TrainWorkerClient {
  const w = new Worker(new URL('./train.worker.ts', import.meta.url), { type: 'module' });
  w.onmessage = (e) => {
    let m: FromTrainWorker;
    try {
      m = parseFromTrainWorker(e.data);
    } catch (err) {
      on.fail(`the trainer worker sent a bad message: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    on.message(m);
  };
  w.onerror = (e) => {
    e.preventDefault();
    on.fail(`the trainer worker crashed: ${e.message || 'uncaught error'}`);
  };
  w.onmessageerror = () => on.fail('a message from the trainer worker could not be read');
  w.postMessage(start);
  return {
    post: (msg) => w.postMessage(msg),
    terminate: () => w.terminate(),
  };
}
