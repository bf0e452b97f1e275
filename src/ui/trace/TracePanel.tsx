import { useCallback, useEffect, useMemo } from 'react';
import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import { NoTrace } from '../ImportBar';
import { isTypingTarget } from '../keyboard';
import { indexBatch } from '../lab/derive';
import { useLab } from '../lab/labStore';
import { TRACE_VIEWS, type TraceView, useView } from '../store';
import { Legend } from '../tokens/Legend';
import { COLOR_BY, COLOR_BY_LABEL, type ColorBy, scaleFor } from '../tokens/quantities';
import { CallView } from './CallView';
import { MergeView } from './MergeView';
import { RetokView } from './RetokView';
import { RolloutList } from './RolloutList';

const VIEW_LABEL: Record<TraceView, string> = { call: 'Call', retok: 'Retokenization', merge: 'Merge' };

/** Index of the rollout a view names (by id), or 0. */
export function useSelectedRollout(): number {
  const id = useView((s) => s.rollout);
  const trace = useLab((s) => s.trace);
  return useMemo(() => {
    if (!trace) return -1;
    const i = trace.rollouts.findIndex((r) => r.rolloutId === id);
    return i >= 0 ? i : trace.rollouts.length ? 0 : -1;
  }, [trace, id]);
}

/** Per rollout: its merge breaks and its number of training rows, from the current result. */
export function useRolloutRows() {
  const trace = useLab((s) => s.trace);
  const batch = useLab((s) => s.result?.batch);
  const failures = useLab((s) => s.result?.mergeFailures);
  return useMemo(() => {
    if (!trace || !batch || !failures) return null;
    const index = indexBatch(batch, trace.rollouts.length);
    const breaks: MergeFailure[][] = trace.rollouts.map(() => []);
    for (const f of failures) breaks[f.rolloutIndex]?.push(f);
    return { index, breaks, rows: index.rowsOfRollout.map((r) => r.length) };
  }, [trace, batch, failures]);
}

export function ColorControl(props: { available: Set<ColorBy> }) {
  const colorBy = useView((s) => s.colorBy);
  const set = useView((s) => s.set);
  return (
    <span className="field">
      <label htmlFor="color-by">Color tokens by</label>
      <select id="color-by" value={colorBy} onChange={(e) => set({ colorBy: e.target.value as ColorBy })}>
        {COLOR_BY.map((k) => (
          <option key={k} value={k} disabled={!props.available.has(k)}>
            {COLOR_BY_LABEL[k]}
            {props.available.has(k) ? '' : ' (not in this trace)'}
          </option>
        ))}
      </select>
    </span>
  );
}

