import { memo, useMemo } from 'react';
import type { WeightSign } from '../../core/pipeline/sign';
import { IdText, sharedPrefixLength } from '../components/IdText';
import { VirtualList } from '../components/VirtualList';
import { WeightStrip } from '../components/WeightStrip';
import type { BatchIndex } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import type { ColorScale } from '../tokens/colorScale';

const ROW = 22;
const STATUS = ['', 'is_drop', 'trimmed'];

/**
 * The weight along every training row's response tokens: one strip per row (the chips' colour scale; observation
 * tokens shaded, call starts ticked), in the batch's order, the selected rollout's rows marked. Windowed, so a batch
 * of thousands of rows scrolls.
 */
export const RowStrips = memo(function RowStrips(props: {
  res: ComputeResult;
  index: BatchIndex;
  selectedRollout: number;
  scale: ColorScale;
  sign: WeightSign;
  onSelect: (rollout: number) => void;
}) {
  const { res, index, selectedRollout, scale, sign } = props;
  const { batch } = res;
  const prefix = useMemo(() => sharedPrefixLength(batch.rolloutIds), [batch.rolloutIds]);
  const firstSelected = index.rowsOfRollout[selectedRollout]?.[0] ?? -1;
  return (
    <section
      className="rowstrips"
      aria-label={`${sign.label} along each of the ${batch.nRows} training rows`}
      data-testid="row-strips"
      style={{ height: Math.min(330, Math.max(1, batch.nRows) * ROW + 2) }}
    >
      <VirtualList
        count={batch.nRows}
        rowHeight={ROW}
        scrollToIndex={firstSelected}
        className="srows"
        renderRow={(r) => {
          const a = batch.offsets[r];
          const e = batch.offsets[r + 1];
          const first = batch.firstCall[r];
          const last = first + batch.nCalls[r] - 1;
          const starts: number[] = [];
          for (let p = a + 1; p < e; p++)
            if (batch.tokenCall[p] !== batch.tokenCall[p - 1]) starts.push(p - a);
          const ro = batch.rowRollout[r];
          const status = STATUS[res.rowStatus[r]];
          return (
            // biome-ignore lint/a11y/useKeyWithClickEvents: the rollout list above is the keyboard way to select
            // biome-ignore lint/a11y/noStaticElementInteractions: a click is a shortcut to the rollout list's selection
            <div
              className={ro === selectedRollout ? 'srow selected' : 'srow'}
              onClick={() => props.onSelect(ro)}
            >
              <span
                className="slabel"
                title={`row ${r}: ${batch.rolloutIds[r]}, calls ${first + 1}–${last + 1}`}
              >
                <span className="muted">{r}</span>
                <IdText id={batch.rolloutIds[r]} prefix={prefix} />
                <span className="muted">
                  c{first + 1}
                  {last > first ? `–${last + 1}` : ''}
                </span>
              </span>
              <WeightStrip
                values={res.tokenWeight.subarray(a, e)}
                factor={sign.factor}
                mask={batch.mask.subarray(a, e)}
                scale={scale}
                callStarts={starts}
                label={`row ${r} (${batch.rolloutIds[r]}): ${e - a} response tokens${status ? `, ${status}` : ''}`}
              />
              <span className="muted sstatus">{status || `${e - a}`}</span>
            </div>
          );
        }}
      />
    </section>
  );
});
