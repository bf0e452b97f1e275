/**
 * One metric over training steps, for one run or several overlaid (the Train tab's dashboard and the Remote
 * tab's run view): each run's raw values as a thin line with a point per step, always drawn, and, with a
 * smoothing weight > 0, its debiased EMA (ema.ts) as a bold line in the same colour, on the value axis of axis.ts
 * (true minus signs, a constant series flat in the middle). Points are buttons when
 * `onPoint` is given (the step's batch opens from them, by click, Enter or Space): one tab stop per chart (the
 * selected step, else the first series' last point), the arrow keys, Home and End move it (pointNav.ts), and the
 * focused point's run, step and value show in the caption. With `bands` (a group of runs that differ only in their
 * seed, seedBands.ts) each band's mean is a bold line and its 95% interval across the seeds a shaded area (a
 * recharts range Area), the member runs' own lines faded beneath.
 */
import { memo, useId, useMemo, useRef } from 'react';
import {
  Area,
  CartesianGrid,
  ComposedChart,
  Line,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import { Options } from '../components/Options';
import { fmt } from '../tokens/colorScale';
import { valueAxis } from './axis';
import { debiasedEma } from './ema';
import { initialPoint, nextPoint, type PointRef } from './pointNav';
import type { BandPoint, SeedBand } from './seedBands';

export interface MetricSeries {
  /** the run's id (keys the lines; given back to onPoint) */
  id: string;
  name: string;
  color: string;
  points: { step: number; value: number | null | undefined }[];
}

const NO_BANDS: readonly SeedBand[] = [];

type Row = Record<string, number | null | [number, number]> & { step: number };

const rawKey = (i: number) => `r${i}`;
const emaKey = (i: number) => `s${i}`;
const meanKey = (i: number) => `m${i}`;
const bandKey = (i: number) => `b${i}`;

/**
 * Rows by step with each series' raw value and smoothed value (null where a series has none), and each band's
 * mean and [lo, hi] interval.
 */
export function chartRows(series: MetricSeries[], smoothing: number, bands: readonly SeedBand[] = []): Row[] {
  const bySteps = new Map<number, Row>();
  series.forEach((s, i) => {
    const pts = [...s.points].sort((a, b) => a.step - b.step);
    const smooth = debiasedEma(
      pts.map((p) => p.value),
      smoothing,
    );
    pts.forEach((p, j) => {
      const row = bySteps.get(p.step) ?? ({ step: p.step } as Row);
      const v = p.value;
      row[rawKey(i)] = typeof v === 'number' && Number.isFinite(v) ? v : null;
      row[emaKey(i)] = smooth[j];
      bySteps.set(p.step, row);
    });
  });
  bands.forEach((b, i) => {
    for (const p of b.points) {
      const row = bySteps.get(p.step) ?? ({ step: p.step } as Row);
      row[meanKey(i)] = p.mean;
      row[bandKey(i)] = [p.lo, p.hi];
      bySteps.set(p.step, row);
    }
  });
  return [...bySteps.values()].sort((a, b) => a.step - b.step);
}

interface DotProps {
  cx?: number;
  cy?: number;
  value?: number | null;
  payload?: Row;
}

export const MetricChart = memo(function MetricChart(props: {
  metric: string;
  title?: string;
  series: MetricSeries[];
  smoothing: number;
  height?: number;
  onPoint?: (runId: string, step: number) => void;
  /** the step shown elsewhere (marked with a ring) */
  selectedStep?: { runId: string; step: number } | null;
  /** seed groups drawn as mean ± 95% interval over their member series */
  bands?: readonly SeedBand[];
}) {
  const { series, smoothing, onPoint, metric, selectedStep } = props;
  const bands = props.bands ?? NO_BANDS;
  const rows = useMemo(() => chartRows(series, smoothing, bands), [series, smoothing, bands]);
  const axis = useMemo(
    () =>
      valueAxis(
        rows.flatMap((r) =>
          Object.entries(r)
            .filter(([k]) => k !== 'step')
            .flatMap(([, v]) => (Array.isArray(v) ? v : [v])),
        ),
      ),
    [rows],
  );
  const bandPoint = useMemo(
    () => bands.map((b) => new Map<number, BandPoint>(b.points.map((p) => [p.step, p]))),
    [bands],
  );
  // the keyboard: one tab stop per chart (the selected step, else the first series' last), arrows move it
  const seriesSteps = useMemo(
    () => series.map((_, i) => rows.filter((r) => typeof r[rawKey(i)] === 'number').map((r) => r.step)),
    [series, rows],
  );
  // focus moves and the caption's readout are done on the DOM, not through React state: a re-render of the chart
  // redraws its points (recharts), which would take the focus away from the point being moved to
  const selectedIndex = selectedStep ? series.findIndex((s) => s.id === selectedStep.runId) : -1;
  const tabStop = initialPoint(
    seriesSteps,
    selectedStep && selectedIndex >= 0 ? { series: selectedIndex, step: selectedStep.step } : null,
  );
  const figureRef = useRef<HTMLElement>(null);
  const readoutRef = useRef<HTMLOutputElement>(null);
  const pointEl = (p: PointRef) =>
    figureRef.current?.querySelector<SVGElement>(
      `[data-testid=chart-point][data-series="${p.series}"][data-step="${p.step}"]`,
    ) ?? null;
  /** the focused point becomes the chart's one tab stop and its value shows in the caption */
  const showFocus = (el: Element, text: string) => {
    for (const other of figureRef.current?.querySelectorAll('[data-testid=chart-point][tabindex="0"]') ?? [])
      if (other !== el) other.setAttribute('tabindex', '-1');
    el.setAttribute('tabindex', '0');
    const out = readoutRef.current;
    if (out) {
      out.textContent = text;
      out.hidden = false;
    }
  };
  const hideReadout = () => {
    if (readoutRef.current) readoutRef.current.hidden = true;
  };
  const titleId = useId();
  const points = series.reduce(
    (n, s) => n + s.points.filter((p) => typeof p.value === 'number' && Number.isFinite(p.value)).length,
    0,
  );
  const names = new Map(series.map((s, i) => [rawKey(i), s.name]));
  for (const [i, s] of series.entries()) names.set(emaKey(i), `${s.name} (smoothed)`);
  for (const [i, b] of bands.entries()) {
    names.set(meanKey(i), `${b.name} (mean of ${b.members.length} seeds)`);
    names.set(bandKey(i), `${b.name} (95% interval)`);
  }
  const faded = bands.length > 0;
  return (
    <figure
      ref={figureRef}
      className="metric-chart"
      data-testid="metric-chart"
      data-metric={metric}
      data-points={points}
      data-y-domain={axis ? axis.domain.join(' ') : undefined}
      data-bands={bands.length}
      aria-labelledby={titleId}
    >
      <figcaption id={titleId} title={metric}>
        {props.title ?? metric}
        <output ref={readoutRef} className="chart-readout" data-testid="chart-readout" hidden />
      </figcaption>
      <div className="chart" style={{ height: props.height ?? 130 }}>
        <ResponsiveContainer width="100%" height="100%">
          <ComposedChart data={rows} margin={{ top: 4, right: 10, bottom: 0, left: 0 }}>
            <CartesianGrid strokeDasharray="2 3" />
            <XAxis
              dataKey="step"
              type="number"
              domain={['dataMin', 'dataMax']}
              allowDecimals={false}
              fontSize={10}
            />
            {axis ? (
              <YAxis
                fontSize={10}
                width={axis.width}
                type="number"
                domain={axis.domain}
                ticks={axis.ticks}
                interval={0}
                allowDataOverflow
                tickFormatter={(v: number) => axis.labels[axis.ticks.indexOf(v)] ?? fmt(v, 5)}
              />
            ) : (
              <YAxis fontSize={10} width={40} />
            )}
            <Tooltip
              isAnimationActive={false}
              formatter={(v, key) => [
                Array.isArray(v) ? v.map((x) => fmt(Number(x), 6)).join(' – ') : fmt(Number(v), 6),
                names.get(String(key)) ?? String(key),
              ]}
              labelFormatter={(s) => `step ${s}`}
            />
            {bands.map((b, i) => (
              <Area
                key={`band-${b.id}`}
                dataKey={bandKey(i)}
                stroke="none"
                fill={b.color}
                fillOpacity={0.2}
                connectNulls
                isAnimationActive={false}
                activeDot={false}
                dot={(d: { payload?: Row }) => {
                  const step = d.payload?.step ?? 0;
                  const p = bandPoint[i].get(step);
                  if (!p) return <g key={`${b.id}-${step}`} />;
                  return (
                    <g
                      key={`${b.id}-${step}`}
                      data-testid="chart-band-point"
                      data-band={b.id}
                      data-step={step}
                      data-mean={p.mean}
                      data-lo={p.lo}
                      data-hi={p.hi}
                      data-n={p.n}
                    />
                  );
                }}
              />
            ))}
            {bands.map((b, i) => summaryLine(`mean-${b.id}`, meanKey(i), b.color, 2.5))}
            {series.map((s, i) => (
              <Line
                key={`raw-${s.id}`}
                dataKey={rawKey(i)}
                stroke={s.color}
                strokeWidth={1}
                strokeOpacity={faded ? 0.25 : smoothing > 0 ? 0.4 : 1}
                connectNulls
                isAnimationActive={false}
                activeDot={false}
                dot={(d: DotProps) => {
                  const step = d.payload?.step ?? 0;
                  const key = `${s.id}-${step}`;
                  if (d.value === null || d.value === undefined || d.cx === undefined || d.cy === undefined)
                    return <g key={key} />;
                  const selected = selectedStep?.runId === s.id && selectedStep.step === step;
                  const common = {
                    cx: d.cx,
                    cy: d.cy,
                    r: selected ? 4.5 : 3,
                    fill: selected ? '#fff' : s.color,
                    stroke: s.color,
                    strokeWidth: selected ? 2 : 1,
                    'data-testid': 'chart-point',
                    'data-run': s.id,
                    'data-series': i,
                    'data-step': step,
                    'data-value': d.value,
                  };
                  if (!onPoint) return <circle key={key} className="chart-point" {...common} />;
                  const open = () => onPoint(s.id, step);
                  const here = { series: i, step };
                  const value = d.value;
                  return (
                    // biome-ignore lint/a11y/useSemanticElements: a point of an SVG chart cannot be a <button>
                    <circle
                      key={key}
                      className="chart-point clickable"
                      {...common}
                      role="button"
                      tabIndex={tabStop?.series === i && tabStop.step === step ? 0 : -1}
                      aria-label={`${s.name}, step ${step}: ${fmt(d.value, 6)}; open its batch`}
                      onClick={open}
                      onFocus={(e) => showFocus(e.currentTarget, `${s.name}, step ${step}: ${fmt(value, 6)}`)}
                      onBlur={hideReadout}
                      onKeyDown={(e) => {
                        if (e.key === 'Enter' || e.key === ' ') {
                          e.preventDefault();
                          open();
                          return;
                        }
                        const next = nextPoint(seriesSteps, here, e.key);
                        if (!next) return;
                        e.preventDefault();
                        pointEl(next)?.focus();
                      }}
                    />
                  );
                }}
              />
            ))}
            {smoothing > 0 && series.map((s, i) => summaryLine(`ema-${s.id}`, emaKey(i), s.color, 2))}
          </ComposedChart>
        </ResponsiveContainer>
      </div>
    </figure>
  );
});

/** A line without points (a seed band's mean, a run's EMA), drawn across missing steps. */
function summaryLine(key: string, dataKey: string, color: string, width: number) {
  return (
    <Line
      key={key}
      dataKey={dataKey}
      stroke={color}
      strokeWidth={width}
      dot={false}
      activeDot={false}
      connectNulls
      isAnimationActive={false}
    />
  );
}

/** The smoothing weight slider (0 = raw only; the raw line stays drawn at any weight). */
export function SmoothingSlider(props: { value: number; onChange: (w: number) => void }) {
  const id = useId();
  return (
    <div className="field smoothing">
      <label htmlFor={id}>Smoothing (debiased EMA)</label>
      <input
        id={id}
        type="range"
        min={0}
        max={0.99}
        step={0.01}
        value={props.value}
        data-testid="smoothing"
        onChange={(e) => props.onChange(Number(e.target.value))}
      />
      <output htmlFor={id}>{props.value.toFixed(2)}</output>
    </div>
  );
}

/** The "Add a chart" select: the metrics not charted yet (`more`: how many the empty option counts). */
export function AddChartSelect(props: { metrics: string[]; more: number; onAdd: (metric: string) => void }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>Add a chart</label>
      <select id={id} value="" onChange={(e) => e.target.value && props.onAdd(e.target.value)}>
        <option value="">{props.more} more metrics…</option>
        <Options values={props.metrics} />
      </select>
    </div>
  );
}
