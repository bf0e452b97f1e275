import { useMemo, useState } from 'react';
import type { WeightSign } from '../../core/pipeline/sign';
import type { ModelCall, Rollout } from '../../core/trace/types';
import { type BatchIndex, callPositions, rowOfCall, type TrainerValues } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import type { ColorScale } from '../tokens/colorScale';
import { fmt } from '../tokens/colorScale';
import type { ColorBy } from '../tokens/quantities';
import { TokenChips } from '../tokens/TokenChips';
import { Message } from './Messages';
import {
  alignsWithResponse,
  alternativeLines,
  batchTokenView,
  callTokenView,
  withVocabMismatch,
} from './tokenView';

/** Messages of call k that were not already in call k−1's request + response (the turn's new context). */
function newMessageStart(calls: ModelCall[], k: number): number {
  if (k === 0) return 0;
  const prev = calls[k - 1];
  const n = prev.request.messages.length + (prev.response ? 1 : 0);
  return Math.min(n, calls[k].request.messages.length);
}

export function CallHeader(props: {
  call: ModelCall;
  index: number;
  total: number;
  row: number;
  res: ComputeResult | null;
}) {
  const { call, row, res } = props;
  const ms = call.timings ? Math.round(call.timings.endMs - call.timings.startMs) : null;
  const parts = [
    `finish ${call.response?.finishReason ?? '—'}`,
    `HTTP ${call.httpStatus}`,
    call.engine
      ? `${call.engine.engine} · ${call.engine.model}${call.engine.policyVersion !== undefined ? ` @ v${call.engine.policyVersion}` : ''}`
      : null,
    ms !== null ? `${ms} ms` : null,
    `${call.promptTokenIds?.length ?? '—'} prompt / ${call.responseTokenIds?.length ?? '—'} response ids`,
    res ? (row >= 0 ? `training row ${row}` : 'in no training row') : null,
  ].filter(Boolean);
  return (
    <div className="callhead" data-testid="call-header">
      <b>
        call {props.index + 1} / {props.total}
      </b>
      {parts.map((p) => (
        <span key={p} className="muted">
          {p}
        </span>
      ))}
      {call.error && <span className="bad">{call.error}</span>}
    </div>
  );
}

export function CallView(props: {
  rollout: Rollout;
  rolloutIndex: number;
  callIndex: number;
  res: ComputeResult | null;
  index: BatchIndex | null;
  tokenText: Map<number, string>;
  /** the trainer's values at the batch positions (a kept training trace), or null */
  trainer?: TrainerValues | null;
  colorBy: ColorBy;
  scale: ColorScale;
  sign: WeightSign;
}) {
  const { rollout, rolloutIndex, callIndex, res, index, colorBy, scale, sign } = props;
  const call = rollout.calls[callIndex];
  const [allMessages, setAllMessages] = useState(false);
  const row = res && index ? rowOfCall(res.batch, index, rolloutIndex, callIndex) : -1;
  const view = useMemo(() => {
    if (res && index) {
      const pos = callPositions(res.batch, index, rolloutIndex, callIndex);
      if (pos.length > 0) {
        const v = batchTokenView(res, pos, props.tokenText, sign, props.trainer);
        // the engine's alternatives belong to its response ids; shown where the batch tokens are exactly those
        if (call.responseTopK && alignsWithResponse(call, v.ids))
          v.alternatives = (i) => alternativeLines(call, i, props.tokenText);
        withVocabMismatch(v, call, props.tokenText);
        return { v, inBatch: true, start: pos[0] - res.batch.offsets[row] };
      }
    }
    return { v: callTokenView(call, props.tokenText), inBatch: false, start: 0 };
  }, [res, index, rolloutIndex, callIndex, call, props.tokenText, row, sign, props.trainer]);
  const start = allMessages ? 0 : newMessageStart(rollout.calls, callIndex);
  const msgs = call.request.messages;
  const callWeight = view.inBatch ? sum(view.v.quantities[0].values) : null;
  return (
    <div className="callview" data-testid="call-view">
      <CallHeader call={call} index={callIndex} total={rollout.calls.length} row={row} res={res} />
      <div className="tokens-head">
        <h3>{view.inBatch ? 'Training tokens' : 'Response tokens (engine)'}</h3>
        <span className="muted">
          {view.v.ids.length} tokens
          {callWeight !== null && (
            <>
              {' '}
              · call {sign.short} <b data-testid="call-weight">{fmt(callWeight, 6)}</b>
            </>
          )}
          {!view.inBatch && res && ' · this call is in no training row'}
        </span>
      </div>
      {view.v.ids.length > 0 ? (
        <TokenChips
          ids={view.v.ids}
          texts={view.v.texts}
          quantities={view.v.quantities}
          colorKey={view.v.available.has(colorBy) ? colorBy : ''}
          scale={scale}
          positionBase={view.start}
          chipClass={(i) => (view.inBatch && view.v.quantities[3]?.values[i] === 0 ? 'obs' : undefined)}
          extra={view.v.alternatives}
          ariaLabel={`Tokens of call ${callIndex + 1}`}
          testId="call-tokens"
        />
      ) : (
        <p className="muted">No token ids recorded for this call.</p>
      )}
      <div className="messages">
        <div className="tokens-head">
          <h3>Request</h3>
          <span className="muted">
            {start > 0 ? `${start} earlier messages hidden · ` : ''}
            {msgs.length} messages
            {call.request.tools?.length ? ` · ${call.request.tools.length} tools` : ''}
          </span>
          {callIndex > 0 && (
            <button type="button" className="linkish" onClick={() => setAllMessages(!allMessages)}>
              {allMessages ? 'only new messages' : 'all messages'}
            </button>
          )}
        </div>
        {msgs.slice(start).map((m, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: messages are positional
          <Message key={start + i} m={m} />
        ))}
        <div className="tokens-head">
          <h3>Response</h3>
        </div>
        {call.response ? (
          <Message m={call.response.message} label="response" />
        ) : (
          <p className="bad">no response</p>
        )}
      </div>
    </div>
  );
}

function sum(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) if (!Number.isNaN(v[i])) s += v[i];
  return s;
}
