import { useCallback } from 'react';
import { REFERENCE_STACK } from '../../core/pipeline/options';
import { NoTrace } from '../ImportBar';
import { useLab } from '../lab/labStore';
import { controlSpecs, resolveOptions } from '../lab/options';
import { useView } from '../store';
import { fmt } from '../tokens/colorScale';
import { RolloutList } from '../trace/RolloutList';
import { useRolloutRows, useSelectedRollout } from '../trace/TracePanel';
import { CallWeights } from './CallWeights';
import { Controls } from './Controls';
import { GroupBars } from './GroupBars';
import { ModesTable } from './ModesTable';

/**
 * The advantage & normalization explorer: every algorithm choice as a control generated from core's
 * registries, and what it does to the loaded batch — per rollout, per call, per group, and all loss modes at once.
 */
export function AdvantagesPanel() {
  const view = useView();
  const trace = useLab((s) => s.trace);
  const res = useLab((s) => s.result);
  const resOpts = useLab((s) => s.resultOptions);
  const computeError = useLab((s) => s.computeError);
  const selected = useSelectedRollout();
  const derived = useRolloutRows();
  const opts = resolveOptions(view);
  const specs = controlSpecs(opts);
  const rollouts = trace?.rollouts ?? [];
  const rollout = selected >= 0 ? rollouts[selected] : undefined;
  const stale = res && resOpts && JSON.stringify(resOpts) !== JSON.stringify(opts);
  const setView = view.set;
  const select = useCallback(
    (i: number) => setView({ rollout: rollouts[i].rolloutId, call: 0 }),
    [rollouts, setView],
  );
  const selectCall = useCallback((k: number) => setView({ call: k, tab: 'trace' }), [setView]);
  let total = 0;
  if (res) for (const w of res.rolloutWeight) total += w;
  return (
    <div className="adv-layout">
      <form className="side" aria-label="Algorithm options" onSubmit={(e) => e.preventDefault()}>
        <h2>Options</h2>
        <p className="muted" data-testid="reference-stack">
          as {REFERENCE_STACK.label} computes it
        </p>
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
        data-testid="adv-main"
        data-tokens={res ? res.batch.offsets[res.batch.nRows] : undefined}
        data-result-loss={resOpts?.lossMode}
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
            <section className="card wide">
              <div className="card-head">
                <h2>Per-rollout total gradient weight</h2>
                <span className="muted">
                  loss mode <b>{opts.lossMode}</b> · {res.trainerCounters['training/n_sample_trained']} of{' '}
                  {res.batch.nRows} rows trained
                  {res.trainerCounters['training/n_sample_dropped/marked'] > 0 &&
                    ` (${res.trainerCounters['training/n_sample_dropped/marked']} is_drop)`}{' '}
                  · advantages in {res.advantagesDType} · Σ <b data-testid="total-weight">{fmt(total, 6)}</b>
                </span>
              </div>
              <RolloutList
                rollouts={rollouts}
                selected={selected}
                onSelect={select}
                rows={derived?.rows}
                breaks={derived?.breaks}
                weight={res.rolloutWeight}
                testPrefix="adv-rollout"
                idChars={48}
                groupChars={32}
              />
            </section>
            <section className="card">
              <div className="card-head">
                <h2>Per-call weight</h2>
                <span className="muted">{rollout?.rolloutId}</span>
              </div>
              {rollout && derived && (
                <CallWeights
                  rollout={rollout}
                  rolloutIndex={selected}
                  res={res}
                  index={derived.index}
                  onSelectCall={selectCall}
                />
              )}
            </section>
            <section className="card">
              <div className="card-head">
                <h2>Per-group weight</h2>
                <span className="muted">
                  {res.groupKeys.length} groups · <span className="neg-key">■</span> reinforced (weight &lt;
                  0) · <span className="pos-key">■</span> suppressed
                </span>
              </div>
              <GroupBars
                keys={res.groupKeys}
                net={res.groupWeight}
                negative={res.groupNegative}
                positive={res.groupPositive}
              />
            </section>
            <section className="card wide">
              <div className="card-head">
                <h2>All loss modes on this batch</h2>
                <span className="muted">per-rollout total weight</span>
              </div>
              <ModesTable
                rollouts={rollouts}
                modes={res.modes}
                selectedMode={opts.lossMode}
                selected={selected}
                onSelect={select}
              />
            </section>
          </>
        )}
      </div>
    </div>
  );
}
