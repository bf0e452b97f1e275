/**
 * The Scheduling tab: the backend-scheduling simulator (core/sim/) on a named scenario or a local run's fit.
 * Scenario picker, sliders for the cluster and workload, the modes side by side (step time, utilisation per pool,
 * staleness, tokens/s, drops), the shown mode's traced step on the Timeline view's own component, and
 * histograms of staleness and per-step utilisation. Everything lives in the URL (`sim`, `smode`, `sset`).
 */
import { useEffect, useState } from 'react';
import { getSimValue, SCENARIOS } from '../../core/sim';
import { Options } from '../components/Options';
import { useView } from '../store';
import { fmt } from '../tokens/colorScale';
import { PhaseLegend, TIMELINE_LABEL_W, TimelineView } from '../train/Timeline';
import {
  formatSimSet,
  LOCAL_SCENARIO,
  parseSimSet,
  resultRow,
  type SchedulingRun,
  SIM_SLIDERS,
  type SimResponse,
  simStepTimeline,
} from './simView';

/** The one simulation worker of the page (sim.worker.ts) and the request whose answer the view waits for. */
let worker: Worker | null = null;
let lastId = 0;
let onAnswer: ((m: SimResponse) => void) | null = null;
function requestRun(scenario: string, set: string, answer: (m: SimResponse) => void): void {
  if (!worker) {
    worker = new Worker(new URL('./sim.worker.ts', import.meta.url), { type: 'module', name: 'sim' });
    worker.onmessage = (e: MessageEvent<SimResponse>) => {
      // an answer to an older request is left out: the view shows the newest inputs only
      if (e.data.id === lastId || e.data.id === -1) onAnswer?.(e.data);
    };
    worker.onerror = (e) => onAnswer?.({ id: lastId, error: e.message || 'the simulation worker failed' });
  }
  onAnswer = answer;
  worker.postMessage({ id: ++lastId, scenario, set });
}

const MODE_COLORS = ['#2d5bd7', '#d95f02', '#1b9e77', '#7570b3', '#e7298a', '#66a61e'];

function Bars(props: { label: string; values: number[]; fmtX: (i: number) => string; testid: string }) {
  const { values } = props;
  const max = Math.max(1, ...values);
  const w = 260;
  const h = 90;
  const bw = values.length ? w / values.length : w;
  return (
    <figure className="sim-hist" data-testid={props.testid}>
      <figcaption>{props.label}</figcaption>
      <svg width={w} height={h + 16} role="img" aria-label={props.label}>
        {values.map((v, i) => (
          <g key={props.fmtX(i)}>
            <rect
              x={i * bw + 1}
              y={h - (v / max) * h}
              width={Math.max(1, bw - 2)}
              height={(v / max) * h}
              fill="#6c8ed9"
            >
              <title>
                {props.fmtX(i)}: {fmt(v, 4)}
              </title>
            </rect>
            {values.length <= 12 && (
              <text x={i * bw + bw / 2} y={h + 12} fontSize={9} textAnchor="middle">
                {props.fmtX(i)}
              </text>
            )}
          </g>
        ))}
      </svg>
    </figure>
  );
}

/** The scenario select: there while the first answer is simulated too. */
function ScenarioPicker(props: { scenario: string }) {
  const set = useView((s) => s.set);
  return (
    <label>
      Scenario{' '}
      <select
        data-testid="sched-scenario"
        value={props.scenario}
        onChange={(e) => set({ sim: e.target.value, simSet: '', simMode: '' })}
      >
        {SCENARIOS.map((s) => (
          <option key={s.name} value={s.name}>
            {s.name}
          </option>
        ))}
        {props.scenario === LOCAL_SCENARIO && <option value={LOCAL_SCENARIO}>local run (fitted)</option>}
      </select>
    </label>
  );
}

