import { useEffect, useId, useRef, useState } from 'react';
import { BEHAVIOURS } from '../../harness/harness';
import { HARNESSES } from '../../harness/registry';
import { isTerminal, type RunSummary } from '../../server/protocol/api';
import { checkParam, type ParamSpec, type ParamValues } from '../../server/protocol/params';
import {
  aglVerlOverrides,
  checkTemplateParams,
  jobTemplates,
  TEMPLATE_NAMES,
  type TemplateName,
} from '../../server/protocol/templates';
import { Options } from '../components/Options';
import { useView } from '../store';
import { MetricCharts } from './MetricCharts';
import { paramsFromView } from './prefill';
import { useRemote } from './remoteStore';

/** The templates the gateway accepts, generated from the same registry it checks against. */
const TEMPLATES = jobTemplates({ harnesses: HARNESSES.names(), behaviours: BEHAVIOURS });

function ConnectCard() {
  const { conn, connError, cluster, connect, setCluster, token, base } = useRemote();
  const [url, setUrl] = useState(base || (typeof location !== 'undefined' ? location.origin : ''));
  const [tok, setTok] = useState(token);
  const [ray, setRay] = useState('');
  const id = useId();
  useEffect(() => setTok(token), [token]);
  const sameOrigin = typeof location !== 'undefined' && url.replace(/\/+$/, '') === location.origin;
  return (
    <section className="card" aria-labelledby={`${id}-h`}>
      <div className="card-head">
        <h2 id={`${id}-h`}>Gateway</h2>
        <output data-testid="remote-conn" data-state={conn} className={conn === 'error' ? 'bad' : 'muted'}>
          {conn === 'connected' && cluster
            ? `gateway ${cluster.gateway.version} · Ray ${cluster.ray.reachable ? cluster.ray.version : 'unreachable'} at ${cluster.ray.address}`
            : conn === 'connecting'
              ? 'connecting…'
              : conn === 'error'
                ? connError
                : 'not connected'}
        </output>
      </div>
      <form
        className="remote-form"
        onSubmit={(e) => {
          e.preventDefault();
          void connect(sameOrigin ? '' : url, tok);
        }}
      >
        <div className="control">
          <label htmlFor={`${id}-url`}>Gateway URL</label>
          <input id={`${id}-url`} type="url" value={url} onChange={(e) => setUrl(e.target.value)} />
          {!sameOrigin && (
            <span className="help">
              another origin: start that gateway with --allow-origin {location.origin}
            </span>
          )}
        </div>
        <div className="control">
          <label htmlFor={`${id}-tok`}>Token</label>
          <input
            id={`${id}-tok`}
            type="password"
            autoComplete="off"
            value={tok}
            onChange={(e) => setTok(e.target.value)}
            placeholder="from the link the gateway printed"
          />
        </div>
        <button type="submit" disabled={!tok}>
          Connect
        </button>
      </form>
      {conn === 'connected' && cluster && (
        <>
          <dl className="cluster" data-testid="cluster-info">
            <dt>Ray</dt>
            <dd>
              {cluster.ray.reachable ? cluster.ray.version : <span className="bad">{cluster.ray.error}</span>}
            </dd>
            <dt>Nodes</dt>
            <dd data-testid="cluster-nodes">{cluster.ray.nodes ?? '–'}</dd>
            <dt>CPUs</dt>
            <dd data-testid="cluster-cpus">{cluster.ray.cpus ?? '–'}</dd>
            <dt>GPUs</dt>
            <dd data-testid="cluster-gpus">{cluster.ray.gpus ?? '–'}</dd>
            <dt>Ray token</dt>
            <dd>{cluster.ray.tokenAuth ? 'set by the gateway' : 'none'}</dd>
          </dl>
          <form
            className="remote-form"
            onSubmit={(e) => {
              e.preventDefault();
              if (ray) void setCluster(ray);
            }}
          >
            <div className="control">
              <label htmlFor={`${id}-ray`}>Ray dashboard address</label>
              <input
                id={`${id}-ray`}
                type="url"
                placeholder={cluster.ray.address}
                value={ray}
                onChange={(e) => setRay(e.target.value)}
              />
            </div>
            <button type="submit" disabled={!ray}>
              Use this cluster
            </button>
          </form>
        </>
      )}
    </section>
  );
}

