import { useEffect } from 'react';
import type { RetokCallView } from '../../core/tokenize/retokenizationView';
import { useLab } from '../lab/labStore';
import { chipLabel } from '../tokens/layout';

const CONTEXT = 6;
const MAX_HUNKS = 300;

function Ids(props: { ids: Int32Array; from: number; to: number; cls?: string; texts: Map<number, string> }) {
  const out = [];
  for (let i = props.from; i < props.to; i++) {
    const id = props.ids[i];
    const text = props.texts.get(id) ?? `<${id}>`;
    out.push(
      <span
        key={i}
        className={props.cls ? `tok ${props.cls}` : 'tok'}
        title={`#${i} · id ${id} · ${JSON.stringify(text)}`}
      >
        {chipLabel(text)}
      </span>,
    );
  }
  return <>{out}</>;
}

/** One side of a difference: a few ids of context, the differing ids [from, to), a few ids of context. */
function HunkSide(props: { ids: Int32Array; from: number; to: number; texts: Map<number, string> }) {
  const { ids, from, to, texts } = props;
  return (
    <div className="hunk-ids">
      <Ids ids={ids} from={Math.max(0, from - CONTEXT)} to={from} cls="ctx" texts={texts} />
      <Ids ids={ids} from={from} to={to} cls="diff" texts={texts} />
      <Ids ids={ids} from={to} to={Math.min(ids.length, to + CONTEXT)} cls="ctx" texts={texts} />
    </div>
  );
}

function part(v: RetokCallView, enginePos: number): string {
  return enginePos < v.enginePromptLength
    ? `prompt token ${enginePos}`
    : `response token ${enginePos - v.enginePromptLength}`;
}

/** Engine ids against retokenized ids for the selected call, every difference with its cause. */
export function RetokView(props: { rollout: number; call: number }) {
  const { rollout, call } = props;
  const retok = useLab((s) => s.retok);
  const error = useLab((s) => s.retokError);
  const texts = useLab((s) => s.tokenText);
  const trace = useLab((s) => s.trace);
  const request = useLab((s) => s.requestRetok);
  useEffect(() => {
    if (trace) request(rollout, call);
  }, [trace, rollout, call, request]);
  if (error) return <p className="bad">{error}</p>;
  if (!retok || retok.rollout !== rollout || retok.call !== call)
    return <p className="muted">Retokenizing…</p>;
  if (retok.unavailable)
    return (
      <div data-testid="retok-view">
        <p className="muted">Nothing to compare: {retok.unavailable}.</p>
        {retok.retokenizedAtImport && (
          <>
            <p className="warn">
              Retokenized at import ({retok.retokenizedAtImport.tokenizer}). This affects:
            </p>
            <ul className="muted" data-testid="retok-affects">
              {retok.retokenizedAtImport.affects.map((a) => (
                <li key={a}>{a}</li>
              ))}
            </ul>
          </>
        )}
      </div>
    );
  const hunks = retok.segments.filter((s) => !s.equal);
  const r = retok.report;
  return (
    <div className="retokview" data-testid="retok-view">
      <p className="callhead">
        <span>
          engine <b>{retok.engine.length}</b> ids (prompt {retok.enginePromptLength})
        </span>
        <span>
          retokenized <b>{retok.retokenized.length}</b> ids (prompt {retok.retokenizedPromptLength})
        </span>
        {r?.equal ? (
          <span className="good">identical: retokenization reproduces what was sampled</span>
        ) : (
          <span className="bad" data-testid="retok-summary">
            {hunks.length} differing span{hunks.length === 1 ? '' : 's'}; first at{' '}
            {part(retok, r?.firstDiff ?? 0)} ({r?.cause})
          </span>
        )}
      </p>
      {r?.equal && (
        <div className="hunk-ids all" data-testid="retok-equal">
          <Ids ids={retok.engine} from={0} to={retok.engine.length} texts={texts} />
        </div>
      )}
      <ol className="hunks">
        {hunks.slice(0, MAX_HUNKS).map((h) => (
          <li key={`${h.a0}-${h.b0}`} className="hunk" data-testid="retok-hunk">
            <div className="hunk-head">
              <span className="cause">{h.cause ?? 'differs'}</span>
              <span className="muted">
                {part(retok, h.a0)} · engine {h.a1 - h.a0} ids → retokenized {h.b1 - h.b0} ids
              </span>
            </div>
            <div className="hunk-grid">
              <span className="muted">engine</span>
              <HunkSide ids={retok.engine} from={h.a0} to={h.a1} texts={texts} />
              <span className="muted">retokenized</span>
              <HunkSide ids={retok.retokenized} from={h.b0} to={h.b1} texts={texts} />
            </div>
          </li>
        ))}
      </ol>
      {hunks.length > MAX_HUNKS && <p className="muted">… and {hunks.length - MAX_HUNKS} more differences</p>}
    </div>
  );
}