export function TracePanel() {
  const trace = useLab((s) => s.trace);
  const res = useLab((s) => s.result);
  const tokenText = useLab((s) => s.tokenText);
  const computeError = useLab((s) => s.computeError);
  const { call, colorBy, traceView, set } = useView();
  const selected = useSelectedRollout();
  const derived = useRolloutRows();
  const rollouts = trace?.rollouts ?? [];
  const rollout = selected >= 0 ? rollouts[selected] : undefined;
  const nCalls = rollout?.calls.length ?? 0;
  const callIndex = Math.min(Math.max(0, call), Math.max(0, nCalls - 1));
  const select = useCallback(
    (i: number) => set({ rollout: rollouts[i].rolloutId, call: 0 }),
    [rollouts, set],
  );

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey || e.ctrlKey || e.metaKey || isTypingTarget(e.target)) return;
      const st = useView.getState();
      const tr = useLab.getState().trace;
      if (!tr || tr.rollouts.length === 0) return;
      const cur = Math.max(
        0,
        tr.rollouts.findIndex((r) => r.rolloutId === st.rollout),
      );
      const n = tr.rollouts[cur].calls.length;
      const c = Math.min(Math.max(0, st.call), Math.max(0, n - 1));
      if (e.key === 'ArrowRight') st.set({ call: Math.min(n - 1, c + 1) });
      else if (e.key === 'ArrowLeft') st.set({ call: Math.max(0, c - 1) });
      else if (e.key === 'j' || e.key === 'k') {
        const next = Math.min(tr.rollouts.length - 1, Math.max(0, cur + (e.key === 'j' ? 1 : -1)));
        st.set({ rollout: tr.rollouts[next].rolloutId, call: 0 });
      } else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const scale = useMemo(() => {
    const values =
      colorBy === 'weight'
        ? res?.tokenWeight
        : colorBy === 'advantage'
          ? res?.tokenAdvantage
          : colorBy === 'logprob'
            ? (res?.batch.responseLogProbs ?? undefined)
            : undefined;
    return scaleFor(colorBy, values, res?.batch.mask);
  }, [res, colorBy]);
  const available = useMemo(() => {
    const s = new Set<ColorBy>();
    if (res) {
      s.add('weight').add('advantage').add('mask');
      if (res.batch.responseLogProbs) s.add('logprob');
    } else if (rollouts.some((r) => r.calls.some((c) => c.responseLogProbs))) s.add('logprob');
    return s;
  }, [res, rollouts]);

  if (!trace) return <NoTrace />;
  return (
    <div className="trace-layout">
      <aside className="side">
        <h2>
          Rollouts <span className="muted">({rollouts.length})</span>
        </h2>
        <RolloutList
          rollouts={rollouts}
          selected={selected}
          onSelect={select}
          rows={derived?.rows}
          breaks={derived?.breaks}
          weight={res?.rolloutWeight}
          testPrefix="rollout-row"
        />
        <p className="muted keys">
          <kbd>j</kbd>/<kbd>k</kbd> rollout · <kbd>←</kbd>/<kbd>→</kbd> call
        </p>
      </aside>
      {rollout ? (
        <section className="detail" aria-label="Selected rollout">
          <div className="toolbar">
            <h2 data-testid="rollout-title">
              {rollout.rolloutId}
              <span className="muted">
                {' '}
                group {rollout.dataId} · reward {rollout.finalReward ?? '—'} · {rollout.state}
              </span>
            </h2>
            <div className="stepper">
              <button
                type="button"
                aria-label="Previous call"
                disabled={callIndex === 0}
                onClick={() => set({ call: callIndex - 1 })}
              >
                ←
              </button>
              <span data-testid="call-position">
                call {nCalls ? callIndex + 1 : 0} / {nCalls}
              </span>
              <button
                type="button"
                aria-label="Next call"
                disabled={callIndex >= nCalls - 1}
                onClick={() => set({ call: callIndex + 1 })}
              >
                →
              </button>
            </div>
            <fieldset className="segmented">
              <legend className="sr-only">View</legend>
              {TRACE_VIEWS.map((v) => (
                <label key={v} className={v === traceView ? 'on' : undefined}>
                  <input
                    type="radio"
                    name="trace-view"
                    checked={v === traceView}
                    onChange={() => set({ traceView: v })}
                  />
                  {VIEW_LABEL[v]}
                </label>
              ))}
            </fieldset>
            <ColorControl available={available} />
            <Legend
              label={COLOR_BY_LABEL[colorBy]}
              scale={scale}
              hint={colorBy === 'weight' ? 'blue raises the token’s log-prob, red lowers it' : undefined}
            />
          </div>
          {computeError && (
            <p className="bad" role="alert">
              Could not build training rows: {computeError}
            </p>
          )}
          {rollout.state === 'failed' && (
            <p className="bad">Rollout failed: {rollout.error ?? 'no reason given'}</p>
          )}
          {nCalls === 0 ? (
            <p className="muted">This rollout recorded no calls.</p>
          ) : traceView === 'merge' ? (
            res && derived ? (
              <MergeView
                rollout={rollout}
                rolloutIndex={selected}
                res={res}
                index={derived.index}
                breaks={derived.breaks[selected]}
                tokenText={tokenText}
                colorBy={colorBy}
                scale={scale}
                selectedCall={callIndex}
                onSelectCall={(k) => set({ call: k, traceView: 'call' })}
              />
            ) : (
              <p className="muted">Building training rows…</p>
            )
          ) : traceView === 'retok' ? (
            <RetokView rollout={selected} call={callIndex} />
          ) : (
            <CallView
              rollout={rollout}
              rolloutIndex={selected}
              callIndex={callIndex}
              res={res}
              index={derived?.index ?? null}
              tokenText={tokenText}
              colorBy={colorBy}
              scale={scale}
            />
          )}
        </section>
      ) : (
        <p className="muted">The trace has no rollouts.</p>
      )}
    </div>
  );
}