function ParamField(props: {
  spec: ParamSpec;
  value: ParamValues[string];
  onChange: (v: ParamValues[string]) => void;
  error?: string;
}) {
  const { spec, value, onChange } = props;
  const id = useId();
  const help = (
    <span className="help">
      {spec.upstream ? <code>{spec.upstream}</code> : null} {spec.help}
      {props.error ? <span className="bad"> {props.error}</span> : null}
    </span>
  );
  if (spec.kind === 'bool')
    return (
      <div className="control check">
        <input
          id={id}
          type="checkbox"
          name={spec.name}
          checked={Boolean(value)}
          onChange={(e) => onChange(e.target.checked)}
        />
        <label htmlFor={id}>{spec.label}</label>
        {help}
      </div>
    );
  return (
    <div className="control">
      <label htmlFor={id}>{spec.label}</label>
      {spec.kind === 'enum' ? (
        <select id={id} name={spec.name} value={String(value)} onChange={(e) => onChange(e.target.value)}>
          {spec.values.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      ) : spec.kind === 'string' ? (
        <input
          id={id}
          name={spec.name}
          type="text"
          value={String(value)}
          maxLength={spec.maxLength}
          onChange={(e) => onChange(e.target.value)}
        />
      ) : (
        <input
          id={id}
          name={spec.name}
          type="number"
          min={spec.min}
          max={spec.max}
          step={spec.kind === 'int' ? 1 : 'any'}
          value={Number.isFinite(value as number) ? String(value) : ''}
          onChange={(e) => onChange(e.target.value === '' ? Number.NaN : Number(e.target.value))}
        />
      )}
      {help}
    </div>
  );
}

function TemplateForm() {
  const submit = useRemote((s) => s.submit);
  const busy = useRemote((s) => s.busy);
  const submitError = useRemote((s) => s.submitError);
  const [name, setName] = useState<TemplateName>('agl-cpu');
  const template = TEMPLATES[name];
  // pre-filled from the view when the tab opens and when the template changes
  const [filled, setFilled] = useState(() => paramsFromView(useView.getState(), TEMPLATES['agl-cpu']));
  const params = filled.params;
  const taken = filled.taken;
  const setParams = (f: (p: ParamValues) => ParamValues) => setFilled((x) => ({ ...x, params: f(x.params) }));
  const [runName, setRunName] = useState('');
  const id = useId();
  const choose = (t: TemplateName) => {
    setName(t);
    setFilled(paramsFromView(useView.getState(), TEMPLATES[t]));
  };
  const fieldErrors: Record<string, string> = {};
  for (const s of template.params) {
    try {
      checkParam(s, params[s.name]);
    } catch (e) {
      fieldErrors[s.name] = (e as Error).message.replace(/^params\.\w+: /, '');
    }
  }
  let crossError: string | null = null;
  if (Object.keys(fieldErrors).length === 0) {
    try {
      checkTemplateParams(TEMPLATES, name, params);
    } catch (e) {
      crossError = (e as Error).message;
    }
  }
  const valid = Object.keys(fieldErrors).length === 0 && crossError === null;
  return (
    <section className="card" aria-labelledby={`${id}-h`}>
      <div className="card-head">
        <h2 id={`${id}-h`}>Run on the cluster</h2>
        <span className="muted">{template.summary}</span>
      </div>
      <form
        className="template-form"
        data-testid="template-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (valid) void submit(name, params, runName || undefined);
        }}
      >
        <div className="control">
          <label htmlFor={`${id}-t`}>Template</label>
          <select id={`${id}-t`} value={name} onChange={(e) => choose(e.target.value as TemplateName)}>
            <Options values={TEMPLATE_NAMES} />
          </select>
        </div>
        <div className="control">
          <label htmlFor={`${id}-n`}>Run name</label>
          <input
            id={`${id}-n`}
            type="text"
            maxLength={80}
            value={runName}
            onChange={(e) => setRunName(e.target.value)}
            placeholder="optional"
          />
        </div>
        <p className="help">
          Pre-filled from the Advantages settings: {taken.length ? taken.join(', ') : 'none applied'}.{' '}
          <button
            type="button"
            className="linkish"
            onClick={() => setFilled(paramsFromView(useView.getState(), template))}
          >
            Take them again
          </button>
        </p>
        <div className="param-grid">
          {template.params.map((s) => (
            <ParamField
              key={s.name}
              spec={s}
              value={params[s.name]}
              error={fieldErrors[s.name]}
              onChange={(v) => setParams((p) => ({ ...p, [s.name]: v }))}
            />
          ))}
        </div>
        {name === 'agl-verl' && valid && (
          <details>
            <summary>Hydra overrides</summary>
            <pre className="overrides">{aglVerlOverrides(params).join('\n')}</pre>
          </details>
        )}
        {crossError && <p className="bad">{crossError}</p>}
        {submitError && (
          <p className="bad" role="alert" data-testid="submit-error">
            {submitError.message}
          </p>
        )}
        <button type="submit" disabled={!valid || busy}>
          {busy ? 'Submitting…' : 'Submit'}
        </button>
      </form>
    </section>
  );
}

