import type { TraceIssue } from '../core/trace/types';
import { ExportButtons } from './components/ExportButtons';
import { useDropZone } from './components/useDropZone';
import { rolloutsCsv, rolloutsJson } from './lab/exportView';
import { useLab } from './lab/labStore';
import { resolveOptions, useActiveRunSettings } from './lab/options';
import { changedOptions, describeChanges, isStale, useWeightSign } from './lab/present';
import type { Sample } from './lab/samples';
import { useView } from './store';

const PHASE: Record<string, string> = { read: 'reading', parse: 'parsing', build: 'building rows' };

function issueText(i: TraceIssue): string {
  const loc = i.field ? `${i.where}: ${i.field}` : i.where;
  return `${loc} ${i.message}`;
}

/** The issues an import reported: every skipped record with where and why; valid records were kept. */
function IssueReport(props: { issues: TraceIssue[] }) {
  const { issues } = props;
  if (issues.length === 0) return null;
  const errors = issues.filter((i) => i.severity !== 'warning').length;
  const warnings = issues.length - errors;
  return (
    <details className="issues" data-testid="import-issues" open={errors > 0}>
      <summary>
        {errors > 0 && <span className="bad">{errors} skipped</span>}
        {errors > 0 && warnings > 0 && ' · '}
        {warnings > 0 && <span className="warn">{warnings} adjusted</span>}
      </summary>
      <ol>
        {issues.slice(0, 500).map((i, k) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the report is static once shown
          <li key={k} className={i.severity === 'warning' ? 'warn' : 'bad'} data-testid="import-issue">
            {issueText(i)}
          </li>
        ))}
        {issues.length > 500 && <li className="muted">… and {issues.length - 500} more</li>}
      </ol>
    </details>
  );
}

/**
 * Where the data comes from: a bundled sample (loaded at start-up) or a user's file (select or drop), the import
 * progress, and the report of what was skipped and why.
 */
export function ImportBar(props: {
  samples: readonly Sample[];
  samplesError: string | null;
  sample: string;
  onSample: (name: string) => void;
}) {
  const { source, progress, importError, summary, report, trace, importSource } = useLab();
  const excludeIncomplete = useLab((s) => s.excludeIncomplete);
  const setExcludeIncomplete = useLab((s) => s.setExcludeIncomplete);
  const openFile = (f: File | undefined) => {
    if (f) importSource({ kind: 'file', file: f, name: f.name });
  };
  const { dragging, zone } = useDropZone((e) => openFile(e.dataTransfer.files[0]));
  const nCalls = trace?.rollouts.reduce((s, r) => s + r.calls.length, 0) ?? 0;
  // after a failed import the select names what is still on screen, not the source that failed
  const shownKind = useLab((s) => s.shownKind);
  const shown = importError && trace ? (shownKind === 'url' ? (summary?.name ?? source) : null) : source;
  const fromSample = props.samples.some((s) => s.name === shown);
  return (
    <section className={dragging ? 'importbar dragging' : 'importbar'} aria-label="Trace source" {...zone}>
      <span className="field">
        <label htmlFor="sample">Sample</label>
        <select
          id="sample"
          value={fromSample || !shown ? props.sample : ''}
          onChange={(e) => props.onSample(e.target.value)}
        >
          {!fromSample && (shown || source) && <option value="">— a file —</option>}
          {props.samples.map((s) => (
            <option key={s.name} value={s.name} title={s.description}>
              {s.name}
            </option>
          ))}
        </select>
      </span>
      {props.samplesError && <span className="bad">{props.samplesError}</span>}
      <span className="field file">
        <label htmlFor="trace-file">Trace file</label>
        <input
          id="trace-file"
          type="file"
          accept=".jsonl,.json,.ndjson,application/json,text/plain"
          data-testid="trace-file"
          onChange={(e) => openFile(e.target.files?.[0])}
        />
      </span>
      <span className="muted drop-hint">or drop a JSONL / Agent Lightning events file here</span>
      <div className="import-status" aria-live="polite">
        {progress ? (
          <>
            <span>
              {source}: {PHASE[progress.phase]}
            </span>
            <progress
              max={progress.total || 1}
              value={progress.total ? progress.done : undefined}
              data-testid="import-progress"
            />
          </>
        ) : importError ? (
          <span className="bad" data-testid="import-error">
            {source}: {importError}
            {trace && summary && (
              <span className="muted" data-testid="import-error-shown">
                {' '}
                · still showing <b>{summary.name}</b>
              </span>
            )}
          </span>
        ) : summary && trace ? (
          <span data-testid="import-summary">
            <b>{summary.name}</b> · {summary.format} · {trace.rollouts.length} rollouts · {nCalls} calls ·{' '}
            {summary.lines} lines
            {summary.tokenizerError && (
              <span className="warn"> · no token texts: {summary.tokenizerError}</span>
            )}
            {report && report.renamed > 0 && (
              <span className="warn" data-testid="renamed-rollouts">
                {' '}
                · {report.renamed} duplicate rollout id{report.renamed > 1 ? 's' : ''} renamed
              </span>
            )}
            {report?.nothingToTrainOn && (
              <span className="bad" data-testid="nothing-to-train">
                {' '}
                · nothing to train on: {report.nothingToTrainOn}
              </span>
            )}
          </span>
        ) : null}
      </div>
      {report && report.incomplete > 0 && !progress && (
        <label className="field incomplete" data-testid="incomplete-rollouts">
          <input
            type="checkbox"
            checked={excludeIncomplete}
            data-testid="exclude-incomplete"
            onChange={(e) => setExcludeIncomplete(e.target.checked)}
          />
          <span className="warn">
            {report.incomplete} incomplete rollout{report.incomplete > 1 ? 's' : ''} (a part could not be
            read)
          </span>
          : leave {report.incomplete > 1 ? 'them' : 'it'} out
        </label>
      )}
      {trace && !progress && !importError && <IssueReport issues={trace.issues} />}
      {trace && !progress && !importError && <FileLinkNote />}
    </section>
  );
}

