import { memo, useMemo } from 'react';
import type { Rollout } from '../../core/trace/types';
import type { BatchIndex } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import { fmt } from '../tokens/colorScale';

/** Per call of one rollout: trainable and observation tokens, mean advantage and total effective weight. */
export function callWeights(res: ComputeResult, index: BatchIndex, rollout: number, nCalls: number) {
  const weight = new Float64Array(nCalls);
  const advantage = new Float64Array(nCalls);
  const tokens = new Int32Array(nCalls);
  const observations = new Int32Array(nCalls);
  const { batch } = res;
  for (const r of index.rowsOfRollout[rollout] ?? []) {
    for (let p = batch.offsets[r]; p < batch.offsets[r + 1]; p++) {
      const c = batch.tokenCall[p];
      if (c < 0 || c >= nCalls) continue;
      if (!batch.mask[p]) {
        observations[c]++;
        continue;
      }
      weight[c] += res.tokenWeight[p];
      advantage[c] += res.tokenAdvantage[p];
      tokens[c]++;
    }
  }
  for (let c = 0; c < nCalls; c++) advantage[c] = tokens[c] ? advantage[c] / tokens[c] : Number.NaN;
  return { weight, advantage, tokens, observations };
}

export const CallWeights = memo(function CallWeights(props: {
  rollout: Rollout;
  rolloutIndex: number;
  res: ComputeResult;
  index: BatchIndex;
  onSelectCall: (k: number) => void;
}) {
  const { rollout, rolloutIndex, res, index } = props;
  const { weight, advantage, tokens, observations } = useMemo(
    () => callWeights(res, index, rolloutIndex, rollout.calls.length),
    [res, index, rolloutIndex, rollout.calls.length],
  );
  let max = 0;
  for (const w of weight) max = Math.max(max, Math.abs(w));
  return (
    <table className="calltable" data-testid="call-weights">
      <thead>
        <tr>
          <th>call</th>
          <th className="c-num">trainable</th>
          <th className="c-num">observation</th>
          <th className="c-num">mean advantage</th>
          <th className="c-num">weight</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {rollout.calls.map((_, k) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: calls are positional
          <tr key={k}>
            <td>
              <button type="button" className="linkish" onClick={() => props.onSelectCall(k)}>
                {k + 1}
              </button>
            </td>
            <td className="c-num">{tokens[k]}</td>
            <td className="c-num">{observations[k]}</td>
            <td className="c-num">{fmt(advantage[k], 4)}</td>
            <td className="c-num" data-testid={`call-weight-${k}`}>
              {fmt(weight[k], 6)}
            </td>
            <td className="c-bar">
              <span
                className={weight[k] >= 0 ? 'hbar pos' : 'hbar neg'}
                style={{ width: `${max > 0 ? (Math.abs(weight[k]) / max) * 100 : 0}%` }}
              />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
});
