import { useId } from 'react';
import { stackedTex, Tex } from '../components/Tex';
import { useView, type ViewState } from '../store';

type Field<T> = { [K in keyof ViewState]: ViewState[K] extends T ? K : never }[keyof ViewState];

export type ControlSpec =
  | {
      kind: 'select';
      field: Field<string>;
      label: string;
      options: { value: string; label: string; title?: string; disabled?: boolean }[];
      /** the setting is not read under the other settings (shown, greyed) */
      disabled?: boolean;
      help?: string;
      /** the chosen value's formula: TeX, and its plain-text form */
      formula?: { tex: string; text: string };
    }
  | { kind: 'checkbox'; field: Field<boolean>; label: string; disabled?: boolean; help?: string }
  | {
      kind: 'number';
      field: Field<number>;
      label: string;
      min: number;
      max: number;
      step: number;
      disabled?: boolean;
      help?: string;
    };

/** Native form controls, each with a visible label, bound to the URL-backed view store. */
export function Controls(props: { specs: ControlSpec[]; values: Partial<ViewState> }) {
  const set = useView((s) => s.set);
  const base = useId();
  return (
    <div className="controls">
      {props.specs.map((c) => {
        const id = `${base}-${c.field}`;
        const help = c.help ? <span className="help">{c.help}</span> : null;
        if (c.kind === 'select') {
          return (
            <div className="control" key={c.field}>
              <label htmlFor={id}>{c.label}</label>
              <select
                id={id}
                value={String(props.values[c.field])}
                disabled={c.disabled}
                onChange={(e) => set({ [c.field]: e.target.value })}
              >
                {c.options.map((o) => (
                  <option key={o.value} value={o.value} title={o.title} disabled={o.disabled}>
                    {o.label}
                  </option>
                ))}
              </select>
              {c.formula && (
                <Tex tex={stackedTex(c.formula.tex)} label={c.formula.text} className="formula" display />
              )}
              {help}
            </div>
          );
        }
        if (c.kind === 'checkbox') {
          return (
            <div className="control check" key={c.field}>
              <input
                id={id}
                type="checkbox"
                checked={Boolean(props.values[c.field])}
                disabled={c.disabled}
                onChange={(e) => set({ [c.field]: e.target.checked })}
              />
              <label htmlFor={id}>{c.label}</label>
              {help}
            </div>
          );
        }
        return (
          <div className="control" key={c.field}>
            <label htmlFor={id}>{c.label}</label>
            <input
              id={id}
              type="number"
              min={c.min}
              max={c.max}
              step={c.step}
              disabled={c.disabled}
              value={Number(props.values[c.field])}
              onChange={(e) => {
                const v = e.target.valueAsNumber;
                if (Number.isFinite(v) && v >= c.min && v <= c.max) set({ [c.field]: v });
              }}
            />
            {help}
          </div>
        );
      })}
    </div>
  );
}
