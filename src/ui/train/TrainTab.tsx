/**
 * The Train tab: RL live in the page. The config form (from the loop's CONFIG_FIELDS, in the URL), the live
 * runs' progress and controls, the presets (TrainPresets.tsx), the runs list (persisted in OPFS; interrupted runs resume from their last
 * checkpoint), and three views of the selected and compared runs: the metric dashboard, the per-step
 * completions grouped by task with their history, and the step timeline.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { CONFIG_FIELDS, getPath, type TrainConfig } from '../../train/config';
import type { TrainEvent } from '../../train/events';
import { getPreset } from '../../train/presets';
import { fitLocalTimeline, localSimConfig } from '../../train/simFit';
import { Options } from '../components/Options';
import { LOCAL_SCENARIO, localRunOverrides } from '../sched/simView';
import { TRAIN_VIEWS, useView } from '../store';
import { fmt } from '../tokens/colorScale';
import { ConfigForm } from './ConfigForm';
import { completionGroups, type TaskGroup, taskHistory, taskIdOf } from './completions';
import { Dashboard } from './Dashboard';
import { explorerOptionsOf } from './explorerOptions';
import { formatFieldValue, formFromConfig } from './formConfig';
import type { RunMeta } from './runData';
import { PhaseLegend, TIMELINE_LABEL_W, TimelineView } from './Timeline';
import { PresetNotes, PresetsPanel } from './TrainPresets';
import { stepTimeline } from './timeline';
import { useTrain } from './trainStore';

const VIEW_LABEL: Record<(typeof TRAIN_VIEWS)[number], string> = {
  dashboard: 'Dashboard',
  completions: 'Completions',
  timeline: 'Timeline',
};

function mb(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}

function duration(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return '—';
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s - 60 * m)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** One training run's progress: engine, step, rollouts, throughput, time left. */
function LiveRunRow(props: { id: string }) {
  const live = useTrain((s) => s.live[props.id]);
  const run = useTrain((s) => s.runs.find((r) => r.id === props.id));
  if (!live || !run) return null;
  const p = live.progress;
  const total = run.config.trainer.total_training_steps;
  const stepsDone = run.lastStep;
  // overall: finished steps plus the current step's share of its rollouts (the counters run from the
  // worker's start, a resume included; the step's own rollouts are the last ones submitted)
  const perStep = run.config.data.train_batch_size * run.config.actor_rollout_ref.rollout.n;
  const inStep =
    p && p.step > stepsDone ? Math.min(1, Math.max(0, 1 - (p.rolloutsTotal - p.rolloutsDone) / perStep)) : 0;
  const overall = Math.min(1, (stepsDone + inStep) / total);
  return (
    <div className="train-live-run" data-testid="train-live-run" data-run={run.id} data-status={run.status}>
      <div className="train-live-head">
        <span className="swatch" style={{ background: run.color }} />
        <b>{run.name}</b>
        <span className="muted">
          {live.ready
            ? run.backend === 'webgpu'
              ? 'WebGPU'
              : 'CPU engine'
            : 'loading the engine and weights…'}
        </span>
        {run.note && (
          <span className="note" data-testid="train-engine-note">
            {run.note}
          </span>
        )}
      </div>
      <progress
        max={1}
        value={overall}
        aria-label={`Progress of ${run.name}`}
        data-testid="train-progress"
        data-step={stepsDone}
      />
      <div className="train-live-stats" data-testid="train-progress-text">
        <span>
          step <b data-testid="train-step">{stepsDone}</b> / {total}
        </span>
        <span>
          rollouts {p ? p.rolloutsDone : 0}
          {p ? ` / ${p.rolloutsTotal}` : ''}
        </span>
        <span>{p?.genTokensPerS ? `${fmt(p.genTokensPerS, 3)} tokens/s` : '— tokens/s'}</span>
        <span>time left {duration(p?.etaS ?? null)}</span>
        {live.firstPointMs !== null && (
          <span className="muted" data-testid="train-first-point" data-ms={Math.round(live.firstPointMs)}>
            first step in {fmt(live.firstPointMs / 1000, 3)} s
          </span>
        )}
      </div>
    </div>
  );
}