function RunsList() {
  const runs = useRemote((s) => s.runs);
  const live = useRemote((s) => s.live);
  const select = useRemote((s) => s.select);
  return (
    <section className="card wide">
      <div className="card-head">
        <h2>Runs</h2>
        <span className="muted">{runs.length} stored by the gateway</span>
      </div>
      {runs.length === 0 ? (
        <p className="muted">No runs yet.</p>
      ) : (
        <table className="calltable" data-testid="runs">
          <thead>
            <tr>
              <th>run</th>
              <th>template</th>
              <th>state</th>
              <th>step</th>
              <th>rollouts</th>
              <th>created</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r: RunSummary) => (
              <tr key={r.id} className={live?.id === r.id ? 'selected' : undefined} data-run={r.id}>
                <td>
                  <button type="button" className="linkish" onClick={() => select(r.id)}>
                    {r.name}
                  </button>
                </td>
                <td>{r.template}</td>
                <td className={`state-${r.state}`}>{r.state}</td>
                <td>{r.lastStep ?? '–'}</td>
                <td>
                  {r.rollouts}
                  {r.missedRollouts ? <span className="warn"> (+{r.missedRollouts} missed)</span> : null}
                </td>
                <td>{new Date(r.createdMs).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function LogTail(props: { lines: string[]; total: number }) {
  const ref = useRef<HTMLPreElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: scroll when lines arrive
  useEffect(() => {
    const el = ref.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [props.lines]);
  return (
    <div>
      <div className="card-head">
        <h3>Log</h3>
        <span className="muted">
          last {props.lines.length} of {props.total} lines
        </span>
      </div>
      <pre ref={ref} className="logtail" data-testid="log-tail">
        {props.lines.join('\n')}
      </pre>
    </div>
  );
}

function RunView() {
  const live = useRemote((s) => s.live);
  const runs = useRemote((s) => s.runs);
  const { stop, remove, openInTrace, follow, setFollow } = useRemote();
  if (!live) return null;
  const summary = runs.find((r) => r.id === live.id);
  const state = live.status?.state ?? summary?.state ?? 'submitting';
  const message = live.status?.message ?? summary?.message ?? '';
  const terminal = isTerminal(state);
  return (
    <section className="card wide" data-testid="run-view" data-run={live.id} data-state={state}>
      <div className="card-head">
        <h2>{summary?.name ?? live.id}</h2>
        <span className={`badge state-${state}`} data-testid="run-state">
          {state}
        </span>
        <span className="muted">
          {summary?.template} · {live.id}
          {summary?.submissionId ? ` · Ray job ${summary.submissionId}` : ''}
        </span>
        {!terminal && (
          <button type="button" onClick={() => void stop(live.id)}>
            Stop
          </button>
        )}
        {terminal && (
          <button type="button" onClick={() => void remove(live.id)}>
            Delete
          </button>
        )}
      </div>
      {message && <pre className="run-message">{message}</pre>}
      {live.stream.error && <p className="warn">{live.stream.error}</p>}
      {live.notices.length > 0 && (
        <ul className="notices">
          {live.notices.slice(-5).map((n) => (
            <li key={n.seq} className={n.level === 'warning' ? 'warn' : 'muted'}>
              {n.message}
            </li>
          ))}
        </ul>
      )}
      <h3>Metrics</h3>
      <MetricCharts metrics={live.metrics} />
      <div className="card-head">
        <h3>Rollouts</h3>
        <span className="muted" data-testid="rollout-count">
          {live.rollouts.length} recorded by the job's Agent Lightning gateway
        </span>
        <button type="button" disabled={live.rollouts.length === 0} onClick={() => void openInTrace(live.id)}>
          Open in Trace and Advantages
        </button>
        <label className="field">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> follow new
          rollouts
        </label>
      </div>
      <table className="calltable" data-testid="rollouts">
        <thead>
          <tr>
            <th>rollout</th>
            <th>step</th>
            <th>task</th>
            <th>state</th>
            <th>calls</th>
            <th>reward</th>
          </tr>
        </thead>
        <tbody>
          {live.rollouts.slice(-12).map((r) => (
            <tr key={r.rolloutId}>
              <td>{r.rolloutId}</td>
              <td>{r.step ?? '–'}</td>
              <td>{r.dataId}</td>
              <td>{r.state}</td>
              <td>{r.calls}</td>
              <td>{r.reward ?? '–'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <LogTail lines={live.logs} total={live.logTotal} />
    </section>
  );
}

/** The Remote tab: connect to a gateway, submit a template, follow runs, open their rollouts in the other views. */
export function RemotePanel() {
  const init = useRemote((s) => s.init);
  const conn = useRemote((s) => s.conn);
  useEffect(() => init(), [init]);
  return (
    <div className="remote">
      <ConnectCard />
      {conn === 'connected' && (
        <>
          <TemplateForm />
          <RunsList />
          <RunView />
        </>
      )}
    </div>
  );
}
