import { memo, useMemo, useState } from 'react';
import { AddChartSelect, MetricChart, SmoothingSlider } from '../charts/MetricChart';

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

/** One chart per metric over training steps (the shared MetricChart: raw points, optional debiased EMA). */
export const MetricCharts = memo(function MetricCharts(props: {
  metrics: Map<number, Record<string, number>>;
}) {
  const [extra, setExtra] = useState<string[]>([]);
  const [smoothing, setSmoothing] = useState(0);
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
      <div className="chart-controls">
        <AddChartSelect
          metrics={keys.filter((k) => !shown.includes(k))}
          more={keys.length - shown.length}
          onAdd={(k) => setExtra((x) => [...x, k])}
        />
        <SmoothingSlider value={smoothing} onChange={setSmoothing} />
      </div>
      <div className="metric-grid">
        {shown.map((k) => (
          <MetricChart
            key={k}
            metric={k}
            smoothing={smoothing}
            series={[
              {
                id: 'run',
                name: 'run',
                color: '#2d5bd7',
                points: steps
                  .map((s) => ({ step: s, value: props.metrics.get(s)?.[k] }))
                  .filter((d) => typeof d.value === 'number'),
              },
            ]}
          />
        ))}
      </div>
    </div>
  );
});
