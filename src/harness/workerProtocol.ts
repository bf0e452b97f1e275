/**
 * Control messages between a worker pool and its harness workers (a browser Web Worker or a Node
 * worker_thread). HTTP traffic to the proxy goes over a separate MessageChannel (see http.ts); these messages
 * only start jobs and report how they ended. One validator, used on both ends.
 */

import { isRecord, str } from '../core/wire';
import { BEHAVIOURS, type Behaviour } from './harness';
import type { PortLike } from './http';
import { type HarnessName, isHarnessName } from './registry';

export interface HarnessJob {
  rolloutId: string;
  harness: HarnessName;
  task: { id: string; split: 'train' | 'val' } & Record<string, unknown>;
  /** the rollout's chat base path, e.g. `/rollout/r1/attempt/0/mode/train/openai/v1` */
  baseUrl: string;
  eventUrl: string;
  apiKey: string;
  behaviours: Behaviour[];
  maxTurns?: number;
}

export type ToWorker = { type: 'init'; port: PortLike } | { type: 'run'; job: HarnessJob };

export type FromWorker =
  | { type: 'ready' }
  | {
      type: 'done';
      rolloutId: string;
      reward: number;
      turns: number;
      ended: string;
      info?: Record<string, unknown>;
    }
  | { type: 'failed'; rolloutId: string; error: string };

export function parseToWorker(data: unknown): ToWorker {
  if (!isRecord(data)) throw new Error('worker message must be an object');
  if (data.type === 'init') {
    const port = data.port as PortLike | undefined;
    if (!port || typeof port.postMessage !== 'function')
      throw new Error('init message needs a MessagePort in .port');
    return { type: 'init', port };
  }
  if (data.type === 'run') {
    const j = data.job;
    if (!isRecord(j)) throw new Error('run message.job must be an object');
    const harness = str(j, 'harness', 'job');
    if (!isHarnessName(harness)) throw new Error(`job.harness: unknown harness '${harness}'`);
    const task = j.task;
    if (!isRecord(task) || typeof task.id !== 'string' || (task.split !== 'train' && task.split !== 'val'))
      throw new Error("job.task must be an object with a string id and split 'train' or 'val'");
    if (
      !Array.isArray(j.behaviours) ||
      j.behaviours.some((b) => !(BEHAVIOURS as readonly unknown[]).includes(b))
    )
      throw new Error(`job.behaviours must be an array of ${BEHAVIOURS.join(', ')}`);
    if (
      j.maxTurns !== undefined &&
      (typeof j.maxTurns !== 'number' || !Number.isInteger(j.maxTurns) || j.maxTurns < 1)
    )
      throw new Error('job.maxTurns must be a positive integer');
    return {
      type: 'run',
      job: {
        rolloutId: str(j, 'rolloutId', 'job'),
        harness,
        task: task as HarnessJob['task'],
        baseUrl: str(j, 'baseUrl', 'job'),
        eventUrl: str(j, 'eventUrl', 'job'),
        apiKey: str(j, 'apiKey', 'job'),
        behaviours: j.behaviours as Behaviour[],
        maxTurns: j.maxTurns as number | undefined,
      },
    };
  }
  throw new Error(`worker message.type must be 'init' or 'run', got ${JSON.stringify(data.type)}`);
}

export function parseFromWorker(data: unknown): FromWorker {
  if (!isRecord(data)) throw new Error('message from worker must be an object');
  if (data.type === 'ready') return { type: 'ready' };
  if (data.type === 'done') {
    const { reward, turns } = data;
    if (typeof reward !== 'number' || !Number.isFinite(reward))
      throw new Error('done.reward must be a finite number');
    if (typeof turns !== 'number' || !Number.isInteger(turns) || turns < 0)
      throw new Error('done.turns must be a non-negative integer');
    return {
      type: 'done',
      rolloutId: str(data, 'rolloutId', 'done'),
      reward,
      turns,
      ended: str(data, 'ended', 'done'),
      info: isRecord(data.info) ? data.info : undefined,
    };
  }
  if (data.type === 'failed')
    return {
      type: 'failed',
      rolloutId: str(data, 'rolloutId', 'failed'),
      error: str(data, 'error', 'failed'),
    };
  throw new Error(`message from worker: unknown type ${JSON.stringify(data.type)}`);
}
