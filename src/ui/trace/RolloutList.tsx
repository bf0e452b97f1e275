import { memo, useMemo } from 'react';
import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import type { Rollout } from '../../core/trace/types';
import { VirtualList } from '../components/VirtualList';
import { fmt } from '../tokens/colorScale';

export interface RolloutListProps {
  rollouts: Rollout[];
  selected: number;
  onSelect: (index: number) => void;
  /** per rollout: training rows it produced and merge breaks (absent until computed) */
  rows?: number[];
  breaks?: MergeFailure[][];
  /** per rollout total effective gradient weight under the selected loss mode */
  weight?: Float64Array;
  testPrefix: string;
  /** longest id and group shown before the middle is cut (the full text is in the title) */
  idChars?: number;
  groupChars?: number;
}

const ROW_HEIGHT = 26;

/** Ids differ at their ends (…-s42-0, …-s42-1): cut the middle, not the end. */
export function middleEllipsis(s: string, max: number): string {
  if (s.length <= max) return s;
  const tail = Math.ceil((max - 1) / 2);
  return `${s.slice(0, max - 1 - tail)}…${s.slice(s.length - tail)}`;
}

/** Windowed table of rollouts; the selected one stays in view. */
export const RolloutList = memo(function RolloutList(props: RolloutListProps) {
  const { rollouts, selected, onSelect, rows, breaks, weight, testPrefix } = props;
  const anyFailed = useMemo(() => rollouts.some((r) => r.state === 'failed'), [rollouts]);
  const renderRow = (i: number) => {
    const r = rollouts[i];
    const b = breaks?.[i] ?? [];
    const merge = rows
      ? b.length
        ? `${rows[i]} rows · ${b.length} break${b.length > 1 ? 's' : ''}`
        : `${rows[i]} row${rows[i] === 1 ? '' : 's'}`
      : '';
    const failure = r.state === 'failed' ? (r.error ?? 'failed') : '';
    // a rollout with a part that could not be read (an unreadable event) must not look complete
    const gaps = r.incomplete ?? [];
    const gapText = gaps.map((g) => `${g.where}: ${g.message}`).join('\n');
    return (
      <div
        role="option"
        aria-selected={i === selected}
        tabIndex={-1}
        className={i === selected ? 'rrow selected' : 'rrow'}
        data-testid={`${testPrefix}-${r.rolloutId}`}
        onClick={() => onSelect(i)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') onSelect(i);
        }}
        title={failure || undefined}
      >
        <span
          className={gaps.length ? 'c-id warn' : 'c-id'}
          title={gaps.length ? `${r.rolloutId}\nincomplete:\n${gapText}` : r.rolloutId}
          data-incomplete={gaps.length ? gaps.length : undefined}
        >
          {gaps.length ? '⚠ ' : ''}
          {middleEllipsis(r.rolloutId, (props.idChars ?? 28) - (gaps.length ? 2 : 0))}
        </span>
        <span
          className="c-num"
          data-testid={weight ? `rollout-weight-${r.rolloutId}` : undefined}
          data-value={weight ? String(weight[i]) : undefined}
        >
          {weight ? fmt(weight[i], 6) : ''}
        </span>
        <span className="c-num">{r.finalReward === null ? '—' : fmt(r.finalReward, 3)}</span>
        <span className="c-grp" title={r.dataId}>
          {middleEllipsis(r.dataId, props.groupChars ?? 16)}
        </span>
        <span className="c-num">{r.calls.length}</span>
        <span className={b.length ? 'c-merge warn' : 'c-merge'}>{merge}</span>
        {anyFailed && <span className="c-fail bad">{failure}</span>}
      </div>
    );
  };
  return (
    <div className={anyFailed ? 'rolloutlist' : 'rolloutlist nofail'}>
      <div className="rrow rhead" aria-hidden="true">
        <span className="c-id">rollout</span>
        <span className="c-num">weight</span>
        <span className="c-num">reward</span>
        <span className="c-grp">group</span>
        <span className="c-num">calls</span>
        <span className="c-merge">merge</span>
        {anyFailed && <span className="c-fail">failure</span>}
      </div>
      <VirtualList
        count={rollouts.length}
        rowHeight={ROW_HEIGHT}
        renderRow={renderRow}
        scrollToIndex={selected}
        className="rlist"
        role="listbox"
        ariaLabel="Rollouts"
      />
    </div>
  );
});