/**
 * The runs training now, each in its own trainer worker: for a seed group, how many train at once and why
 * (train/runSlots.ts), then one row per run; Pause, Resume and Stop act on all of them (Stop also on the queue).
 */
function LiveBar() {
  const ids = useTrain(useShallow((s) => Object.keys(s.live)));
  const runs = useTrain(useShallow((s) => s.runs.filter((r) => s.live[r.id])));
  const parallel = useTrain((s) => s.parallel);
  const queued = useTrain((s) => s.runs.filter((r) => r.status === 'queued').length);
  const { pause, resume, stop } = useTrain(
    useShallow((s) => ({ pause: s.pause, resume: s.resume, stop: s.stop })),
  );
  if (ids.length === 0) return null;
  const group = runs[0]?.preset?.group ?? null;
  const rule = group ? parallel[group] : undefined;
  const paused = runs.length > 0 && runs.every((r) => r.status === 'paused');
  return (
    <section
      className="train-live"
      aria-label="Live runs"
      data-testid="train-live"
      data-status={paused ? 'paused' : 'running'}
    >
      <div className="train-live-head">
        <span data-testid="train-parallel" data-live={ids.length} data-workers={rule?.workers ?? 1}>
          {rule
            ? `${ids.length} training now · ${rule.reason}`
            : 'one run trains at a time (a seed group trains several at once where the machine allows)'}
          {queued > 0 && <span className="muted"> · {queued} queued</span>}
        </span>
        <span className="spacer" />
        {paused ? (
          <button type="button" data-testid="train-resume" onClick={resume}>
            Resume
          </button>
        ) : (
          <button type="button" data-testid="train-pause" onClick={pause}>
            Pause
          </button>
        )}
        <button type="button" data-testid="train-stop" onClick={stop}>
          Stop
        </button>
      </div>
      {ids.map((id) => (
        <LiveRunRow key={id} id={id} />
      ))}
      {paused && <p className="note">paused (takes effect at the next phase boundary)</p>}
    </section>
  );
}

