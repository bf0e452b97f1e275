import { useCallback, useMemo } from 'react';
import { getLossMode } from '../../core/algos/lossModes';
import { signed } from '../../core/pipeline/sign';
import { ExportButtons } from '../components/ExportButtons';
import { binValues, Histogram } from '../components/Histogram';
import { Tex } from '../components/Tex';
import { NoTrace, PreviousTraceNote, StaleNote } from '../ImportBar';
import { rolloutsCsv, rolloutsJson } from '../lab/exportView';
import { useLab } from '../lab/labStore';
import { controlSpecs, resolveOptions, useActiveRunSettings } from '../lab/options';
import type { ComputeResult } from '../lab/pipeline';
import {
  changedOptions,
  describeChanges,
  groupRewards,
  isStale,
  useWeightSign,
  zeroWeightsReason,
} from '../lab/present';
import { SettingsInSight } from '../SettingsInSight';
import { useView } from '../store';
import { fmt } from '../tokens/colorScale';
import { scaleFor } from '../tokens/quantities';
import { RolloutList } from '../trace/RolloutList';
import { SignControl, useRolloutRows, useSelectedRollout } from '../trace/TracePanel';
import { CallWeights } from './CallWeights';
import { Controls } from './Controls';
import { GroupChart, REINFORCED, SUPPRESSED } from './GroupChart';
import { ModesTable } from './ModesTable';
import { RowStrips } from './RowStrips';
import { StackDiff } from './StackDiff';

const BINS = 31;

/** Per source rollout: 1 when it has a trained row. */
function trainedRollouts(res: ComputeResult, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let r = 0; r < res.batch.nRows; r++) if (res.rowStatus[r] === 0) out[res.batch.rowRollout[r]] = 1;
  return out;
}

/**
 * The advantage & normalization explorer: every algorithm choice as a control generated from core's
 * registries, and what it does to the loaded batch — per rollout, per call, per group, along every row and all loss
 * modes at once; after a change, what it moved (the previous values as ghosts and a Δ column).
 */
