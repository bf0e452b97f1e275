/**
 * The body of a harness worker, shared by the browser Web Worker entry (worker.ts) and the Node
 * worker_threads entry (cli/rolloutWorker.ts): wait for the proxy channel, then run jobs one at a time.
 */
import { ChatClient } from './client';
import { channelTransport, type PortLike, type Transport } from './http';
import { getHarness } from './registry';
import { type FromWorker, type HarnessJob, parseToWorker } from './workerProtocol';

export async function runJob(job: HarnessJob, transport: Transport): Promise<FromWorker> {
  const client = new ChatClient({
    baseUrl: job.baseUrl,
    eventUrl: job.eventUrl,
    apiKey: job.apiKey,
    transport,
  });
  try {
    const harness = getHarness(job.harness);
    const out = await harness.run(client, job.task, { behaviours: job.behaviours, maxTurns: job.maxTurns });
    await client.reportReward(out.reward);
    return {
      type: 'done',
      rolloutId: job.rolloutId,
      reward: out.reward,
      turns: out.turns,
      ended: out.ended,
      info: out.info,
    };
  } catch (e) {
    return { type: 'failed', rolloutId: job.rolloutId, error: e instanceof Error ? e.message : String(e) };
  }
}

/** `self` in a Web Worker, `parentPort` in a worker_thread. */
export function serveHarnessWorker(ctrl: PortLike): void {
  let transport: Transport | null = null;
  let queue = Promise.resolve();
  ctrl.onmessage = (ev) => {
    let msg: ReturnType<typeof parseToWorker>;
    try {
      msg = parseToWorker(ev.data);
    } catch (e) {
      const rid = (ev.data as { job?: { rolloutId?: unknown } })?.job?.rolloutId;
      ctrl.postMessage({
        type: 'failed',
        rolloutId: typeof rid === 'string' ? rid : '',
        error: (e as Error).message,
      } satisfies FromWorker);
      return;
    }
    if (msg.type === 'init') {
      transport = channelTransport(msg.port);
      return;
    }
    const job = msg.job;
    queue = queue.then(async () => {
      if (!transport) {
        ctrl.postMessage({
          type: 'failed',
          rolloutId: job.rolloutId,
          error: 'worker got a job before its proxy channel',
        } satisfies FromWorker);
        return;
      }
      ctrl.postMessage(await runJob(job, transport));
    });
  };
  ctrl.postMessage({ type: 'ready' } satisfies FromWorker);
}
