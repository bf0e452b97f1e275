import { memo, useMemo } from 'react';
import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import type { NoRowsEntry } from '../../core/pipeline/noRows';
import { signed, type WeightSign } from '../../core/pipeline/sign';
import type { Rollout } from '../../core/trace/types';
import { IdText, sharedPrefixLength } from '../components/IdText';
import { VirtualList } from '../components/VirtualList';
import { fmt } from '../tokens/colorScale';

export interface RolloutListProps {
  rollouts: Rollout[];
  selected: number;
  onSelect: (index: number) => void;
  /** per rollout: training rows it produced and merge breaks (absent until computed) */
  rows?: number[];
  breaks?: MergeFailure[][];
  /** per rollout: why it gives no rows or no gradient (or has no reward), when it does (absent until computed) */
  noRows?: (NoRowsEntry | undefined)[];
  /** per rollout total effective gradient weight ∂L/∂logπ under the selected loss mode (core's sign) */
  weight?: Float64Array;
  /** the same under the options shown before the last change: adds a Δ column */
  previousWeight?: Float64Array;
  /** what the Δ column compares with (its tooltip) */
  deltaTitle?: string;
  sign: WeightSign;
  testPrefix: string;
}

const ROW_HEIGHT = 26;

function mergeText(rows: number, breaks: number): string {
  const r = `${rows} row${rows === 1 ? '' : 's'}`;
  return breaks ? `${r} · ${breaks} break${breaks > 1 ? 's' : ''}` : r;
}

/** Windowed table of rollouts; the selected one stays in view. */
export const RolloutList = memo(function RolloutList(props: RolloutListProps) {
  const { rollouts, selected, onSelect, rows, breaks, weight, previousWeight, sign, testPrefix } = props;
  const anyFailed = useMemo(() => rollouts.some((r) => r.state === 'failed'), [rollouts]);
  const idPrefix = useMemo(() => sharedPrefixLength(rollouts.map((r) => r.rolloutId)), [rollouts]);
  const groupPrefix = useMemo(
    () => sharedPrefixLength([...new Set(rollouts.map((r) => r.dataId))]),
    [rollouts],
  );
  const delta = Boolean(weight && previousWeight);
  const cls = ['rolloutlist', anyFailed ? '' : 'nofail', delta ? 'delta' : ''].filter(Boolean).join(' ');
  const renderRow = (i: number) => {
    const r = rollouts[i];
    const b = breaks?.[i] ?? [];
    const nr = props.noRows?.[i];
    const why = nr?.reasons.map((x) => `${x.rule} at ${x.where}: ${x.detail}`).join('\n') ?? '';
    // the column stays short (it must fit at 1024 px): the rule is its colour, its tooltip and data-rule
    const merge = rows ? mergeText(rows[i], b.length) : '';
    const failure = r.state === 'failed' ? (r.error ?? 'failed') : '';
    // a rollout with a part that could not be read (an unreadable event) must not look complete
    const gaps = r.incomplete ?? [];
    const gapText = gaps.map((g) => `${g.where}: ${g.message}`).join('\n');
    const w = weight ? signed(weight[i], sign) : 0;
    const d = weight && previousWeight ? w - signed(previousWeight[i], sign) : 0;
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
          {gaps.length ? <span aria-hidden="true">⚠ </span> : null}
          <IdText id={r.rolloutId} prefix={idPrefix} />
        </span>
        <span
          className="c-num"
          data-testid={weight ? `rollout-weight-${r.rolloutId}` : undefined}
          data-value={weight ? String(w) : undefined}
        >
          {weight ? fmt(w, 6) : ''}
        </span>
        {delta && (
          <span
            className={d === 0 ? 'c-num c-delta muted' : d > 0 ? 'c-num c-delta up' : 'c-num c-delta down'}
            data-testid={`rollout-delta-${r.rolloutId}`}
          >
            {d === 0 ? '·' : `${d > 0 ? '+' : ''}${fmt(d, 3)}`}
          </span>
        )}
        <span className="c-num">{r.finalReward === null ? '—' : fmt(r.finalReward, 3)}</span>
        <span className="c-grp">
          <IdText id={r.dataId} prefix={groupPrefix} />
        </span>
        <span className="c-num">{r.calls.length}</span>
        <span
          className={b.length || nr?.noGradient ? 'c-merge warn' : 'c-merge'}
          title={why ? `${merge}\n${nr?.noGradient ? 'no gradient: ' : ''}${why}` : merge || undefined}
          data-testid={nr ? `no-rows-${r.rolloutId}` : undefined}
          data-rule={nr ? nr.reasons.map((x) => x.rule).join(' ') : undefined}
        >
          {merge}
        </span>
        {anyFailed && (
          <span className="c-fail bad" title={failure || undefined}>
            {failure}
          </span>
        )}
      </div>
    );
  };
  return (
    <div className={cls}>
      <div className="rrow rhead" aria-hidden="true">
        <span className="c-id">rollout</span>
        <span className="c-num" title={`${sign.label}: Σ over the rollout's tokens (${sign.help})`}>
          {sign.short}
        </span>
        {delta && (
          <span className="c-num" title={props.deltaTitle}>
            Δ
          </span>
        )}
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