export function SchedulingView() {
  const sim = useView((s) => s.sim);
  const simMode = useView((s) => s.simMode);
  const simSet = useView((s) => s.simSet);
  const set = useView((s) => s.set);
  const key = `${sim}\n${simSet}`;
  const [answer, setAnswer] = useState<{ key: string; run: SchedulingRun | null; error: string | null }>();
  useEffect(() => {
    requestRun(sim, simSet, (m) =>
      setAnswer({ key, run: 'run' in m ? m.run : null, error: 'error' in m ? m.error : null }),
    );
  }, [sim, simSet, key]);
  const busy = answer?.key !== key;
  if (!answer?.run)
    return (
      <section className="sched" aria-label="Scheduling" data-testid="sched" data-busy={busy}>
        <div className="sched-head">
          <ScenarioPicker scenario={sim} />
        </div>
        {answer?.error ? (
          <p className="note" role="alert" data-testid="sched-error">
            {answer.error}
          </p>
        ) : (
          <p className="muted">Simulating…</p>
        )}
      </section>
    );
  const run = answer.run;
  const shown = run.results.find((r) => r.summary.mode === simMode) ?? run.results[run.results.length - 1];
  const overrides = Object.fromEntries(
    parseSimSet(simSet).map((o) => [o.slice(0, o.indexOf('=')), o.slice(o.indexOf('=') + 1)]),
  );
  const setField = (key: string, value: string) =>
    set({ simSet: formatSimSet({ ...overrides, [key]: value }) });
  const tl = simStepTimeline(shown);
  const width = 960;
  const msScale = tl ? (width - TIMELINE_LABEL_W - 20) / Math.max(1, tl.timeline.t1 - tl.timeline.t0) : 1;
  const base = run.results[0].summary.total_s;
  const hist = shown.summary.staleness_hist;
  const util = shown.steps.map((s) => s.utilisation.pool);
  const bins = 10;
  const utilBins = new Array(bins).fill(0);
  for (const u of util) utilBins[Math.min(bins - 1, Math.floor(u * bins))]++;
  return (
    <section className="sched" aria-label="Scheduling" data-testid="sched" data-busy={busy}>
      <div className="sched-head">
        <ScenarioPicker scenario={run.scenario} />
        <label>
          Mode drawn{' '}
          <select
            data-testid="sched-mode"
            value={shown.summary.mode}
            onChange={(e) => set({ simMode: e.target.value })}
          >
            <Options values={run.modes} />
          </select>
        </label>
        {simSet && (
          <button type="button" onClick={() => set({ simSet: '' })}>
            Reset sliders
          </button>
        )}
      </div>
      <p className="muted">
        {run.title} · source: {run.source}
      </p>
      {run.error && (
        <p className="note" role="alert" data-testid="sched-error">
          {run.error}
        </p>
      )}
      <div className="sched-sliders">
        {SIM_SLIDERS.map((sl) => {
          const v = Number(getSimValue(shown.config, sl.key));
          return (
            <label key={sl.key} className="sched-slider">
              <span>
                {sl.label}: <b data-testid={`sched-value-${sl.key}`}>{fmt(v, 4)}</b>
              </span>
              <input
                type="range"
                min={sl.min}
                max={sl.max}
                step={sl.step}
                value={v}
                aria-label={sl.label}
                data-testid={`sched-slider-${sl.key}`}
                onChange={(e) => setField(sl.key, e.target.value)}
              />
            </label>
          );
        })}
      </div>
      <table className="sched-table" data-testid="sched-table">
        <thead>
          <tr>
            <th>mode</th>
            <th>s / step</th>
            <th>speed-up</th>
            <th>rollout util.</th>
            <th>trainer util.</th>
            <th>pool util.</th>
            <th>staleness (worst, mean)</th>
            <th>gen tokens/s</th>
            <th>dropped</th>
          </tr>
        </thead>
        <tbody>
          {run.results.map((r, i) => {
            const row = resultRow(r);
            return (
              <tr
                key={row.mode}
                data-testid="sched-row"
                data-mode={row.mode}
                data-step-s={row.step_s}
                data-pool-util={row.pool_util}
                aria-selected={row.mode === shown.summary.mode}
                className={row.mode === shown.summary.mode ? 'selected' : undefined}
              >
                <td>
                  <span className="swatch" style={{ background: MODE_COLORS[i % MODE_COLORS.length] }} />{' '}
                  <button type="button" className="link" onClick={() => set({ simMode: row.mode })}>
                    {row.mode}
                  </button>
                </td>
                <td>{fmt(row.step_s, 4)}</td>
                <td>{fmt(base / r.summary.total_s, 3)}×</td>
                <td>{fmt(100 * row.rollout_util, 3)}%</td>
                <td>{fmt(100 * row.trainer_util, 3)}%</td>
                <td>{fmt(100 * row.pool_util, 3)}%</td>
                <td>{fmt(row.staleness, 3)}</td>
                <td>{fmt(row.tokens_per_s, 4)}</td>
                <td>{row.dropped}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p data-testid="sched-shown" data-mode={shown.summary.mode} data-step-s={shown.summary.mean_step_s}>
        {shown.summary.mode}: {fmt(shown.summary.mean_step_s, 4)} s per step, pool utilisation{' '}
        {fmt(100 * shown.summary.utilisation.pool, 3)}%, {shown.steps.length} steps simulated
        {busy ? ' (simulating the new inputs…)' : ''}
      </p>
      <div className="sched-hists">
        <Bars
          label={`Staleness of trained trajectories (${shown.summary.mode}; versions)`}
          values={hist}
          fmtX={(i) => String(i)}
          testid="sched-staleness"
        />
        <Bars
          label={`Pool utilisation per step (${shown.summary.mode})`}
          values={utilBins}
          fmtX={(i) => `${(i * 100) / bins}%`}
          testid="sched-util"
        />
      </div>
      <PhaseLegend />
      {tl ? (
        <>
          <TimelineView
            run={{
              id: `sim-${shown.summary.mode}`,
              name: `simulated ${shown.summary.mode}`,
              color: '#2d5bd7',
            }}
            timeline={tl.timeline}
            msScale={msScale}
            width={width}
            laneLabel={(i) => `rollout slot ${i + 1}`}
          />
          {tl.hiddenTrajectories > 0 && (
            <p className="muted">{tl.hiddenTrajectories} more trajectories of the step are not drawn.</p>
          )}
        </>
      ) : (
        <p className="muted">No step traced.</p>
      )}
    </section>
  );
}
