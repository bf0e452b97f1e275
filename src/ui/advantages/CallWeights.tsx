import { memo, useMemo } from 'react';
import { callWeights } from '../../core/pipeline/perCall';
import { signed, type WeightSign } from '../../core/pipeline/sign';
import type { Rollout } from '../../core/trace/types';
import type { BatchIndex } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import { fmt } from '../tokens/colorScale';

export const CallWeights = memo(function CallWeights(props: {
  rollout: Rollout;
  rolloutIndex: number;
  res: ComputeResult;
  index: BatchIndex;
  onSelectCall: (k: number) => void;
  sign: WeightSign;
}) {
  const { rollout, rolloutIndex, res, index, sign } = props;
  const { weight, advantage, tokens, observations, untrained } = useMemo(
    () =>
      callWeights(
        {
          batch: res.batch,
          trainPosition: res.trainPosition,
          responseMask: res.responseMask,
          weights: res.tokenWeight,
          advantages: res.tokenAdvantage,
        },
        rolloutIndex,
        rollout.calls.length,
        index.rowsOfRollout[rolloutIndex] ?? [],
      ),
    [res, index, rolloutIndex, rollout.calls.length],
  );
  let max = 0;
  for (const w of weight) max = Math.max(max, Math.abs(w));
  return (
    <table className="calltable" data-testid="call-weights" aria-label={`${sign.label} per call`}>
      <thead>
        <tr>
          <th>call</th>
          <th className="c-num">trainable</th>
          <th className="c-num">observation</th>
          <th
            className="c-num"
            title="tokens of rows the trainer drops (is_drop, trimming) or rejection sampling masks"
          >
            not trained
          </th>
          <th className="c-num">mean advantage</th>
          <th className="c-num" title={sign.help}>
            {sign.short}
          </th>
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
            <td className="c-num">{untrained[k]}</td>
            <td className="c-num">{fmt(advantage[k], 4)}</td>
            <td className="c-num" data-testid={`call-weight-${k}`}>
              {fmt(signed(weight[k], sign), 6)}
            </td>
            <td className="c-bar">
              <span
                className={weight[k] <= 0 ? 'hbar reinforced' : 'hbar suppressed'}
                style={{ width: `${max > 0 ? (Math.abs(weight[k]) / max) * 100 : 0}%` }}
              />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
});
