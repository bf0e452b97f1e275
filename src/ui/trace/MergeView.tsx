import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import type { Rollout } from '../../core/trace/types';
import type { BatchIndex } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import type { ColorScale } from '../tokens/colorScale';
import type { ColorBy } from '../tokens/quantities';
import { TokenChips } from '../tokens/TokenChips';
import { batchTokenView } from './tokenView';

/** Newlines shown as ↵ so a snippet stays a line or two. */
function visible(s: string): string {
  return s.replace(/\n/g, '↵');
}

function range(a: number, b: number): Int32Array {
  return Int32Array.from({ length: b - a }, (_, i) => a + i);
}

/**
 * How sample merging turned one rollout's calls into training rows: per row the calls it holds, its trainable
 * and observation (mask 0) tokens, and each place a merge broke with the reason.
 */
export function MergeView(props: {
  rollout: Rollout;
  rolloutIndex: number;
  res: ComputeResult;
  index: BatchIndex;
  breaks: MergeFailure[];
  tokenText: Map<number, string>;
  colorBy: ColorBy;
  scale: ColorScale;
  selectedCall: number;
  onSelectCall: (k: number) => void;
}) {
  const { rollout, rolloutIndex, res, index, breaks, colorBy, scale } = props;
  const { batch } = res;
  const rows = index.rowsOfRollout[rolloutIndex] ?? [];
  const covered = new Set<number>();
  for (const r of rows) for (let k = 0; k < batch.nCalls[r]; k++) covered.add(batch.firstCall[r] + k);
  const orphans = rollout.calls.map((_, k) => k).filter((k) => !covered.has(k));
  return (
    <div className="mergeview" data-testid="merge-view">
      <p className="muted">
        <span className="tok obs">observation</span> tokens (mask 0, from the next prompt) are italic; a dark
        left edge marks where the next call's tokens start. {rollout.calls.length} calls → {rows.length}{' '}
        training row{rows.length === 1 ? '' : 's'}
        {breaks.length > 0 && ` · ${breaks.length} merge break${breaks.length === 1 ? '' : 's'}`}
      </p>
      {breaks.length > 0 && (
        <ul className="breaks" data-testid="merge-breaks">
          {breaks.map((b) => (
            <li key={b.callIndex}>
              <button type="button" className="linkish" onClick={() => props.onSelectCall(b.callIndex)}>
                call {b.callIndex + 1}
              </button>{' '}
              did not extend call {b.prevCallIndex + 1}'s context: <span className="bad">{b.kind}</span>
              <span className="muted">
                {' '}
                at prompt token {b.firstDiff} (context {b.contextLength} = prompt {b.prevPromptLength} +
                response {b.contextLength - b.prevPromptLength}; new prompt {b.promptLength})
              </span>
              <div className="snippets">
                <span className="muted">context</span>
                <code>{visible(b.contextSnippet)}</code>
                <span className="muted">prompt</span>
                <code>{visible(b.promptSnippet)}</code>
              </div>
            </li>
          ))}
        </ul>
      )}
      {rows.map((r) => {
        const a = batch.offsets[r];
        const e = batch.offsets[r + 1];
        let trainable = 0;
        for (let p = a; p < e; p++) trainable += batch.mask[p];
        const view = batchTokenView(res, range(a, e), props.tokenText);
        const first = batch.firstCall[r];
        const last = first + batch.nCalls[r] - 1;
        return (
          <div key={r} className="mergerow" data-testid="merge-row">
            <div className="callhead">
              <b>row {r}</b>
              <span>call{first === last ? ` ${first + 1}` : `s ${first + 1}–${last + 1}`}</span>
              <span className="muted">
                prompt {batch.promptOffsets[r + 1] - batch.promptOffsets[r]} · response {e - a} ({trainable}{' '}
                trainable, {e - a - trainable} observation)
              </span>
              {batch.isDrop[r] ? (
                <span className="bad">is_drop: prompt too long, removed before advantages</span>
              ) : res.rowStatus[r] === 2 ? (
                <span className="bad">trimmed to a multiple of the mini-batch</span>
              ) : null}
            </div>
            <TokenChips
              ids={view.ids}
              texts={view.texts}
              quantities={[
                ...view.quantities,
                {
                  key: 'call',
                  label: 'call',
                  values: Float32Array.from(range(a, e), (p) => batch.tokenCall[p] + 1),
                },
              ]}
              colorKey={view.available.has(colorBy) ? colorBy : ''}
              scale={scale}
              chipClass={(i) => {
                const p = a + i;
                const c = batch.tokenCall[p];
                const cls = batch.mask[p] ? 'call' : 'call obs';
                return p > a && batch.tokenCall[p - 1] !== c ? `${cls} call-start` : cls;
              }}
              ariaLabel={`Tokens of training row ${r}`}
              maxHeight={220}
            />
          </div>
        );
      })}
      {orphans.length > 0 && (
        <p className="warn">
          In no training row: call{orphans.length > 1 ? 's' : ''} {orphans.map((k) => k + 1).join(', ')}
        </p>
      )}
    </div>
  );
}