export function AdvantagesPanel() {
  const view = useView();
  const trace = useLab((s) => s.trace);
  const res = useLab((s) => s.result);
  const resOpts = useLab((s) => s.resultOptions);
  const previous = useLab((s) => s.previous);
  const stale = useLab((s) => isStale(s.requestedOptions, s.resultOptions));
  const computeError = useLab((s) => s.computeError);
  const source = useLab((s) => s.summary?.name ?? '');
  const sign = useWeightSign();
  const selected = useSelectedRollout();
  const derived = useRolloutRows();
  const run = useActiveRunSettings();
  const opts = resolveOptions(view, run);
  const specs = controlSpecs(opts);
  const rollouts = trace?.rollouts ?? [];
  const rollout = selected >= 0 ? rollouts[selected] : undefined;
  const setView = view.set;
  const select = useCallback(
    (i: number) => setView({ rollout: rollouts[i].rolloutId, call: 0 }),
    [rollouts, setView],
  );
  const selectCall = useCallback((k: number) => setView({ call: k, tab: 'trace' }), [setView]);
  // the result shown and the one before the last change of options (its ghosts and deltas), same trace
  const shownOpts = resOpts ?? opts;
  const changes = previous && res ? changedOptions(previous.options, shownOpts) : [];
  const prev = changes.length > 0 ? previous?.result : null;
  const changeText = describeChanges(changes);
  const weightScale = useMemo(
    () => scaleFor('weight', res?.tokenWeight, res?.batch.mask, sign, res?.tokenWeightExtent),
    [res, sign],
  );
  const equalGroups = useMemo(() => {
    const out = new Set<string>();
    if (!trace || !res) return out;
    for (const [k, g] of groupRewards(trace, res, shownOpts.rewardFillnaValue))
      if (g.equal && g.rollouts.length > 1) out.add(k);
    return out;
  }, [trace, res, shownOpts.rewardFillnaValue]);
  const ghostGroups = useMemo(() => {
    if (!prev) return null;
    return new Map(prev.groupKeys.map((k, g) => [k, prev.groupWeight[g]]));
  }, [prev]);
  // the trained tokens' advantages are the same in results of one view (a loss-mode change): binned again only
  // when they or the ghost's change
  const advKey = res
    ? `${res.buildSerial}:${res.viewSerial}|${prev ? `${prev.buildSerial}:${prev.viewSerial}` : ''}`
    : '';
  // biome-ignore lint/correctness/useExhaustiveDependencies: advKey names the arrays binned (see above)
  const advHist = useMemo(() => {
    if (!res) return null;
    const [adv, advGhost] = binValues([res.tokenAdvantage, prev?.tokenAdvantage], BINS, {
      keep: [res.responseMask, prev?.responseMask],
      symmetric: true,
    });
    return { adv, advGhost: prev ? advGhost : null };
  }, [advKey]);
  const hist = useMemo(() => {
    if (!res || !trace || !advHist) return null;
    const n = rollouts.length;
    const sgn = (w: Float64Array, keep: Uint8Array) =>
      Float64Array.from(w, (v, i) => (keep[i] ? signed(v, sign) : Number.NaN));
    const keepNow = trainedRollouts(res, n);
    const [w, wGhost] = binValues(
      [sgn(res.rolloutWeight, keepNow), prev ? sgn(prev.rolloutWeight, trainedRollouts(prev, n)) : null],
      BINS,
      { symmetric: true },
    );
    return { ...advHist, w, wGhost: prev ? wGhost : null };
  }, [res, prev, trace, rollouts.length, sign, advHist]);
  const zeroNote = trace && res ? zeroWeightsReason(trace, res, shownOpts) : null;
  let total = 0;
  if (res) for (const w of res.rolloutWeight) total += w;
  const mode = getLossMode(shownOpts.lossMode);
  const exportCtx = () => {
    if (!trace || !res) throw new Error('nothing computed yet');
    return { trace, res, options: shownOpts, sign, source };
  };
  const [lowColor, highColor] =
    sign.reinforced === 'positive' ? [SUPPRESSED, REINFORCED] : [REINFORCED, SUPPRESSED];
  const failedSource = useLab((s) => (s.importError ? s.failedSource : null));
  return (
    <div className={failedSource ? 'adv-layout shows-previous' : 'adv-layout'}>
      {failedSource && <PreviousTraceNote />}
      <form className="side" aria-label="Algorithm options" onSubmit={(e) => e.preventDefault()}>
        <h2>Options</h2>
        <SettingsInSight />
        <SignControl id="adv-sign" />
        <Controls specs={specs} values={opts} />
        {computeError && (
          <p className="bad" role="alert">
            {computeError}
          </p>
        )}
      </form>
      <div
        className="adv-main"
        aria-busy={stale ? 'true' : 'false'}
        data-stale={stale ? 'true' : 'false'}
        data-testid="adv-main"
        data-tokens={res ? res.batch.offsets[res.batch.nRows] : undefined}
        data-result-loss={resOpts?.lossMode}
        data-result-estimator={resOpts?.advEstimator}
      >
        {!trace ? (
          <NoTrace />
        ) : !res ? (
          <p className="muted">Computing weights…</p>
        ) : res.skipped ? (
          <p className="bad" role="alert">
            Every row is marked is_drop (prompt longer than {opts.maxPromptLength} tokens): the trainer skips
            this step.
          </p>
        ) : (
          <>
            <div className="adv-head wide">
              <div className="definition">
                <span className="muted">effective weight of token t, at ratio 1:</span>{' '}
                <Tex
                  tex={`w_t = ${sign.factor === 1 ? '' : '-'}\\dfrac{\\partial L}{\\partial \\log\\pi_t} = ${
                    sign.factor === 1 ? '-' : ''
                  }c_r\\, m_t\\, A_t\\, w^{\\mathrm{IS}}_t`}
                  label={`w_t = ${sign.symbol}_t`}
                />{' '}
                <span className="muted">
                  ({sign.reinforced} = reinforced; c<sub>r</sub>: the loss mode's row coefficient, A: the
                  advantages the loss sees)
                </span>
              </div>
              <div className="definition">
                <span className="muted">
                  loss mode <b>{mode.name}</b> ({mode.key}):
                </span>{' '}
                <Tex tex={mode.tex} label={mode.formula} />
              </div>
              <StaleNote />
              {zeroNote && (
                <p className="note" data-testid="zero-weights-note">
                  {zeroNote[0].toUpperCase()}
                  {zeroNote.slice(1)}
                </p>
              )}
              {prev && (
                <p className="muted changes" data-testid="change-note">
                  Since {changeText}: the previous values are drawn as ghosts, and Δ is new − previous.
                </p>
              )}
            </div>
            <section
              className={stale ? 'card wide stale-dim' : 'card wide'}
              aria-labelledby="rollout-weights-title"
            >
              <div className="card-head">
                <h2 id="rollout-weights-title">Per-rollout {sign.label}</h2>
                <span className="muted">
                  Σ over each rollout's tokens · {res.trainerCounters['training/n_sample_trained']} of{' '}
                  {res.batch.nRows} rows trained
                  {res.trainerCounters['training/n_sample_dropped/marked'] > 0 &&
                    ` (${res.trainerCounters['training/n_sample_dropped/marked']} is_drop)`}{' '}
                  · advantages in {res.advantagesDType} · Σ{' '}
                  <b data-testid="total-weight">{fmt(signed(total, sign), 6)}</b>
                </span>
                <ExportButtons
                  source={source}
                  what="rollouts"
                  testId="export-rollouts"
                  csv={() => rolloutsCsv(exportCtx())}
                  json={() => rolloutsJson(exportCtx())}
                />
              </div>
              <RolloutList
                rollouts={rollouts}
                selected={selected}
                onSelect={select}
                rows={derived?.rows}
                breaks={derived?.breaks}
                weight={res.rolloutWeight}
                previousWeight={prev?.rolloutWeight}
                deltaTitle={prev ? `change since ${changeText}` : undefined}
                sign={sign}
                testPrefix="adv-rollout"
              />
            </section>
            <section className={stale ? 'card stale-dim' : 'card'} aria-labelledby="group-title">
              <div className="card-head">
                <h2 id="group-title">Per-group {sign.short}</h2>
                <span className="muted">
                  {res.groupKeys.length} groups · <span className="key-reinforced">■</span> reinforced ·{' '}
                  <span className="key-suppressed">■</span> suppressed · │ net
                  {prev && ' · ┆ before'}
                  {equalGroups.size > 0 && ` · = ${equalGroups.size} with one reward for all (weight 0)`}
                </span>
              </div>
              <GroupChart
                keys={res.groupKeys}
                net={res.groupWeight}
                negative={res.groupNegative}
                positive={res.groupPositive}
                ghost={ghostGroups}
                equal={equalGroups}
                sign={sign}
              />
            </section>
            <section className={stale ? 'card stale-dim' : 'card'} aria-labelledby="dist-title">
              <div className="card-head">
                <h2 id="dist-title">Distributions</h2>
                <span className="muted">{prev ? 'outline: before the change' : ''}</span>
              </div>
              {hist && (
                <>
                  <h3 className="hist-title">Advantages of trained tokens ({res.advantagesDType})</h3>
                  <Histogram
                    bins={hist.adv}
                    ghost={hist.advGhost}
                    colors={[SUPPRESSED, REINFORCED]}
                    label={`histogram of the advantages of trained tokens${prev ? ', previous as an outline' : ''}`}
                    unit="tokens"
                    testId="hist-advantages"
                  />
                  <h3 className="hist-title">Per-rollout {sign.label}</h3>
                  <Histogram
                    bins={hist.w}
                    ghost={hist.wGhost}
                    colors={[lowColor, highColor]}
                    label={`histogram of the per-rollout ${sign.label}${prev ? ', previous as an outline' : ''}`}
                    unit="rollouts"
                    testId="hist-rollouts"
                  />
                </>
              )}
            </section>
            <section className={stale ? 'card wide stale-dim' : 'card wide'} aria-labelledby="strips-title">
              <div className="card-head">
                <h2 id="strips-title">Along each row's tokens</h2>
                <span className="muted">
                  one strip per training row, coloured by {sign.label} (blue reinforced, red suppressed); grey
                  hatched: observation tokens (mask 0); ticks: call starts
                </span>
              </div>
              {derived && (
                <RowStrips
                  res={res}
                  index={derived.index}
                  selectedRollout={selected}
                  scale={weightScale}
                  sign={sign}
                  onSelect={select}
                />
              )}
            </section>
            <section className={stale ? 'card wide stale-dim' : 'card wide'} aria-labelledby="call-title">
              <div className="card-head">
                <h2 id="call-title">Per-call {sign.short}</h2>
                <span className="muted" title={rollout?.rolloutId}>
                  {rollout?.rolloutId}
                </span>
              </div>
              {rollout && derived && (
                <CallWeights
                  rollout={rollout}
                  rolloutIndex={selected}
                  res={res}
                  index={derived.index}
                  onSelectCall={selectCall}
                  sign={sign}
                />
              )}
            </section>
            <section
              className={stale ? 'card wide stale-dim' : 'card wide'}
              aria-labelledby="stackdiff-title"
            >
              <div className="card-head">
                <h2 id="stackdiff-title">Against the other reference stack</h2>
                <span className="muted">largest per-rollout and per-call differences</span>
              </div>
              <StackDiff rollouts={rollouts} options={shownOpts} sign={sign} />
            </section>
            <section className={stale ? 'card wide stale-dim' : 'card wide'} aria-labelledby="modes-title">
              <div className="card-head">
                <h2 id="modes-title">All loss modes on this batch</h2>
                <span className="muted">per-rollout {sign.label}</span>
              </div>
              <ModesTable
                rollouts={rollouts}
                modes={res.modes}
                selectedMode={shownOpts.lossMode}
                selected={selected}
                onSelect={select}
                sign={sign}
              />
            </section>
          </>
        )}
      </div>
    </div>
  );
}
