/// <reference lib="webworker" />
/**
 * The Scheduling view's worker: runs the simulator (simView.ts `runScheduling`) off the page's thread, so the
 * page stays responsive while a scenario's modes are simulated. Requests arriving while one runs are coalesced:
 * only the newest is computed.
 */
import { checkSimRequest, runScheduling, type SimRequest, type SimResponse } from './simView';

declare const self: DedicatedWorkerGlobalScope;

let latest: SimRequest | null = null;
let scheduled = false;

const runLatest = () => {
  scheduled = false;
  const req = latest;
  latest = null;
  if (!req) return;
  let out: SimResponse;
  try {
    out = { id: req.id, run: runScheduling(req.scenario, req.set) };
  } catch (e) {
    out = { id: req.id, error: (e as Error).message };
  }
  self.postMessage(out);
};

self.onmessage = (e: MessageEvent) => {
  try {
    latest = checkSimRequest(e.data);
  } catch (err) {
    self.postMessage({ id: -1, error: (err as Error).message } satisfies SimResponse);
    return;
  }
  if (!scheduled) {
    scheduled = true;
    setTimeout(runLatest, 0);
  }
};
