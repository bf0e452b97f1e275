import { memo, useMemo } from 'react';
import { getLossMode } from '../../core/algos/lossModes';
import { signed, type WeightSign } from '../../core/pipeline/sign';
import type { Rollout } from '../../core/trace/types';
import { IdText, sharedPrefixLength } from '../components/IdText';
import { VirtualList } from '../components/VirtualList';
import type { ModeWeights } from '../lab/pipeline';
import { fmt } from '../tokens/colorScale';

/** A mode's name with break opportunities after its hyphens and underscores, so a narrow header wraps there. */
function breakable(name: string) {
  const parts = name.split(/(?<=[-_])/);
  return parts.map((p, i) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: parts of one fixed string
    <span key={i}>
      {p}
      {i < parts.length - 1 && <wbr />}
    </span>
  ));
}

/** Every loss mode side by side on the same batch: per-rollout total weight, one column per mode. */
export const ModesTable = memo(function ModesTable(props: {
  rollouts: Rollout[];
  modes: ModeWeights[];
  selectedMode: string;
  selected: number;
  onSelect: (i: number) => void;
  sign: WeightSign;
}) {
  const { rollouts, modes, selectedMode, sign } = props;
  const cols = `minmax(7rem, 1.3fr) repeat(${modes.length}, minmax(5rem, 1fr))`;
  const totals = modes.map((m) =>
    signed(
      m.rolloutWeight.reduce((s, v) => s + v, 0),
      sign,
    ),
  );
  const prefix = useMemo(() => sharedPrefixLength(rollouts.map((r) => r.rolloutId)), [rollouts]);
  return (
    <div className="modes" data-testid="modes-table">
      <div className="mrow mhead" style={{ gridTemplateColumns: cols }}>
        <span>rollout</span>
        {modes.map((m) => (
          <span
            key={m.name}
            className={m.name === selectedMode ? 'c-num mname sel' : 'c-num mname'}
            title={`${m.key}: ${m.name}\n${getLossMode(m.name).formula}`}
            data-testid="mode-head"
          >
            {breakable(m.name)}
          </span>
        ))}
      </div>
      <VirtualList
        count={rollouts.length}
        rowHeight={22}
        scrollToIndex={props.selected}
        className="mlist"
        renderRow={(i) => (
          <div
            className={i === props.selected ? 'mrow selected' : 'mrow'}
            style={{ gridTemplateColumns: cols }}
          >
            <button type="button" className="linkish c-id" onClick={() => props.onSelect(i)}>
              <IdText id={rollouts[i].rolloutId} prefix={prefix} />
            </button>
            {modes.map((m) => (
              <span
                key={m.name}
                className={m.name === selectedMode ? 'c-num sel' : 'c-num'}
                data-testid={`mode-${m.name}-${rollouts[i].rolloutId}`}
              >
                {fmt(signed(m.rolloutWeight[i], sign), 5)}
              </span>
            ))}
          </div>
        )}
      />
      <div className="mrow mfoot" style={{ gridTemplateColumns: cols }}>
        <span>Σ all rollouts</span>
        {modes.map((m, k) => (
          <span key={m.name} className={m.name === selectedMode ? 'c-num sel' : 'c-num'}>
            {fmt(totals[k], 5)}
          </span>
        ))}
      </div>
    </div>
  );
});
