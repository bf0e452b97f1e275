/**
 * What a trace holds that a trainer could use, counted per kind of gap, so that a trace with nothing to train
 * on (no calls, every call failed, rewards only) is explained instead of ending in upstream's bare
 * "get_train_data_batch emitted zero training rows".
 */
import type { ModelCall, Rollout } from './types';

export interface TraceInventory {
  rollouts: number;
  /** rollouts with a part that could not be read */
  incomplete: number;
  failedRollouts: number;
  /** rollouts that made no call at all (a reward, or nothing) */
  rolloutsWithoutCalls: number;
  calls: number;
  /** calls with an HTTP error status or an error message */
  failedCalls: number;
  /** calls that did not fail but carry no response token ids */
  callsWithoutIds: number;
  /** calls that a trainer can build rows from: not failed, with prompt and response ids */
  trainableCalls: number;
}

/** A call Agent Lightning's rollout manager keeps: it did not fail and has prompt and response ids. */
export function isTrainableCall(c: ModelCall): boolean {
  return (
    c.httpStatus < 400 &&
    c.error === undefined &&
    c.promptTokenIds !== undefined &&
    (c.responseTokenIds?.length ?? 0) > 0
  );
}

export function traceInventory(rollouts: readonly Rollout[]): TraceInventory {
  const inv: TraceInventory = {
    rollouts: rollouts.length,
    incomplete: 0,
    failedRollouts: 0,
    rolloutsWithoutCalls: 0,
    calls: 0,
    failedCalls: 0,
    callsWithoutIds: 0,
    trainableCalls: 0,
  };
  for (const r of rollouts) {
    if (r.incomplete?.length) inv.incomplete++;
    if (r.state === 'failed') inv.failedRollouts++;
    if (r.calls.length === 0) inv.rolloutsWithoutCalls++;
    for (const c of r.calls) {
      inv.calls++;
      if (c.httpStatus >= 400 || c.error !== undefined) inv.failedCalls++;
      else if (isTrainableCall(c)) inv.trainableCalls++;
      else inv.callsWithoutIds++;
    }
  }
  return inv;
}

/** Why the trace has nothing to train on, in one sentence; null when some call is trainable. */
export function nothingToTrainOn(inv: TraceInventory): string | null {
  if (inv.trainableCalls > 0) return null;
  if (inv.rollouts === 0) return 'the trace holds no rollout';
  const parts: string[] = [];
  if (inv.calls === 0) parts.push(`none of its ${inv.rollouts} rollouts made a call (rewards only)`);
  else {
    if (inv.rolloutsWithoutCalls) parts.push(`${inv.rolloutsWithoutCalls} rollouts made no call`);
    if (inv.failedCalls) parts.push(`${inv.failedCalls} of ${inv.calls} calls failed`);
    if (inv.callsWithoutIds)
      parts.push(
        `${inv.callsWithoutIds} of ${inv.calls} calls carry no token ids (the engine returned none)`,
      );
  }
  return `no call can be trained on: ${parts.join('; ')}`;
}
