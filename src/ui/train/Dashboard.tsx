/**
 * The runs' metrics as charts (the shared MetricChart): one chart per metric of `DASHBOARD_CHARTS` that a
 * shown run reports (a preset's metrics first), every shown run overlaid in its colour, the smoothing slider (the URL's `tsmooth`), and
 * any other metric on request. A click on a point opens that step's kept batch in the Trace view.
 */
import { memo, useCallback, useDeferredValue, useMemo, useState } from 'react';
import { AddChartSelect, MetricChart, type MetricSeries, SmoothingSlider } from '../charts/MetricChart';
import { useView } from '../store';
import type { RunMeta } from './runData';
import { useTrain } from './trainStore';

/** The dashboard's charts in order, by metric name (verl's names where verl has one, ours under lab/). */
export const DASHBOARD_CHARTS: { metric: string | ((r: RunMeta) => string); title: string }[] = [
  { metric: 'critic/score/mean', title: 'reward (train)' },
  { metric: 'val/reward', title: 'reward (val)' },
  { metric: (r) => `val/pass@${r.config.lab.pass_k}`, title: 'pass@k (val)' },
  { metric: 'actor/pg_loss', title: 'policy loss' },
  { metric: 'actor/entropy', title: 'entropy' },
  { metric: 'actor/ppo_kl', title: 'KL (PPO)' },
  { metric: 'actor/pg_clipfrac', title: 'clip fraction' },
  { metric: 'actor/grad_norm', title: 'grad norm' },
  { metric: 'response_length/mean', title: 'response length' },
  { metric: 'lab/tool_calls_per_rollout', title: 'tool calls per rollout' },
  { metric: 'lab/merge_rate', title: 'merge rate' },
  { metric: 'lab/retokenization_mismatch_rate', title: 'retokenization mismatch' },
  { metric: 'lab/staleness/call_mean', title: 'staleness (per call)' },
  { metric: 'timing_s/gen', title: 'time: generation (s)' },
  { metric: 'timing_s/old_log_prob', title: 'time: old log-prob (s)' },
  { metric: 'timing_s/update_actor', title: 'time: update (s)' },
  { metric: 'timing_s/step', title: 'time: step (s)' },
];

export const Dashboard = memo(function Dashboard(props: {
  shown: RunMeta[];
  selected: RunMeta | null;
  /** metrics charted first (a preset's metrics), by key */
  lead?: readonly string[];
}) {
  // the charts follow deferred values: a new step re-renders them in the background, interruptibly, so the
  // page answers input while 17 charts redraw
  const metrics = useDeferredValue(useTrain((s) => s.metrics));
  // the charts depend on the runs' ids, names, colours and pass@k only (not on their status or step counters,
  // which change several times per step)
  const shownKey = props.shown
    .map((r) => `${r.id}\u0000${r.name}\u0000${r.color}\u0000${r.config.lab.pass_k}`)
    .join('\u0001');
  // biome-ignore lint/correctness/useExhaustiveDependencies: keyed by what the charts read of the runs
  const stableShown = useMemo(() => props.shown, [shownKey]);
  const shown = useDeferredValue(stableShown);
  const openStep = useTrain((s) => s.openStep);
  const smoothingNow = useView((s) => s.trainSmoothing);
  const smoothing = useDeferredValue(smoothingNow);
  const trainStep = useView((s) => s.trainStep);
  const set = useView((s) => s.set);
  const [extra, setExtra] = useState<string[]>([]);
  const { selected, lead } = props;
  const allKeys = useMemo(() => {
    const keys = new Set<string>();
    for (const r of shown)
      for (const m of metrics[r.id] ?? []) for (const k of Object.keys(m.data)) keys.add(k);
    return keys;
  }, [shown, metrics]);
  const charts = useMemo(() => {
    const out: { metric: string; title: string; series: MetricSeries[] }[] = [];
    if (shown.length === 0) return out;
    const series = (metric: string): MetricSeries[] =>
      shown.map((r) => ({
        id: r.id,
        name: r.name,
        color: r.color,
        points: (metrics[r.id] ?? []).map((m) => ({ step: m.step, value: m.data[metric] })),
      }));
    const titleOf = (metric: string) =>
      DASHBOARD_CHARTS.find((c) => (typeof c.metric === 'string' ? c.metric : c.metric(shown[0])) === metric)
        ?.title ?? metric;
    for (const metric of lead ?? [])
      if (allKeys.has(metric) && !out.some((c) => c.metric === metric))
        out.push({ metric, title: titleOf(metric), series: series(metric) });
    for (const c of DASHBOARD_CHARTS) {
      const metric = typeof c.metric === 'string' ? c.metric : c.metric(shown[0]);
      if (allKeys.has(metric) && !out.some((x) => x.metric === metric))
        out.push({ metric, title: c.title, series: series(metric) });
    }
    for (const k of extra)
      if (allKeys.has(k) && !out.some((c) => c.metric === k))
        out.push({ metric: k, title: k, series: series(k) });
    return out;
  }, [shown, metrics, extra, allKeys, lead]);
  const onPoint = useCallback((runId: string, step: number) => void openStep(runId, step), [openStep]);
  const selectedId = selected?.id ?? null;
  const selectedStep = useMemo(
    () => (selectedId && trainStep >= 0 ? { runId: selectedId, step: trainStep } : null),
    [selectedId, trainStep],
  );
  if (props.shown.length === 0) return <p className="muted">No run yet: set the config and press Start.</p>;
  const hasPoints = shown.some((r) => (metrics[r.id] ?? []).length > 0);
  return (
    <div className="dashboard" data-testid="train-dashboard">
      <div className="chart-controls">
        <SmoothingSlider value={smoothingNow} onChange={(w) => set({ trainSmoothing: w })} />
        <AddChartSelect
          metrics={[...allKeys].sort().filter((k) => !charts.some((c) => c.metric === k))}
          more={allKeys.size - charts.length}
          onAdd={(k) => setExtra((x) => [...x, k])}
        />
        <ul className="legend-runs" aria-label="Runs in the charts">
          {shown.map((r) => (
            <li key={r.id}>
              <span className="swatch" style={{ background: r.color }} /> {r.name}
            </li>
          ))}
        </ul>
      </div>
      {!hasPoints && (
        <p className="muted">
          No metrics yet: the first point arrives when validation before training or step 1 ends.
        </p>
      )}
      <p className="muted">Click a point to open that step's batch in the Trace and Advantages views.</p>
      <div className="metric-grid">
        {charts.map((c) => (
          <MetricChart
            key={c.metric}
            metric={c.metric}
            title={c.title}
            series={c.series}
            smoothing={smoothing}
            onPoint={onPoint}
            selectedStep={selectedStep}
          />
        ))}
      </div>
    </div>
  );
});
