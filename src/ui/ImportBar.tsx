import { type DragEvent, useState } from 'react';
import type { TraceIssue } from '../core/trace/types';
import { useLab } from './lab/labStore';
import type { Sample } from './lab/samples';

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
  const [dragging, setDragging] = useState(false);
  const openFile = (f: File | undefined) => {
    if (f) importSource({ kind: 'file', file: f, name: f.name });
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    openFile(e.dataTransfer.files[0]);
  };
  const nCalls = trace?.rollouts.reduce((s, r) => s + r.calls.length, 0) ?? 0;
  const fromSample = props.samples.some((s) => s.name === source);
  return (
    <section
      className={dragging ? 'importbar dragging' : 'importbar'}
      aria-label="Trace source"
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      <span className="field">
        <label htmlFor="sample">Sample</label>
        <select
          id="sample"
          value={fromSample || !source ? props.sample : ''}
          onChange={(e) => props.onSample(e.target.value)}
        >
          {!fromSample && source && <option value="">— a file —</option>}
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
      {trace && !progress && <IssueReport issues={trace.issues} />}
    </section>
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
