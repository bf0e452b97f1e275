/**
 * A harness worker for pool tests that misbehaves on purpose, chosen by the task id: 'crash' and 'hang' make one
 * real call through the proxy channel first (so the test can check it is kept), 'garbage' answers with an
 * invalid message, anything else runs the real job.
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
  const mode = job.task.id.split(':')[0];
  if (mode === 'crash' || mode === 'hang') {
    const client = new ChatClient({ baseUrl: job.baseUrl, transport });
    await client.complete({ messages: [{ role: 'user', content: `about to ${mode}` }], max_tokens: 8 });
    if (mode === 'crash')
      setTimeout(() => {
        throw new Error('simulated harness crash');
      });
    else for (;;) {}
    return;
  }
  if (mode === 'garbage') {
    ctrl.postMessage({ type: 'done', rolloutId: job.rolloutId, reward: 'lots' });
    return;
  }
  ctrl.postMessage(await runJob(job, transport));
};
ctrl.postMessage({ type: 'ready' });