/**
 * A trace read from a local file is not in the page's link (a link names a bundled sample): say so, and offer the
 * numbers of the view as files instead.
 */
function FileLinkNote() {
  const kind = useLab((s) => s.shownKind);
  const name = useLab((s) => s.summary?.name ?? '');
  const trace = useLab((s) => s.trace);
  const res = useLab((s) => s.result);
  const view = useView();
  const sign = useWeightSign();
  const run = useActiveRunSettings();
  if (kind !== 'file') return null;
  const ctx = () => {
    if (!trace || !res) throw new Error('nothing computed yet');
    return { trace, res, options: resolveOptions(view, run), sign, source: name };
  };
  return (
    <p className="note file-note" data-testid="file-link-note">
      <b>{name}</b> is a local file: a link to this page cannot load it (it opens with the bundled sample),
      though it keeps every setting.
      {res && (
        <>
          {' '}
          Keep this view's numbers instead:{' '}
          <ExportButtons
            source={name}
            what="rollouts"
            testId="export-file-view"
            csv={() => rolloutsCsv(ctx())}
            json={() => rolloutsJson(ctx())}
          />
        </>
      )}
    </p>
  );
}

/** While the worker recomputes, the numbers on screen are the previous options': say for what it recomputes. */
export function StaleNote() {
  const requested = useLab((s) => s.requestedOptions);
  const shown = useLab((s) => s.resultOptions);
  const error = useLab((s) => s.computeError);
  if (!requested || !shown || !isStale(requested, shown) || error) return null;
  const what = describeChanges(changedOptions(shown, requested));
  return (
    <p className="note stale-note" role="status" data-testid="stale-note">
      <span className="spinner" aria-hidden="true" /> Recomputing for {what || 'the new options'}… the numbers
      below are still those before the change.
    </p>
  );
}

/** After a failed import the previous trace stays on screen: mark it as such, apart from the new source. */
export function PreviousTraceNote() {
  const failed = useLab((s) => s.failedSource);
  const name = useLab((s) => s.summary?.name);
  const error = useLab((s) => s.importError);
  if (!failed || !error || !name) return null;
  return (
    <p className="note previous-note" role="status" data-testid="previous-trace-note">
      <b>{failed}</b> could not be loaded ({error}). Shown below, unchanged: <b>{name}</b>, loaded before it.
    </p>
  );
}

/** What a view shows before any trace is loaded. */
export function NoTrace() {
  const loading = useLab((s) => s.progress !== null);
  return (
    <p className="muted">
      {loading ? 'Loading a trace…' : 'No trace loaded: choose or drop a trace file above.'}
    </p>
  );
}
