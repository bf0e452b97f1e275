import { useCallback, useEffect, useMemo, useRef } from 'react';
import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import type { NoRowsEntry } from '../../core/pipeline/noRows';
import { WEIGHT_SIGNS, type WeightSign, type WeightSignName } from '../../core/pipeline/sign';
import type { Rollout } from '../../core/trace/types';
import { StackDiff } from '../advantages/StackDiff';
import { ExportButtons } from '../components/ExportButtons';
import { NoTrace, PreviousTraceNote, StaleNote } from '../ImportBar';
import { isTextField } from '../keyboard';
import { callPositions, indexBatch, logProbGap, type TrainerValues, trainerValuesOf } from '../lab/derive';
import { tokensCsv, tokensJson } from '../lab/exportView';
import { useLab } from '../lab/labStore';
import { resolveOptions, useActiveRunSettings } from '../lab/options';
import type { ComputeResult } from '../lab/pipeline';
import { equalRewardReason, groupRewards, isStale, useWeightSign } from '../lab/present';
import { SettingsInSight } from '../SettingsInSight';
import { TRACE_VIEWS, type TraceView, useView } from '../store';
import { Legend } from '../tokens/Legend';
import { COLOR_BY, type ColorBy, colorByLabel, scaleFor, shownColorBy } from '../tokens/quantities';
import { CallView } from './CallView';
import { CorrectionMaskPanel } from './CorrectionMaskPanel';
import { MergeView } from './MergeView';
import { RetokView } from './RetokView';
import { RolloutList } from './RolloutList';
import { batchTokenView, callTokenView, withVocabMismatch } from './tokenView';

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

/** The sign convention of every weight on the page (a URL field): the push −∂L/∂logπ or ∂L/∂logπ. */
export function SignControl(props: { id: string }) {
  const sign = useView((s) => s.sign);
  const set = useView((s) => s.set);
  const current = WEIGHT_SIGNS.find((s) => s.name === sign);
  return (
    <span className="field">
      <label htmlFor={props.id}>Weights as</label>
      <select
        id={props.id}
        value={sign}
        title={current?.help}
        onChange={(e) => set({ sign: e.target.value as WeightSignName })}
      >
        {WEIGHT_SIGNS.map((s) => (
          <option key={s.name} value={s.name} title={s.help}>
            {s.label}
          </option>
        ))}
      </select>
    </span>
  );
}

export function ColorControl(props: { available: Set<ColorBy>; sign: WeightSign }) {
  const colorBy = useView((s) => s.colorBy);
  const set = useView((s) => s.set);
  return (
    <span className="field">
      <label htmlFor="color-by">Color tokens by</label>
      <select id="color-by" value={colorBy} onChange={(e) => set({ colorBy: e.target.value as ColorBy })}>
        {COLOR_BY.map((k) => (
          <option key={k} value={k} disabled={!props.available.has(k)}>
            {colorByLabel(k, props.sign)}
            {props.available.has(k) ? '' : ' (not in this trace)'}
          </option>
        ))}
      </select>
    </span>
  );
}

/** Names what the two ends of a signed colouring mean (blue is always the reinforced side). */
function legendEnds(colorBy: ColorBy, sign: WeightSign): [string, string] | undefined {
  if (colorBy === 'weight')
    return sign.reinforced === 'positive' ? ['suppressed', 'reinforced'] : ['reinforced', 'suppressed'];
  if (colorBy === 'advantage') return ['below baseline', 'above'];
  if (colorBy === 'gap') return ['engine lower', 'engine higher'];
  return undefined;
}

