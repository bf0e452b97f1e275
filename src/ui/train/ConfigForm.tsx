/**
 * The run's config form, generated from the loop's `CONFIG_FIELDS` (one control per leaf, choices from the
 * registries, upstream key as its name) and held in the URL (formConfig.ts), so a link reproduces the run.
 */
import { memo, useCallback, useMemo, useState } from 'react';
import type { ConfigField, TrainConfig } from '../../train/config';
import { Options } from '../components/Options';
import { pageModelOf } from '../models/shippedModels';
import { useView } from '../store';
import {
  configFromForm,
  describeField,
  FORM_PREFIX,
  formFromConfig,
  formKey,
  formSections,
  sectionOf,
  type TrainFormFields,
  trainTabDefaults,
} from './formConfig';
import { ModelField } from './ModelField';

/** Sections open at first: what a run is about (the rest are one click away). */
const OPEN_SECTIONS = new Set(['lab', 'algorithm', 'data', 'actor_rollout_ref.actor', 'trainer']);
const MODEL_SECTION = sectionOf('actor_rollout_ref.model.lora_rank');

export function useForm(): TrainFormFields {
  // the form's fields of the view state (a shallow copy is cheap: ~70 strings)
  const state = useView();
  return useMemo(() => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(state)) if (k.startsWith(FORM_PREFIX)) out[k] = v as string;
    return out as TrainFormFields;
  }, [state]);
}

const Field = memo(function Field(props: {
  f: ConfigField;
  value: string;
  isDefault: boolean;
  problem: string | undefined;
  onChange: (v: string) => void;
}) {
  const { f, value, problem } = props;
  const id = `cfg-${f.path}`;
  const name = f.path.split('.').slice(-1)[0];
  let control: React.ReactNode;
  if (f.kind === 'bool')
    control = (
      <input
        id={id}
        type="checkbox"
        checked={value === 'true'}
        data-testid={id}
        onChange={(e) => props.onChange(e.target.checked ? 'true' : 'false')}
      />
    );
  else if (f.kind === 'enum')
    control = (
      <select id={id} value={value} data-testid={id} onChange={(e) => props.onChange(e.target.value)}>
        {f.nullable && <option value="null">null</option>}
        <Options values={f.choices?.() ?? []} />
      </select>
    );
  else control = <TextField id={id} value={value} onCommit={props.onChange} />;
  return (
    <div
      className={`cfg-field${props.isDefault ? '' : ' changed'}${problem ? ' invalid' : ''}`}
      title={`${f.path}: ${f.help} (${describeField(f)})`}
    >
      <label htmlFor={id}>
        {name}
        {f.upstream ? '' : <span className="muted"> (lab)</span>}
      </label>
      {control}
      {problem && (
        <span className="error cfg-problem" role="alert">
          {problem}
        </span>
      )}
    </div>
  );
});

/** A text field that commits on blur / Enter (the URL changes once per edit, not per keystroke). */
function TextField(props: { id: string; value: string; onCommit: (v: string) => void }) {
  const [draft, setDraft] = useState<string | null>(null);
  const commit = () => {
    if (draft !== null && draft !== props.value) props.onCommit(draft.trim());
    setDraft(null);
  };
  return (
    <input
      id={props.id}
      data-testid={props.id}
      value={draft ?? props.value}
      spellCheck={false}
      onChange={(e) => setDraft(e.target.value)}
      onBlur={commit}
      onKeyDown={(e) => {
        if (e.key === 'Enter') commit();
      }}
    />
  );
}

export const ConfigForm = memo(function ConfigForm(props: {
  onStart: (config: TrainConfig) => void;
  busy: boolean;
}) {
  const form = useForm();
  const setForm = useView((s) => s.setForm);
  const defaults = useMemo(() => formFromConfig(trainTabDefaults()), []);
  const { config, problems } = useMemo(() => configFromForm(form), [form]);
  const byPath = new Map(problems.map((p) => [p.path, p.message]));
  const sections = useMemo(() => formSections(), []);
  const changed = Object.keys(defaults).filter(
    (k) => form[k as keyof TrainFormFields] !== defaults[k as keyof TrainFormFields],
  );
  const [copied, setCopied] = useState(false);
  const [refusal, setRefusal] = useState<string | null>(null);
  const onRefusal = useCallback((why: string | null) => setRefusal(why), []);
  const modelKey = formKey('actor_rollout_ref.model.path');
  const folderRun = pageModelOf(form[modelKey] ?? defaults[modelKey]) !== null;
  return (
    <section className="train-form" aria-label="Run config">
      <div className="train-form-head">
        <h2>Run config</h2>
        <span className="muted" data-testid="cfg-changed">
          {changed.length === 0
            ? 'defaults (SFT checkpoint start)'
            : `${changed.length} change${changed.length > 1 ? 's' : ''} from the defaults`}
        </span>
      </div>
      <div className="train-form-actions">
        <button
          type="button"
          className="primary"
          data-testid="train-start"
          disabled={problems.length > 0 || refusal !== null}
          title={refusal ?? undefined}
          onClick={() => config && !refusal && props.onStart(config)}
        >
          {props.busy ? 'Queue run' : 'Start'}
        </button>
        <button
          type="button"
          data-testid="train-copy-link"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(location.href);
              setCopied(true);
              setTimeout(() => setCopied(false), 1500);
            } catch {
              setCopied(false);
            }
          }}
        >
          {copied ? 'Link copied' : 'Copy link'}
        </button>
        <button type="button" disabled={changed.length === 0} onClick={() => setForm(defaults)}>
          Reset to defaults
        </button>
      </div>
      <ModelField
        path={form[modelKey] ?? defaults[modelKey]}
        config={config}
        onChange={(v) => setForm({ [modelKey]: v })}
        onRefusal={onRefusal}
      />
      {problems.length > 0 && (
        <p className="error" data-testid="cfg-problems">
          {problems.map((p) => p.message).join('; ')}
        </p>
      )}
      <div className="cfg-sections">
        {sections.map((s) => (
          <details
            key={s.section}
            // a Hugging Face folder's run opens its model section: the LoRA keys act there
            open={OPEN_SECTIONS.has(s.section) || (s.section === MODEL_SECTION && folderRun)}
            className="cfg-section"
          >
            <summary>{s.section}</summary>
            <div className="cfg-grid">
              {s.fields.map((f) => {
                const k = formKey(f.path);
                return (
                  <Field
                    key={f.path}
                    f={f}
                    value={form[k] ?? defaults[k]}
                    isDefault={form[k] === defaults[k]}
                    problem={byPath.get(f.path)}
                    onChange={(v) => setForm({ [k]: v })}
                  />
                );
              })}
            </div>
          </details>
        ))}
      </div>
    </section>
  );
});