function RunsList(props: { selected: RunMeta | null }) {
  const { runs, liveKey, usage, budgetMb, setBudget, resumeRun, remove, exportRun, importRun } = useTrain(
    useShallow((s) => ({
      runs: s.runs,
      // the ids of the runs training, as one string (a fresh array per read would never compare equal)
      liveKey: Object.keys(s.live).join(' '),
      usage: s.usage,
      budgetMb: s.budgetMb,
      setBudget: s.setBudget,
      resumeRun: s.resumeRun,
      remove: s.remove,
      exportRun: s.exportRun,
      importRun: s.importRun,
    })),
  );
  const live = liveKey ? liveKey.split(' ') : [];
  const compare = useView((s) => s.trainCompare);
  const set = useView((s) => s.set);
  const setForm = useView((s) => s.setForm);
  const cmp = new Set(compare.split(',').filter(Boolean));
  const total = Object.values(usage).reduce((a, b) => a + b, 0);
  const fileRef = useRef<HTMLInputElement>(null);
  const [importError, setImportError] = useState<string | null>(null);
  const toggle = (id: string) => {
    const next = new Set(cmp);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    set({ trainCompare: [...next].join(',') });
  };
  return (
    <section className="train-runs" aria-label="Runs">
      <div className="train-runs-head">
        <h2>
          Runs <span className="muted">({runs.length})</span>
        </h2>
        <span className="muted" data-testid="train-storage">
          storage {mb(total)} of{' '}
          <input
            type="number"
            min={1}
            step={16}
            aria-label="Storage budget (MB)"
            className="budget"
            value={budgetMb}
            onChange={(e) => setBudget(Number(e.target.value))}
          />{' '}
          MB budget (older checkpoints, then the oldest kept traces, go first)
        </span>
        <button type="button" onClick={() => fileRef.current?.click()}>
          Import a run…
        </button>
        <input
          ref={fileRef}
          type="file"
          accept=".zip"
          hidden
          data-testid="train-import"
          onChange={async (e) => {
            const f = e.target.files?.[0];
            e.target.value = '';
            if (!f) return;
            try {
              setImportError(null);
              const id = await importRun(f, f.name);
              set({ trainRun: id });
            } catch (err) {
              setImportError((err as Error).message);
            }
          }}
        />
      </div>
      {importError && (
        <p className="error" role="alert">
          {importError}
        </p>
      )}
      {runs.length === 0 ? (
        <p className="muted">No runs yet.</p>
      ) : (
        <table className="runs-table">
          <thead>
            <tr>
              <th>overlay</th>
              <th>run</th>
              <th>status</th>
              <th>step</th>
              <th>engine</th>
              <th>size</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {[...runs].reverse().map((r) => (
              <tr
                key={r.id}
                data-testid="train-run-row"
                data-run={r.id}
                data-status={r.status}
                className={props.selected?.id === r.id ? 'selected' : undefined}
              >
                <td>
                  <input
                    type="checkbox"
                    aria-label={`overlay ${r.name}`}
                    checked={cmp.has(r.id) || props.selected?.id === r.id}
                    disabled={props.selected?.id === r.id}
                    onChange={() => toggle(r.id)}
                  />
                </td>
                <td>
                  <button
                    type="button"
                    className="linkish"
                    onClick={() => set({ trainRun: r.id, trainStep: -1 })}
                    title={r.id}
                  >
                    <span className="swatch" style={{ background: r.color }} /> {r.name}
                  </button>
                  {r.imported && (
                    <div className="muted small" data-testid={`run-imported-${r.id}`}>
                      imported from {r.imported.file}
                    </div>
                  )}
                  {r.parent && (
                    <div className="muted small">
                      duplicate of {r.parent.id} with {r.parent.change}
                    </div>
                  )}
                </td>
                <td>
                  <span className={`run-status ${r.status}`}>{r.status}</span>
                  {r.error && r.status !== 'done' && <div className="muted small">{r.error}</div>}
                </td>
                <td>
                  {r.lastStep} / {r.config.trainer.total_training_steps}
                  {r.checkpointStep !== null && (
                    <div className="muted small">checkpoint {r.checkpointStep}</div>
                  )}
                </td>
                <td>
                  {r.backend ?? '—'}
                  {r.note && (
                    <div className="muted small clamp" title={r.note}>
                      {r.note}
                    </div>
                  )}
                </td>
                <td>
                  {mb(usage[r.id] ?? 0)}
                  {r.pruned > 0 && <div className="muted small">{r.pruned} files pruned</div>}
                </td>
                <td className="run-actions">
                  {(r.status === 'interrupted' || r.status === 'stopped' || r.status === 'failed') &&
                    r.lastStep < r.config.trainer.total_training_steps && (
                      <button
                        type="button"
                        data-testid="train-run-resume"
                        disabled={live.length > 0}
                        onClick={() => void resumeRun(r.id)}
                        title={
                          r.checkpointStep !== null
                            ? `continue from the checkpoint of step ${r.checkpointStep}`
                            : 'no checkpoint yet: starts over'
                        }
                      >
                        {r.checkpointStep !== null ? `Resume from step ${r.checkpointStep}` : 'Restart'}
                      </button>
                    )}
                  <button
                    type="button"
                    onClick={() => setForm(formFromConfig(r.config))}
                    title="the form takes this run's config"
                  >
                    Config to form
                  </button>
                  <button
                    type="button"
                    onClick={async () => {
                      const blob = await exportRun(r.id);
                      const a = document.createElement('a');
                      a.href = URL.createObjectURL(blob);
                      a.download = `${r.id}.zip`;
                      a.click();
                      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
                    }}
                  >
                    Export
                  </button>
                  <button type="button" disabled={live.includes(r.id)} onClick={() => void remove(r.id)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** "Duplicate with one change": the selected run's config with one key changed, on the same seed. */
function DuplicateWithChange(props: { run: RunMeta }) {
  const duplicate = useTrain((s) => s.duplicate);
  const [path, setPath] = useState('algorithm.adv_estimator');
  const f = CONFIG_FIELDS.find((x) => x.path === path);
  const current = formatFieldValue(getPath(props.run.config, path));
  const [value, setValue] = useState<string>('');
  const [error, setError] = useState<string | null>(null);
  const choices = f?.kind === 'enum' ? (f.choices?.() ?? []) : f?.kind === 'bool' ? ['true', 'false'] : null;
  const v = value || (choices ? (choices.find((c) => c !== current) ?? current) : current);
  return (
    <div className="duplicate" data-testid="train-duplicate">
      <b>Duplicate with one change</b>
      <select
        aria-label="key to change"
        value={path}
        onChange={(e) => {
          setPath(e.target.value);
          setValue('');
        }}
      >
        {CONFIG_FIELDS.map((x) => (
          <option key={x.path} value={x.path}>
            {x.path}
          </option>
        ))}
      </select>
      <span className="muted">now {current} →</span>
      {choices ? (
        <select aria-label="new value" value={v} onChange={(e) => setValue(e.target.value)}>
          {f?.nullable && <option value="null">null</option>}
          <Options values={choices} />
        </select>
      ) : (
        <input aria-label="new value" value={v} onChange={(e) => setValue(e.target.value)} />
      )}
      <button
        type="button"
        disabled={v === current}
        onClick={async () => {
          try {
            setError(null);
            await duplicate(props.run.id, path, v);
          } catch (e) {
            setError((e as Error).message);
          }
        }}
      >
        Start the A/B run
      </button>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

function stepChoices(run: RunMeta, metrics: { step: number }[]): number[] {
  const steps = metrics.map((m) => m.step).filter((s) => s > 0);
  return steps.length ? steps : run.lastStep > 0 ? [run.lastStep] : [];
}

function StepSelect(props: { steps: number[]; value: number; onChange: (s: number) => void }) {
  return (
    <label className="field">
      step{' '}
      <select
        data-testid="train-step-select"
        value={props.value}
        onChange={(e) => props.onChange(Number(e.target.value))}
      >
        <Options values={props.steps} />
      </select>
    </label>
  );
}

function Completions(props: { run: RunMeta; step: number }) {
  const { batch, batchError, loadBatch, loadEvents, openStep } = useTrain(
    useShallow((s) => ({
      batch: s.batch,
      batchError: s.batchError,
      loadBatch: s.loadBatch,
      loadEvents: s.loadEvents,
      openStep: s.openStep,
    })),
  );
  const events = useTrain((s) => s.events[props.run.id]);
  const { run, step } = props;
  useEffect(() => {
    if (step > 0) void loadBatch(run.id, step);
  }, [run.id, step, loadBatch]);
  useEffect(() => {
    if (!events) void loadEvents(run.id);
  }, [run.id, events, loadEvents]);
  const groups = useMemo((): { groups: TaskGroup[]; error: string | null } => {
    if (!batch || batch.runId !== run.id || batch.step !== step) return { groups: [], error: null };
    try {
      return { groups: completionGroups(batch.rollouts, explorerOptionsOf(run.config)), error: null };
    } catch (e) {
      return { groups: [], error: (e as Error).message };
    }
  }, [batch, run, step]);
  const history = useMemo(() => taskHistory(events ?? []), [events]);
  if (batchError) return <p className="error">{batchError}</p>;
  if (groups.error) return <p className="error">{groups.error}</p>;
  if (groups.groups.length === 0) return <p className="muted">Loading step {step}…</p>;
  return (
    <div className="completions" data-testid="train-completions">
      <p className="muted">
        Step {step}: {groups.groups.length} tasks × {run.config.actor_rollout_ref.rollout.n} samples;
        advantages as the run's trainer computed them ({run.config.algorithm.adv_estimator}).{' '}
        <button type="button" className="linkish" onClick={() => void openStep(run.id, step)}>
          Open in Trace and Advantages
        </button>
      </p>
      {groups.groups.map((g) => {
        const h = history.get(taskIdOf(g.dataId)) ?? [];
        return (
          <section key={g.dataId} className="task-group" data-testid="task-group">
            <h3>
              {g.dataId}{' '}
              <span className="muted">mean reward {g.meanReward === null ? '—' : fmt(g.meanReward, 4)}</span>
            </h3>
            <p className="task-prompt">{g.prompt}</p>
            <div className="samples">
              {g.samples.map((s) => (
                <div key={s.rolloutId} className={`sample ${s.state}`} data-testid="task-sample">
                  <div className="sample-head">
                    <span>
                      reward <b>{s.reward === null ? '—' : fmt(s.reward, 4)}</b>
                    </span>
                    <span>
                      advantage{' '}
                      <b
                        className={s.advantage !== null && s.advantage > 0 ? 'pos' : s.advantage ? 'neg' : ''}
                      >
                        {s.advantage === null ? '—' : fmt(s.advantage, 4)}
                      </b>
                    </span>
                    <span className="muted">
                      {s.calls} call{s.calls === 1 ? '' : 's'} · {s.toolCalls} tool calls · {s.responseTokens}{' '}
                      tokens
                    </span>
                  </div>
                  <pre className="sample-text">
                    {s.error ? `failed: ${s.error}` : s.response || '(empty)'}
                  </pre>
                </div>
              ))}
            </div>
            {h.length > 0 && (
              <p className="task-history muted" data-testid="task-history">
                history:{' '}
                {h.map((e) => (
                  <span key={e.step} className={e.step === step ? 'current' : undefined}>
                    step {e.step}: {e.meanReward === null ? '—' : fmt(e.meanReward, 3)} ({e.rewards.length})
                  </span>
                ))}
              </p>
            )}
          </section>
        );
      })}
    </div>
  );
}

function Timelines(props: { runs: RunMeta[]; step: number }) {
  const events = useTrain((s) => s.events);
  const loadEvents = useTrain((s) => s.loadEvents);
  useEffect(() => {
    for (const r of props.runs) if (!events[r.id]) void loadEvents(r.id);
  }, [props.runs, events, loadEvents]);
  const width = 960;
  const tls = props.runs.map((r) => ({ run: r, t: stepTimeline(props.step, events[r.id] ?? []) }));
  const longest = Math.max(1, ...tls.map(({ t }) => (t ? t.t1 - t.t0 : 0)));
  const msScale = (width - TIMELINE_LABEL_W - 20) / longest;
  return (
    <div className="timelines" data-testid="train-timelines">
      <PhaseLegend />
      {tls.map(({ run, t }) => (
        <div key={run.id}>
          <TimelineView run={run} timeline={t} msScale={msScale} width={width} />
          <SimulateAtScale run={run} events={events[run.id] ?? []} />
        </div>
      ))}
    </div>
  );
}

/** Fits the scheduling simulator to the run's recorded timeline and opens the Scheduling tab on it at 8 GPUs. */
function SimulateAtScale(props: { run: RunMeta; events: TrainEvent[] }) {
  const set = useView((s) => s.set);
  const open = () => {
    try {
      const fit = fitLocalTimeline(props.events);
      const cfg = localSimConfig(fit, props.run.config, { concurrency: props.run.config.lab.workers });
      set({
        tab: 'scheduling',
        sim: LOCAL_SCENARIO,
        simMode: props.run.config.agentlightning.async_rollout.enabled ? 'agl_async' : 'sync',
        simSet: localRunOverrides(cfg),
      });
    } catch (e) {
      alert(`cannot fit this run's timeline: ${(e as Error).message}`);
    }
  };
  return (
    <button type="button" data-testid="simulate-at-scale" disabled={props.events.length === 0} onClick={open}>
      Simulate this run at scale
    </button>
  );
}

/** The preset's metric keys of a preset's run (none when its preset is not in the registry). */
function presetMetricsOf(run: RunMeta): readonly string[] {
  try {
    return run.preset ? getPreset(run.preset.slug).metrics : [];
  } catch {
    return [];
  }
}

export function TrainTab() {
  const { runs, loaded, refresh, start, live, metrics, error, batchError } = useTrain(
    useShallow((s) => ({
      runs: s.runs,
      loaded: s.loaded,
      refresh: s.refresh,
      start: s.start,
      live: Object.keys(s.live)[0] ?? null,
      metrics: s.metrics,
      error: s.error,
      batchError: s.batchError,
    })),
  );
  const trainRun = useView((s) => s.trainRun);
  const compare = useView((s) => s.trainCompare);
  const trainView = useView((s) => s.trainView);
  const trainStep = useView((s) => s.trainStep);
  const set = useView((s) => s.set);
  const [startError, setStartError] = useState<string | null>(null);
  const onStart = useCallback(
    async (config: TrainConfig) => {
      try {
        setStartError(null);
        const id = await start(config);
        set({ trainRun: id, trainStep: -1 });
      } catch (e) {
        setStartError((e as Error).message);
      }
    },
    [start, set],
  );
  useEffect(() => {
    if (!loaded) void refresh();
  }, [loaded, refresh]);
  const selected =
    runs.find((r) => r.id === trainRun) ?? runs.find((r) => r.id === live) ?? runs.at(-1) ?? null;
  const shown = useMemo(() => {
    const ids = new Set(compare.split(',').filter(Boolean));
    const out = runs.filter((r) => ids.has(r.id) && r.id !== selected?.id);
    return selected ? [selected, ...out] : out;
  }, [runs, compare, selected]);
  const steps = selected ? stepChoices(selected, metrics[selected.id] ?? []) : [];
  const step = steps.includes(trainStep) ? trainStep : (steps.at(-1) ?? 0);
  return (
    <div className="train-layout" data-testid="train-tab">
      <ConfigForm busy={live !== null} onStart={onStart} />
      <div className="train-main">
        {(startError || error || (trainView === 'dashboard' && batchError)) && (
          <p className="error" role="alert" data-testid="train-error">
            {startError ?? error ?? batchError}
          </p>
        )}
        <LiveBar />
        <PresetsPanel />
        <RunsList selected={selected} />
        {selected && <DuplicateWithChange run={selected} />}
        <div className="toolbar">
          <fieldset className="segmented" aria-label="Train view">
            {TRAIN_VIEWS.map((v) => (
              <button
                key={v}
                type="button"
                className={trainView === v ? 'on' : undefined}
                aria-pressed={trainView === v}
                data-testid={`train-view-${v}`}
                onClick={() => set({ trainView: v })}
              >
                {VIEW_LABEL[v]}
              </button>
            ))}
          </fieldset>
          {trainView !== 'dashboard' && selected && steps.length > 0 && (
            <StepSelect steps={steps} value={step} onChange={(s) => set({ trainStep: s })} />
          )}
        </div>
        {trainView === 'dashboard' &&
          (selected?.preset ? (
            <div className="preset-dashboard">
              <Dashboard shown={shown} selected={selected} lead={presetMetricsOf(selected)} />
              <PresetNotes run={selected} />
            </div>
          ) : (
            <Dashboard shown={shown} selected={selected} />
          ))}
        {trainView === 'completions' &&
          (selected && step > 0 ? (
            <Completions run={selected} step={step} />
          ) : (
            <p className="muted">No finished step yet.</p>
          ))}
        {trainView === 'timeline' &&
          (selected && step > 0 ? (
            <Timelines runs={shown} step={step} />
          ) : (
            <p className="muted">No finished step yet.</p>
          ))}
      </div>
    </div>
  );
}
