import type { MergeFailure } from '../../core/aggregate/mergeFailure';
import type { WeightSign } from '../../core/pipeline/sign';
import type { Rollout } from '../../core/trace/types';
import { WeightStrip } from '../components/WeightStrip';
import type { BatchIndex } from '../lab/derive';
import type { ComputeResult } from '../lab/pipeline';
import type { ColorScale } from '../tokens/colorScale';
import { chipLabel } from '../tokens/layout';
import type { ColorBy } from '../tokens/quantities';
import { TokenChips } from '../tokens/TokenChips';
import { batchTokenView } from './tokenView';

function range(a: number, b: number): Int32Array {
  return Int32Array.from({ length: b - a }, (_, i) => a + i);
}

/** Tokens of context shown before the first difference, and after it. */
const ALIGN_BEFORE = 5;
const ALIGN_AFTER = 9;

/**
 * The running context (previous prompt + response) and the new prompt, token under token from a few positions
 * before the first difference: the first differing token is marked on both sides, later positions whose ids differ
 * are tinted.
 */
export function AlignedBreak(props: { f: MergeFailure; texts: Map<number, string> }) {
  const { f, texts } = props;
  const at = f.firstDiff - f.windowStart;
  const from = Math.max(0, at - ALIGN_BEFORE);
  const to = Math.max(f.contextWindow.length, f.promptWindow.length, at + 1);
  const end = Math.min(to, at + ALIGN_AFTER);
  const cols = end - from;
  const cell = (ids: number[], k: number, side: 'context' | 'prompt') => {
    const id = ids[k];
    const other = side === 'context' ? f.promptWindow[k] : f.contextWindow[k];
    const pos = f.windowStart + k;
    if (id === undefined)
      return (
        <span key={k} className="tok absent" title={`position ${pos}: the ${side} ends here`}>
          ∎
        </span>
      );
    const text = texts.get(id) ?? `<${id}>`;
    const cls = k === at ? 'tok first-diff' : k > at && id !== other ? 'tok differs' : 'tok same';
    return (
      <span
        key={k}
        className={cls}
        title={`position ${pos} · id ${id} · ${JSON.stringify(text)}`}
        data-first-diff={k === at ? 'true' : undefined}
      >
        {chipLabel(text)}
      </span>
    );
  };
  const cells = (ids: number[], side: 'context' | 'prompt') =>
    Array.from({ length: cols }, (_, j) => cell(ids, from + j, side));
  return (
    <figure
      className="aligned"
      style={{ gridTemplateColumns: `6.5rem repeat(${cols}, max-content)` }}
      data-testid="merge-aligned"
      aria-label={`context and new prompt from position ${f.windowStart + from}; first difference at ${f.firstDiff}`}
    >
      <span className="muted aligned-label">context</span>
      {cells(f.contextWindow, 'context')}
      <span className="muted aligned-label">new prompt</span>
      {cells(f.promptWindow, 'prompt')}
    </figure>
  );
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
  /** the weight's colour scale (the strips show weights whatever colours the chips) */
  weightScale: ColorScale;
  sign: WeightSign;
  selectedCall: number;
  onSelectCall: (k: number) => void;
}) {
  const { rollout, rolloutIndex, res, index, breaks, colorBy, scale, sign } = props;
  const { batch } = res;
  const rows = index.rowsOfRollout[rolloutIndex] ?? [];
  const covered = new Set<number>();
  for (const r of rows) for (let k = 0; k < batch.nCalls[r]; k++) covered.add(batch.firstCall[r] + k);
  const orphans = rollout.calls.map((_, k) => k).filter((k) => !covered.has(k));
  return (
    <div className="mergeview" data-testid="merge-view">
      <p className="muted">
        {rollout.calls.length} calls → {rows.length} training row{rows.length === 1 ? '' : 's'}
        {breaks.length > 0 && ` · ${breaks.length} merge break${breaks.length === 1 ? '' : 's'}`}.{' '}
        <span className="tok obs">observation</span> tokens (mask 0, from the next prompt) are italic and
        shaded in the strips; a dark edge marks where the next call's tokens start.
      </p>
      {breaks.length > 0 && (
        <ul className="breaks" data-testid="merge-breaks">
          {breaks.map((b) => (
            <li key={b.callIndex}>
              <button type="button" className="linkish" onClick={() => props.onSelectCall(b.callIndex)}>
                call {b.callIndex + 1}
              </button>{' '}
              did not extend call {b.prevCallIndex + 1}'s context: <span className="cause">{b.kind}</span>
              <span className="muted">
                {' '}
                at prompt token {b.firstDiff} (context {b.contextLength} = prompt {b.prevPromptLength} +
                response {b.contextLength - b.prevPromptLength}; new prompt {b.promptLength})
              </span>
              <AlignedBreak f={b} texts={props.tokenText} />
            </li>
          ))}
        </ul>
      )}
      {rows.map((r) => {
        const a = batch.offsets[r];
        const e = batch.offsets[r + 1];
        let trainable = 0;
        for (let p = a; p < e; p++) trainable += batch.mask[p];
        const view = batchTokenView(res, range(a, e), props.tokenText, sign, props.rollout);
        const first = batch.firstCall[r];
        const starts: number[] = [];
        for (let p = a + 1; p < e; p++) if (batch.tokenCall[p] !== batch.tokenCall[p - 1]) starts.push(p - a);
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
            <WeightStrip
              values={view.quantities[0].values}
              mask={batch.mask.subarray(a, e)}
              scale={props.weightScale}
              callStarts={starts}
              label={`${sign.label} along row ${r}'s ${e - a} response tokens (${trainable} trainable)`}
              testId="merge-strip"
            />
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