export function TracePanel() {
  const trace = useLab((s) => s.trace);
  const res = useLab((s) => s.result);
  const tokenText = useLab((s) => s.tokenText);
  const computeError = useLab((s) => s.computeError);
  const stale = useLab((s) => isStale(s.requestedOptions, s.resultOptions));
  const source = useLab((s) => s.summary?.name ?? '');
  const failedSource = useLab((s) => (s.importError ? s.failedSource : null));
  const { call, colorBy: askedColorBy, traceView, set } = useView();
  const view = useView();
  const sign = useWeightSign();
  const selected = useSelectedRollout();
  const derived = useRolloutRows();
  const rollouts = trace?.rollouts ?? [];
  const rollout = selected >= 0 ? rollouts[selected] : undefined;
  const nCalls = rollout?.calls.length ?? 0;
  const callIndex = Math.min(Math.max(0, call), Math.max(0, nCalls - 1));
  const panel = useRef<HTMLDivElement>(null);
  const select = useCallback(
    (i: number) => set({ rollout: rollouts[i].rolloutId, call: 0 }),
    [rollouts, set],
  );

  // ←/→ step calls wherever the focus is in the trace view (buttons and selects included; the token chips use
  // them to move between tokens); j/k step rollouts unless the focus is in a text field.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || isTextField(e.target)) return;
      const st = useView.getState();
      const tr = useLab.getState().trace;
      if (!tr || tr.rollouts.length === 0) return;
      const target = e.target as Node | null;
      const inView =
        target === document.body || target === document.documentElement || panel.current?.contains(target);
      const cur = Math.max(
        0,
        tr.rollouts.findIndex((r) => r.rolloutId === st.rollout),
      );
      const n = tr.rollouts[cur].calls.length;
      const c = Math.min(Math.max(0, st.call), Math.max(0, n - 1));
      if ((e.key === 'ArrowRight' || e.key === 'ArrowLeft') && inView)
        st.set({ call: e.key === 'ArrowRight' ? Math.min(n - 1, c + 1) : Math.max(0, c - 1) });
      else if (e.key === 'j' || e.key === 'k') {
        const next = Math.min(tr.rollouts.length - 1, Math.max(0, cur + (e.key === 'j' ? 1 : -1)));
        st.set({ rollout: tr.rollouts[next].rolloutId, call: 0 });
      } else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  // the trainer's log-probs and entropies at the batch positions (a kept training trace has them per call)
  const trainer = useMemo(() => (res ? trainerValuesOf(res.batch, rollouts) : null), [res, rollouts]);
  const available = useMemo(() => {
    const s = new Set<ColorBy>();
    if (res) {
      s.add('weight').add('advantage').add('mask');
      if (res.batch.responseLogProbs) s.add('logprob');
    } else if (rollouts.some((r) => r.calls.some((c) => c.responseLogProbs))) s.add('logprob');
    // the trainer's side of a kept training trace: its log-probs and entropies, and the engine − trainer gap where both exist
    const calls = rollouts.flatMap((r) => r.calls);
    if (calls.some((c) => c.trainerLogProbs)) s.add('trainerLogprob');
    if (calls.some((c) => c.trainerEntropy)) s.add('entropy');
    if (calls.some((c) => c.trainerLogProbs && c.responseLogProbs)) s.add('gap');
    if (calls.some((c) => c.vocabMismatch)) s.add('vocabKl').add('vocabTv');
    return s;
  }, [res, rollouts]);
  // a colouring this trace lacks falls back to one it has, and the view says so
  const colorBy = shownColorBy(askedColorBy, available);
  const scale = useMemo(() => {
    const values =
      colorBy === 'weight'
        ? res?.tokenWeight
        : colorBy === 'advantage'
          ? res?.tokenAdvantage
          : colorBy === 'logprob'
            ? (res?.batch.responseLogProbs ?? undefined)
            : colorBy === 'gap' || colorBy === 'entropy' || colorBy === 'trainerLogprob'
              ? trainerQuantity(colorBy, res, trainer, rollouts)
              : colorBy === 'vocabKl' || colorBy === 'vocabTv'
                ? vocabQuantity(colorBy, rollouts)
                : undefined;
    // weights: the diverging scale is symmetric around 0, so core's ∂L/∂logπ gives the same domain as the push
    return scaleFor(
      colorBy,
      values,
      res?.batch.mask,
      sign,
      colorBy === 'weight' ? res?.tokenWeightExtent : undefined,
    );
  }, [res, colorBy, sign, trainer, rollouts]);
  const weightScale = useMemo(
    () =>
      colorBy === 'weight'
        ? scale
        : scaleFor('weight', res?.tokenWeight, res?.batch.mask, sign, res?.tokenWeightExtent),
    [res, colorBy, scale, sign],
  );
  const run = useActiveRunSettings();
  const options = resolveOptions(view, run);
  const noRowsOf = useMemo(() => {
    if (!res?.noRows) return undefined;
    const out: (NoRowsEntry | undefined)[] = [];
    for (const e of res.noRows) out[e.rollout] = e;
    return out;
  }, [res]);
  const noRowsHere = selected >= 0 ? noRowsOf?.[selected] : undefined;
  const zeroReason = useMemo(() => {
    if (!trace || !res || selected < 0 || res.rolloutWeight[selected] !== 0) return null;
    const g = groupRewards(trace, res, options.rewardFillnaValue).get(trace.rollouts[selected].dataId);
    return equalRewardReason(g, options);
  }, [trace, res, selected, options]);

  if (!trace) return <NoTrace />;
  const exportTokens = () => {
    const r = rollouts[selected];
    const c = r.calls[callIndex];
    const pos =
      res && derived ? callPositions(res.batch, derived.index, selected, callIndex) : new Int32Array(0);
    const v =
      res && pos.length
        ? withVocabMismatch(batchTokenView(res, pos, tokenText, sign, trainer), c, tokenText)
        : callTokenView(c, tokenText);
    return {
      rolloutId: r.rolloutId,
      call: callIndex,
      positions: Array.from({ length: v.ids.length }, (_, i) => i),
      ids: v.ids,
      texts: v.texts,
      quantities: v.quantities,
    };
  };
  return (
    <div className={failedSource ? 'trace-layout shows-previous' : 'trace-layout'} ref={panel}>
      {failedSource && <PreviousTraceNote />}
      <aside className="side">
        <SettingsInSight />
        <h2>
          Rollouts <span className="muted">({rollouts.length})</span>
        </h2>
        <div className={stale ? 'stale-dim' : undefined}>
          <RolloutList
            rollouts={rollouts}
            selected={selected}
            onSelect={select}
            rows={derived?.rows}
            breaks={derived?.breaks}
            noRows={noRowsOf}
            weight={res?.rolloutWeight}
            sign={sign}
            testPrefix="rollout-row"
          />
        </div>
        <p className="muted keys">
          <kbd>j</kbd>/<kbd>k</kbd> rollout · <kbd>←</kbd>/<kbd>→</kbd> call · <kbd>Tab</kbd> into the tokens,
          then arrows
        </p>
      </aside>
      {rollout ? (
        <section
          className="detail"
          aria-label="Selected rollout"
          aria-busy={stale ? 'true' : 'false'}
          data-stale={stale ? 'true' : 'false'}
          data-testid="trace-detail"
        >
          <div className="toolbar">
            <h2 data-testid="rollout-title" title={rollout.rolloutId}>
              <span className="title-id">{rollout.rolloutId}</span>{' '}
              <span className="muted">
                group <span title={rollout.dataId}>{rollout.dataId}</span> · reward{' '}
                {rollout.finalReward ?? '—'} · {rollout.state}
              </span>
            </h2>
            <div className="stepper" data-testid="call-stepper">
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
            {/* toggle buttons, not radios: radios would take ←/→ for themselves */}
            <fieldset className="segmented" data-testid="view-switch">
              <legend className="sr-only">View</legend>
              {TRACE_VIEWS.map((v) => (
                <button
                  key={v}
                  type="button"
                  aria-pressed={v === traceView}
                  className={v === traceView ? 'on' : undefined}
                  onClick={() => set({ traceView: v })}
                >
                  {VIEW_LABEL[v]}
                </button>
              ))}
            </fieldset>
            <SignControl id="trace-sign" />
            {traceView !== 'retok' && (
              <>
                <ColorControl available={available} sign={sign} />
                {colorBy !== askedColorBy && (
                  <span className="note" data-testid="color-fallback">
                    this trace has no {colorByLabel(askedColorBy, sign)}: coloured by{' '}
                    {colorByLabel(colorBy, sign)}
                  </span>
                )}
                <Legend
                  label={colorBy === 'weight' ? sign.symbol : colorByLabel(colorBy, sign)}
                  scale={scale}
                  ends={legendEnds(colorBy, sign)}
                />
              </>
            )}
            {traceView === 'call' && nCalls > 0 && (
              <ExportButtons
                source={source}
                what={`call-${callIndex + 1}-tokens`}
                testId="export-tokens"
                csv={() => tokensCsv(exportTokens())}
                json={() => tokensJson({ options, sign, source }, exportTokens())}
              />
            )}
          </div>
          <StaleNote />
          {zeroReason && (
            <p className="note" data-testid="zero-weight-note">
              Every weight of this rollout is 0: {zeroReason}.
            </p>
          )}
          {noRowsHere && (
            <div className="note" data-testid="no-rows-note">
              {noRowsHere.noGradient
                ? noRowsHere.rows === 0
                  ? 'This rollout gives no training rows:'
                  : `This rollout's ${noRowsHere.rows} row${noRowsHere.rows === 1 ? '' : 's'} move nothing:`
                : 'Note:'}
              <ul>
                {noRowsHere.reasons.map((x) => (
                  <li key={`${x.rule}-${x.where}-${x.detail}`}>
                    <b>{x.rule.replaceAll('_', ' ')}</b> at <code>{x.where}</code>: {x.detail}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {computeError && (
            <p className="bad" role="alert">
              Could not build training rows: {computeError}
            </p>
          )}
          {rollout.state === 'failed' && (
            <p className="bad">Rollout failed: {rollout.error ?? 'no reason given'}</p>
          )}
          <div className={stale ? 'stale-dim' : undefined}>
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
                  trainer={trainer}
                  colorBy={colorBy}
                  scale={scale}
                  weightScale={weightScale}
                  sign={sign}
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
                trainer={trainer}
                colorBy={colorBy}
                scale={scale}
                sign={sign}
              />
            )}
          </div>
          {res && trainer && res.batch.responseLogProbs && derived && (
            <details className="correction-mask-tokens" data-testid="trace-correction-mask">
              <summary>Rollout correction masks (Token-TIS, Token-MIS, IcePop) as thresholds move</summary>
              <CorrectionMaskPanel
                rows={res.batch}
                trainerLogProbs={trainer.logProbs}
                rolloutLogProbs={res.batch.responseLogProbs}
                responseIds={res.batch.responseIds}
                positions={callPositions(res.batch, derived.index, selected, callIndex)}
                tokenText={tokenText}
                stack={options.referenceStack}
              />
            </details>
          )}
          {res && (
            <details className="stack-diff-tokens" data-testid="trace-stack-diff">
              <summary>Per-token differences against the other reference stack</summary>
              <StackDiff
                rollouts={rollouts}
                options={options}
                sign={sign}
                perToken={{
                  tokenText,
                  onSelect: (rolloutId, k) => set({ rollout: rolloutId, call: k, traceView: 'call' }),
                }}
              />
            </details>
          )}
        </section>
      ) : (
        <p className="muted">The trace has no rollouts.</p>
      )}
    </div>
  );
}

/** A full-vocabulary colouring's values over every call that has them, for its scale. */
function vocabQuantity(key: 'vocabKl' | 'vocabTv', rollouts: readonly Rollout[]): Float32Array {
  const parts: number[] = [];
  for (const r of rollouts)
    for (const c of r.calls) {
      const m = c.vocabMismatch;
      if (m) parts.push(...(key === 'vocabKl' ? m.kl : m.tv));
    }
  return Float32Array.from(parts);
}

/**
 * The values a trainer-side colouring takes over the whole trace, for its scale: at the batch positions when
 * rows are built, else over every call's response tokens.
 */
function trainerQuantity(
  key: 'gap' | 'entropy' | 'trainerLogprob',
  res: ComputeResult | null,
  trainer: TrainerValues | null,
  rollouts: readonly Rollout[],
): Float32Array | undefined {
  if (res && trainer)
    return key === 'entropy'
      ? trainer.entropy
      : key === 'trainerLogprob'
        ? trainer.logProbs
        : logProbGap(res.batch.responseLogProbs, trainer.logProbs, res.batch.mask);
  const parts: Float32Array[] = [];
  for (const r of rollouts)
    for (const c of r.calls) {
      if (key === 'entropy' && c.trainerEntropy) parts.push(c.trainerEntropy);
      if (key === 'trainerLogprob' && c.trainerLogProbs) parts.push(c.trainerLogProbs);
      if (key === 'gap' && c.trainerLogProbs && c.responseLogProbs)
        parts.push(logProbGap(c.responseLogProbs, c.trainerLogProbs));
    }
  if (parts.length === 0) return undefined;
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
