import { memo } from 'react';
import type { Rollout } from '../../core/trace/types';
import { VirtualList } from '../components/VirtualList';
import type { ModeWeights } from '../lab/pipeline';
import { fmt } from '../tokens/colorScale';

/** Every loss mode side by side on the same batch: per-rollout total weight, one column per mode. */
export const ModesTable = memo(function ModesTable(props: {
  rollouts: Rollout[];
  modes: ModeWeights[];
  selectedMode: string;
  selected: number;
  onSelect: (i: number) => void;
}) {
  const { rollouts, modes, selectedMode } = props;
  const cols = `minmax(9rem, 1.4fr) repeat(${modes.length}, minmax(6.5rem, 1fr))`;
  const totals = modes.map((m) => m.rolloutWeight.reduce((s, v) => s + v, 0));
  return (
    <div className="modes" data-testid="modes-table">
      <div className="mrow mhead" style={{ gridTemplateColumns: cols }}>
        <span>rollout</span>
        {modes.map((m) => (
          <span key={m.name} className={m.name === selectedMode ? 'c-num sel' : 'c-num'}>
            {m.name}
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
              {rollouts[i].rolloutId}
            </button>
            {modes.map((m) => (
              <span
                key={m.name}
                className={m.name === selectedMode ? 'c-num sel' : 'c-num'}
                data-testid={`mode-${m.name}-${rollouts[i].rolloutId}`}
              >
                {fmt(m.rolloutWeight[i], 5)}
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
