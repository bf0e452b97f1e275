/**
 * A harness worker for the training-loop tests: runs real jobs, except that the first rollout of each step's
 * first task (rollout ids ending in "-0-0") makes one real call and then crashes the worker thread.
 */
import { parentPort } from 'node:worker_threads';
import { ChatClient } from '../../src/harness/client';
import { channelTransport, type PortLike, type Transport } from '../../src/harness/http';
import { runJob } from '../../src/harness/workerMain';
import { parseToWorker } from '../../src/harness/workerProtocol';

const ctrl = parentPort as unknown as PortLike;
let transport: Transport;
ctrl.onmessage = async (ev) => {
  const msg = parseToWorker(ev.data);
  if (msg.type === 'init') {
    transport = channelTransport(msg.port);
    return;
  }
  const { job } = msg;
  if (job.rolloutId.endsWith('-0-0')) {
    const client = new ChatClient({ baseUrl: job.baseUrl, transport });
    await client.complete({ messages: [{ role: 'user', content: 'about to crash' }], max_tokens: 4 });
    setTimeout(() => {
      throw new Error('simulated harness crash');
    });
    return;
  }
  ctrl.postMessage(await runJob(job, transport));
};
ctrl.postMessage({ type: 'ready' });
