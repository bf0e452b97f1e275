import { memo, useId, useMemo, useState } from 'react';
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { fmt } from '../tokens/colorScale';

/** The charts a run opens with, by verl / Agent Lightning metric name, when the run reports them. */
export const DEFAULT_CHARTS = [
  'critic/score/mean',
  'actor/pg_loss',
  'actor/entropy',
  'actor/grad_norm',
  'critic/advantages/max',
  'response_length/mean',
  'training/rollout_probs_diff_mean',
  'timing_s/step',
];

/** One line chart per metric over training steps (raw values; a point per step that reported the key). */
export const MetricCharts = memo(function MetricCharts(props: {
  metrics: Map<number, Record<string, number>>;
}) {
  const [extra, setExtra] = useState<string[]>([]);
  const id = useId();
  const steps = useMemo(() => [...props.metrics.keys()].sort((a, b) => a - b), [props.metrics]);
  const keys = useMemo(() => {
    const all = new Set<string>();
    for (const d of props.metrics.values()) for (const k of Object.keys(d)) all.add(k);
    return [...all].sort();
  }, [props.metrics]);
  const shown = [...DEFAULT_CHARTS.filter((k) => keys.includes(k)), ...extra.filter((k) => keys.includes(k))];
  if (steps.length === 0)
    return <p className="muted">No metrics yet: the first arrives when the first step ends.</p>;
  return (
    <div>
      <div className="field">
        <label htmlFor={`${id}-add`}>Add a chart</label>
        <select
          id={`${id}-add`}
          value=""
          onChange={(e) => e.target.value && setExtra((x) => [...x, e.target.value])}
        >
          <option value="">{keys.length - shown.length} more metrics…</option>
          {keys
            .filter((k) => !shown.includes(k))
            .map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
        </select>
      </div>
      <div className="metric-grid">
        {shown.map((k) => {
          const data = steps
            .map((s) => ({ step: s, value: props.metrics.get(s)?.[k] }))
            .filter((d) => typeof d.value === 'number');
          return (
            <figure
              className="metric-chart"
              key={k}
              data-testid="metric-chart"
              data-metric={k}
              data-points={data.length}
            >
              <figcaption>{k}</figcaption>
              <div className="chart" style={{ height: 130 }}>
                <ResponsiveContainer width="100%" height="100%">
                  <LineChart data={data} margin={{ top: 4, right: 10, bottom: 0, left: 0 }}>
                    <CartesianGrid strokeDasharray="2 3" />
                    <XAxis
                      dataKey="step"
                      type="number"
                      domain={['dataMin', 'dataMax']}
                      allowDecimals={false}
                      fontSize={10}
                    />
                    <YAxis
                      fontSize={10}
                      width={56}
                      tickFormatter={(v: number) => fmt(v, 5)}
                      domain={['auto', 'auto']}
                    />
                    <Tooltip
                      isAnimationActive={false}
                      formatter={(v) => [fmt(Number(v), 6), k]}
                      labelFormatter={(s) => `step ${s}`}
                    />
                    <Line dataKey="value" stroke="#2d5bd7" dot={{ r: 2 }} isAnimationActive={false} />
                  </LineChart>
                </ResponsiveContainer>
              </div>
            </figure>
          );
        })}
      </div>
    </div>
  );
});
