import { type ReactNode, useState } from 'react';
import { getReferenceStack } from '../../core/algos/stacks';
import type { TrainerOptions } from '../../core/pipeline/options';
import { signed, type WeightSign } from '../../core/pipeline/sign';
import type { Rollout } from '../../core/trace/types';
import { diffAgainstStack, otherReferenceStack, type WeightDiff } from '../../core/weightDiff';
import { fmt } from '../tokens/colorScale';

const SHOWN = 5;
const SHOWN_TOKENS = 10;

/**
 * The same trace and settings on the other reference stack (core/weightDiff.ts, as `lab analyze
 * --diff-reference`): the largest per-rollout and per-call weight differences, each with the setting and the
 * listed upstream change that moves it. Computed on request (it runs the trainer once per changed setting).
 */
export function StackDiff({
  rollouts,
  options,
  sign,
  perToken,
}: {
  rollouts: Rollout[];
  options: TrainerOptions;
  sign: WeightSign;
  /**
   * the Trace view's form: the largest per-token differences (token text from the map) instead of the
   * per-rollout and per-call ones; a row's button selects its rollout and call
   */
  perToken?: { tokenText: Map<number, string>; onSelect?: (rolloutId: string, call: number) => void };
}) {
  const other = otherReferenceStack(options.referenceStack);
  const key = JSON.stringify(options);
  const [shown, setShown] = useState<{
    key: string;
    rollouts: Rollout[];
    diff: WeightDiff | null;
    message: string | null;
  } | null>(null);
  const current = shown && shown.key === key && shown.rollouts === rollouts ? shown : null;
  const compute = () => {
    try {
      const r = diffAgainstStack(rollouts, options, other, { limit: perToken ? SHOWN_TOKENS : SHOWN });
      setShown({ key, rollouts, diff: r.diff, message: r.refused && `not comparable: ${r.refused}` });
    } catch (e) {
      setShown({ key, rollouts, diff: null, message: `the trainer fails: ${(e as Error).message}` });
    }
  };
  const f = (v: number) => fmt(signed(v, sign));
  const why = (k: string[]) => (k.length ? k.join(', ') : 'joint effect of the changed settings');
  /** A table of differences: the leading column heads, then the two stacks' loss modes, Δ and its causes. */
  const diffTable = (w: WeightDiff, leading: string[], rows: ReactNode, testId?: string) => (
    <table className="compact" data-testid={testId}>
      <thead>
        <tr>
          {leading.map((h) => (
            <th key={h}>{h}</th>
          ))}
          <th>{w.a.lossMode}</th>
          <th>{w.b.lossMode}</th>
          <th>Δ</th>
          <th>caused by</th>
        </tr>
      </thead>
      <tbody>{rows}</tbody>
    </table>
  );
  /** A row's two values, their difference and its causes (the last four columns of every table). */
  const diffCells = (x: { a: number; b: number; delta: number; causes: string[] }) => (
    <>
      <td>{f(x.a)}</td>
      <td>{f(x.b)}</td>
      <td>{f(x.delta)}</td>
      <td>{why(x.causes)}</td>
    </>
  );
  const d = current?.diff;
  return (
    <div data-testid="stack-diff">
      <p className="muted">
        {getReferenceStack(options.referenceStack).label} → {getReferenceStack(other).label}, same settings{' '}
        <button type="button" onClick={compute} data-testid="stack-diff-compute">
          {current ? 'Recompute' : 'Compare'}
        </button>
      </p>
      {current?.message && (
        <p className="muted" data-testid="stack-diff-message">
          {current.message}
        </p>
      )}
      {d && (
        <>
          <ul>
            {d.causes.map((c) => (
              <li key={c.key}>
                {c.key}: {String(c.from)} → {String(c.to)}
                {c.changes && c.changes.length === 0 && ' (no listed change applies to these settings)'}
                {c.changes && c.changes.length > 0 && (
                  <ul>
                    {c.changes.map((x) => (
                      <li key={x.id} title={x.madeBy}>
                        {x.summary}
                      </li>
                    ))}
                  </ul>
                )}
              </li>
            ))}
          </ul>
          <p data-testid="stack-diff-counts">
            {d.counts.rollouts} rollouts, {d.counts.calls} calls
            {d.counts.tokens !== null && `, ${d.counts.tokens} tokens`} differ ({sign.short})
          </p>
          {perToken && d.tokens === null && (
            <p className="muted" data-testid="stack-diff-unpaired">
              Tokens are not paired: the two stacks build different rows from this trace.
            </p>
          )}
          {perToken &&
            d.tokens &&
            d.tokens.length > 0 &&
            diffTable(
              d,
              ['rollout', 'call', 'row · pos', 'token'],
              d.tokens.map((t) => (
                <tr key={`t-${t.row}-${t.position}`}>
                  <td>
                    {perToken.onSelect ? (
                      <button
                        type="button"
                        className="link"
                        onClick={() => perToken.onSelect?.(t.rolloutId, t.call)}
                      >
                        {t.rolloutId}
                      </button>
                    ) : (
                      t.rolloutId
                    )}
                  </td>
                  <td>{t.call}</td>
                  <td>
                    {t.row} · {t.position}
                  </td>
                  <td>
                    <code>{JSON.stringify(perToken.tokenText.get(t.tokenId) ?? `<${t.tokenId}>`)}</code>
                  </td>
                  {diffCells(t)}
                </tr>
              )),
              'stack-diff-tokens',
            )}
          {!perToken &&
            d.rollouts.length > 0 &&
            diffTable(
              d,
              ['rollout', 'call'],
              <>
                {d.rollouts.map((r) => (
                  <tr key={`r-${r.rolloutId}`}>
                    <td>{r.rolloutId}</td>
                    <td>all</td>
                    {diffCells(r)}
                  </tr>
                ))}
                {d.calls.map((c) => (
                  <tr key={`c-${c.rolloutId}-${c.call}`}>
                    <td>{c.rolloutId}</td>
                    <td>{c.call}</td>
                    {diffCells(c)}
                  </tr>
                ))}
              </>,
            )}
        </>
      )}
    </div>
  );
}
