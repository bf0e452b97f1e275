/**
 * The runs' metrics as charts (the shared MetricChart): one chart per metric of `DASHBOARD_CHARTS` that a
 * shown run reports (a preset's metrics first), every shown run overlaid in its colour, the smoothing slider (the URL's `tsmooth`), and
 * any other metric on request. A click on a point opens that step's kept batch in the Trace view. Runs of one
 * preset group that share a variant on several seeds are also drawn as that variant's mean ± 95% interval across
 * the seeds (seedBands.ts), their own lines faded.
 */
import { memo, useCallback, useDeferredValue, useMemo, useState } from 'react';
import { AddChartSelect, MetricChart, type MetricSeries, SmoothingSlider } from '../charts/MetricChart';
import { type SeedBand, seedBand } from '../charts/seedBands';
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
  { metric: 'lab/rollout_vocab_kl/mean', title: 'KL(rollout ‖ trainer), whole vocabulary' },
  { metric: 'lab/rollout_vocab_tv/mean', title: 'TV rollout vs trainer, whole vocabulary' },
  { metric: 'lab/staleness/call_mean', title: 'staleness (per call)' },
  { metric: 'timing_s/gen', title: 'time: generation (s)' },
  { metric: 'timing_s/old_log_prob', title: 'time: old log-prob (s)' },
  { metric: 'timing_s/update_actor', title: 'time: update (s)' },
  { metric: 'timing_s/step', title: 'time: step (s)' },
];

/** The shown runs' seed groups: runs of one preset group and variant, when some variant has ≥ 2 seeds. */
export function seedGroups(
  shown: readonly RunMeta[],
): { id: string; name: string; color: string; runs: RunMeta[] }[] {
  const groups = new Map<string, RunMeta[]>();
  for (const r of shown) {
    if (!r.preset) continue;
    const key = `${r.preset.group}:${r.preset.variant}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  if (![...groups.values()].some((g) => new Set(g.map((r) => r.config.lab.seed)).size > 1)) return [];
  return [...groups.entries()].map(([id, runs]) => {
    const seeds = runs.map((r) => r.config.lab.seed).sort((a, b) => a - b);
    const p = runs[0].preset as NonNullable<RunMeta['preset']>;
    return {
      id,
      name: `${p.slug} · ${p.variant} · ${seeds.length === 1 ? `seed ${seeds[0]}` : `seeds ${seeds.join(', ')}`}`,
      color: runs[0].color,
      runs,
    };
  });
}

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
    const out: { metric: string; title: string; series: MetricSeries[]; bands: SeedBand[] }[] = [];
    if (shown.length === 0) return out;
    const seriesOf = (r: RunMeta, metric: string): MetricSeries => ({
      id: r.id,
      name: r.name,
      color: r.color,
      points: (metrics[r.id] ?? []).map((m) => ({ step: m.step, value: m.data[metric] })),
    });
    const groups = seedGroups(shown);
    const series = (metric: string): MetricSeries[] => shown.map((r) => seriesOf(r, metric));
    const push = (metric: string, title: string) =>
      out.push({
        metric,
        title,
        series: series(metric),
        bands: groups.map((g) =>
          seedBand(
            g,
            g.runs.map((r) => seriesOf(r, metric)),
          ),
        ),
      });
    const titleOf = (metric: string) =>
      DASHBOARD_CHARTS.find((c) => (typeof c.metric === 'string' ? c.metric : c.metric(shown[0])) === metric)
        ?.title ?? metric;
    for (const metric of lead ?? [])
      if (allKeys.has(metric) && !out.some((c) => c.metric === metric)) push(metric, titleOf(metric));
    for (const c of DASHBOARD_CHARTS) {
      const metric = typeof c.metric === 'string' ? c.metric : c.metric(shown[0]);
      if (allKeys.has(metric) && !out.some((x) => x.metric === metric)) push(metric, c.title);
    }
    for (const k of extra) if (allKeys.has(k) && !out.some((c) => c.metric === k)) push(k, k);
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
            bands={c.bands}
            smoothing={smoothing}
            onPoint={onPoint}
            selectedStep={selectedStep}
          />
        ))}
      </div>
    </div>
  );
});
