/**
 * One step of a run drawn to time (timeline.ts): the trainer's phases on one lane, the step's rollouts on
 * worker lanes with their calls (coloured by the policy version that served them, stale ones outlined in
 * red), the 429s the paused proxy served as ticks, and validation rollouts on their own lanes. Several runs
 * (the compared ones) are drawn one under the other for the same step, each on its own time axis scaled alike.
 */
import { fmt } from '../tokens/colorScale';
import type { RunMeta } from './runData';
import type { StepTimeline } from './timeline';

const PHASE_COLORS: Record<string, string> = {
  gen: '#9bb7f0',
  pause: '#f2c14e',
  vocab_mismatch: '#90a4ae',
  old_log_prob: '#c792ea',
  ref: '#b39ddb',
  adv: '#80cbc4',
  update_actor: '#e57373',
  update_weights: '#ff8a65',
  resume: '#f2c14e',
  validate: '#a5d6a7',
  save_checkpoint: '#bdbdbd',
  other: '#cfd8dc',
};

const VERSION_COLORS = ['#2d5bd7', '#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e'];

const LABEL_W = 92;
const LANE_H = 16;

export function TimelineView(props: {
  run: Pick<RunMeta, 'id' | 'name' | 'color'>;
  timeline: StepTimeline | null;
  msScale: number;
  width: number;
  /** the rollout lanes' label (a real run: worker slots; a simulated step: the rollout pool's slots) */
  laneLabel?: (i: number) => string;
}) {
  const { run, timeline: t, msScale, width } = props;
  const laneLabel = props.laneLabel ?? ((i: number) => `worker slot ${i + 1}`);
  if (!t)
    return (
      <p className="muted" data-testid="timeline-empty">
        {run.name}: no events for this step (not run yet, or from before the run was resumed).
      </p>
    );
  const x = (ms: number) => LABEL_W + (ms - t.t0) * msScale;
  const lanes: { label: string; kind: 'trainer' | 'train' | 'val'; bars: StepTimeline['lanes'][number] }[] = [
    ...t.lanes.map((bars, i) => ({ label: laneLabel(i), kind: 'train' as const, bars })),
    ...t.valLanes.map((bars, i) => ({ label: `val slot ${i + 1}`, kind: 'val' as const, bars })),
  ];
  const height = (lanes.length + 1) * (LANE_H + 4) + 24;
  const spanMs = t.t1 - t.t0;
  return (
    <figure className="timeline" data-testid="timeline" data-run={run.id} data-step={t.step}>
      <figcaption>
        <span className="swatch" style={{ background: run.color }} /> {run.name} · step {t.step} ·{' '}
        {fmt(spanMs / 1000, 3)} s · {t.stats.rollouts} rollouts, {t.stats.calls} calls
        {t.stats.staleCalls > 0 && <>, {t.stats.staleCalls} stale</>}
        {t.stats.rejections > 0 && <>, {t.stats.rejections} 429s while paused</>}
        {t.stats.carriedOver > 0 && <>, {t.stats.carriedOver} carried over</>}
      </figcaption>
      <svg
        width={width}
        height={height}
        role="img"
        aria-label={`Timeline of step ${t.step} of ${run.name}: trainer phases and worker lanes drawn to time`}
      >
        <text x={4} y={LANE_H - 3} fontSize={10}>
          trainer
        </text>
        {t.phases.map((p) => (
          <rect
            key={`${p.phase}-${p.startMs}`}
            x={x(p.startMs)}
            y={2}
            width={Math.max(1, (p.endMs - p.startMs) * msScale)}
            height={LANE_H - 2}
            fill={PHASE_COLORS[p.phase] ?? '#ccc'}
            data-testid="timeline-phase"
            data-phase={p.phase}
          >
            <title>
              {p.phase}: {fmt((p.endMs - p.startMs) / 1000, 4)} s
            </title>
          </rect>
        ))}
        {lanes.map((lane, li) => {
          const y = (li + 1) * (LANE_H + 4) + 2;
          return (
            <g key={lane.label}>
              <text x={4} y={y + LANE_H - 4} fontSize={10} fill={lane.kind === 'val' ? '#2e7d32' : undefined}>
                {lane.label}
              </text>
              {lane.bars.map((b) => (
                <g key={b.rolloutId} data-testid="timeline-rollout">
                  {b.startMs > b.submittedMs && (
                    <line
                      x1={x(b.submittedMs)}
                      x2={x(b.startMs)}
                      y1={y + 1}
                      y2={y + 1}
                      stroke="#b0b4bd"
                      strokeDasharray="2 2"
                    >
                      <title>
                        {b.rolloutId} waited {fmt((b.startMs - b.submittedMs) / 1000, 3)} s for a worker
                      </title>
                    </line>
                  )}
                  <rect
                    x={x(b.startMs)}
                    y={y}
                    width={Math.max(1, (b.endMs - b.startMs) * msScale)}
                    height={LANE_H - 2}
                    fill={b.state === 'failed' ? '#fde0e0' : '#eef0f4'}
                    stroke="#c8ccd4"
                  >
                    <title>
                      {b.rolloutId} ({b.dataId}) · reward {b.reward === null ? 'none' : fmt(b.reward, 4)} ·{' '}
                      {fmt((b.endMs - b.startMs) / 1000, 4)} s{b.error ? ` · ${b.error}` : ''}
                    </title>
                  </rect>
                  {b.calls.map((c) => (
                    <rect
                      key={`${c.startMs}-${c.endMs}`}
                      x={x(c.startMs)}
                      y={y + 2}
                      width={Math.max(1, (c.endMs - c.startMs) * msScale)}
                      height={LANE_H - 6}
                      fill={VERSION_COLORS[(c.policyVersion ?? 0) % VERSION_COLORS.length]}
                      stroke={c.stale ? '#d32f2f' : 'none'}
                      strokeWidth={c.stale ? 1.5 : 0}
                      data-testid="timeline-call"
                      data-stale={c.stale ? 'true' : 'false'}
                    >
                      <title>
                        call · policy v{c.policyVersion ?? '?'}
                        {c.stale ? ' (stale)' : ''} · HTTP {c.httpStatus} · {c.responseTokens} tokens ·{' '}
                        {fmt((c.endMs - c.startMs) / 1000, 4)} s
                      </title>
                    </rect>
                  ))}
                  {b.rejections.map((at) => (
                    <line
                      key={at}
                      x1={x(at)}
                      x2={x(at)}
                      y1={y - 1}
                      y2={y + LANE_H}
                      stroke="#d32f2f"
                      strokeWidth={1}
                    >
                      <title>429 (proxy paused)</title>
                    </line>
                  ))}
                </g>
              ))}
            </g>
          );
        })}
        <text x={LABEL_W} y={height - 6} fontSize={10} fill="#666">
          0 s
        </text>
        <text x={x(t.t1)} y={height - 6} fontSize={10} fill="#666" textAnchor="end">
          {fmt(spanMs / 1000, 3)} s
        </text>
      </svg>
    </figure>
  );
}

export function PhaseLegend() {
  return (
    <ul className="legend-runs" aria-label="Phases">
      {Object.entries(PHASE_COLORS).map(([p, c]) => (
        <li key={p}>
          <span className="swatch" style={{ background: c }} /> {p}
        </li>
      ))}
      <li>
        <span className="swatch" style={{ background: VERSION_COLORS[0] }} />/
        <span className="swatch" style={{ background: VERSION_COLORS[1] }} /> calls by policy version
      </li>
      <li>
        <span className="swatch" style={{ border: '1.5px solid #d32f2f' }} /> stale call
      </li>
    </ul>
  );
}

export const TIMELINE_LABEL_W = LABEL_W;
