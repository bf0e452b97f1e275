import { memo, useMemo, useState } from 'react';
import { signed, signedSides, type WeightSign } from '../../core/pipeline/sign';
import { IdText, sharedPrefixLength } from '../components/IdText';
import { VirtualList } from '../components/VirtualList';
import { fmt } from '../tokens/colorScale';

export const REINFORCED = '#2166ac';
export const SUPPRESSED = '#b2182b';

const ROW = 20;
const SORTS = {
  batch: 'batch order',
  net: 'net weight',
  abs: 'largest |weight|',
} as const;
type Sort = keyof typeof SORTS;

/**
 * Effective weight per group (data id), split by sign: the reinforced tokens' sum and the suppressed tokens' sum
 * as a diverging bar around 0, the net as a tick, the net before the last change of options as a hollow ghost tick.
 * One row per group in a scrolled, windowed list, so hundreds of groups stay readable; sortable.
 */
export const GroupChart = memo(function GroupChart(props: {
  keys: string[];
  /** core's ∂L/∂logπ sums per group */
  net: Float64Array;
  negative: Float64Array;
  positive: Float64Array;
  /** the previous result's net per group key */
  ghost?: Map<string, number> | null;
  /** groups whose rollouts all got one reward (why their weights are 0) */
  equal?: Set<string>;
  sign: WeightSign;
}) {
  const { keys, sign } = props;
  const [sort, setSort] = useState<Sort>('batch');
  const rows = useMemo(
    () =>
      keys.map((k, i) => ({
        key: k,
        net: signed(props.net[i], sign),
        ...signedSides(props.negative[i], props.positive[i], sign),
        ghost: props.ghost?.has(k) ? signed(props.ghost.get(k) ?? 0, sign) : null,
      })),
    [keys, props.net, props.negative, props.positive, props.ghost, sign],
  );
  const order = useMemo(() => {
    const idx = rows.map((_, i) => i);
    if (sort === 'net') idx.sort((a, b) => rows[b].net - rows[a].net);
    else if (sort === 'abs')
      idx.sort((a, b) => rows[b].positive - rows[b].negative - (rows[a].positive - rows[a].negative));
    return idx;
  }, [rows, sort]);
  const max = useMemo(() => {
    let m = 0;
    for (const r of rows)
      m = Math.max(m, -r.negative, r.positive, Math.abs(r.net), r.ghost === null ? 0 : Math.abs(r.ghost));
    return m || 1;
  }, [rows]);
  const prefix = useMemo(() => sharedPrefixLength(keys), [keys]);
  const negColor = sign.reinforced === 'negative' ? REINFORCED : SUPPRESSED;
  const posColor = sign.reinforced === 'positive' ? REINFORCED : SUPPRESSED;
  const pct = (v: number) => `${(Math.abs(v) / max) * 50}%`;
  const at = (v: number) => `${50 + (v / max) * 50}%`;
  const label = `${sign.label} per group: ${keys.length} groups, reinforced side ${
    sign.reinforced === 'positive' ? 'right' : 'left'
  } (blue), suppressed (red); sorted by ${SORTS[sort]}`;
  return (
    <div className="groupchart">
      <div className="chart-tools">
        <span className="field">
          <label htmlFor="group-sort">Sort</label>
          <select id="group-sort" value={sort} onChange={(e) => setSort(e.target.value as Sort)}>
            {(Object.keys(SORTS) as Sort[]).map((s) => (
              <option key={s} value={s}>
                {SORTS[s]}
              </option>
            ))}
          </select>
        </span>
        <span className="muted axis-ends">
          {fmt(-max, 2)} · 0 · {fmt(max, 2)}
        </span>
      </div>
      <div
        role="img"
        aria-label={label}
        data-testid="group-chart"
        data-groups={keys.length}
        style={{ height: Math.min(320, Math.max(1, keys.length) * ROW + 2) }}
      >
        <VirtualList
          count={order.length}
          rowHeight={ROW}
          className="grows"
          testId="group-rows"
          renderRow={(j) => {
            const r = rows[order[j]];
            const title = `${r.key}: net ${fmt(r.net, 6)} · negative ${fmt(r.negative, 6)} · positive ${fmt(
              r.positive,
              6,
            )}${r.ghost !== null ? ` · before the change ${fmt(r.ghost, 6)}` : ''}${
              props.equal?.has(r.key) ? ' · every rollout got the same reward' : ''
            }`;
            return (
              <div className="grow" title={title} data-testid="group-row" data-group={r.key}>
                <span className="glabel">
                  <IdText id={r.key} prefix={prefix} />
                </span>
                <span className="muted equal-col">
                  {props.equal?.has(r.key) && (
                    <span className="equal" title="every rollout of the group got the same reward">
                      =
                    </span>
                  )}
                </span>
                <span className="gbar">
                  <span className="gzero" />
                  {r.negative < 0 && (
                    <span
                      className="gside"
                      style={{ right: '50%', width: pct(r.negative), background: negColor }}
                    />
                  )}
                  {r.positive > 0 && (
                    <span
                      className="gside"
                      style={{ left: '50%', width: pct(r.positive), background: posColor }}
                    />
                  )}
                  <span className="gnet" style={{ left: at(r.net) }} />
                  {r.ghost !== null && r.ghost !== r.net && (
                    <span className="gghost" style={{ left: at(r.ghost) }} data-testid="group-ghost" />
                  )}
                </span>
                <span className="c-num gval">{fmt(r.net, 3)}</span>
              </div>
            );
          }}
        />
      </div>
    </div>
  );
});
