/**
 * The preset picker: lists the preset registry, shows the chosen preset's explanation, what to look for, the
 * source, what is not modelled yet and the measured robustness (their inline markdown rendered: code, strong,
 * emphasis, links; inlineMarkdown.ts), and hands the variants' resolved configs to
 * the host (`onRun`), which runs and overlays them. Presentational: the host owns the selection (and the
 * link, presetUrl.ts) and the runs.
 */
import { Fragment, useMemo } from 'react';
import type { TrainConfig, TrainConfigPatch } from '../../train/config';
import { listPresets, presetConfigs, type TrainPreset } from '../../train/presets';
import { type InlineSpan, parseInline } from './inlineMarkdown';

export interface PresetPickerProps {
  /** the chosen preset's slug, or null */
  selected: string | null;
  onSelect: (slug: string | null) => void;
  /** the variants' full configs, in the preset's order (names: preset.variants) */
  onRun: (preset: TrainPreset, variants: TrainConfig[]) => void;
  seed?: number;
  steps?: number;
  /** the host's own settings (backend, workers, …), applied before each variant's */
  overrides?: TrainConfigPatch;
  /** disables Run while the host is running something */
  busy?: boolean;
}

function Spans({ spans }: { spans: readonly InlineSpan[] }) {
  return spans.map((s, i) => {
    const key = `${i}`;
    switch (s.kind) {
      case 'text':
        return <Fragment key={key}>{s.text}</Fragment>;
      case 'code':
        return <code key={key}>{s.text}</code>;
      case 'strong':
        return (
          <strong key={key}>
            <Spans spans={s.children} />
          </strong>
        );
      case 'em':
        return (
          <em key={key}>
            <Spans spans={s.children} />
          </em>
        );
      default:
        return (
          <a key={key} href={s.href} target="_blank" rel="noreferrer">
            <Spans spans={s.children} />
          </a>
        );
    }
  });
}

/** A preset text's inline markdown (inlineMarkdown.ts) as elements. */
function Markdown({ text }: { text: string }) {
  return <Spans spans={parseInline(text)} />;
}

/** A preset's texts, in the order the picker and the dashboard's notes show them. */
export function PresetText({ preset, testIds = false }: { preset: TrainPreset; testIds?: boolean }) {
  return (
    <>
      <p data-testid={testIds ? 'preset-explanation' : undefined}>
        <Markdown text={preset.explanation} />
      </p>
      <p>
        <strong>Look for: </strong>
        <Markdown text={preset.lookFor} />
      </p>
      <p className="preset-robustness" data-testid={testIds ? 'preset-robustness' : undefined}>
        <strong>How robust (measured): </strong>
        <Markdown text={preset.robustness} />
      </p>
      {preset.notModelled && (
        <p className="muted">
          <strong>Not modelled yet: </strong>
          <Markdown text={preset.notModelled} />
        </p>
      )}
      <p className="muted">
        <strong>Source: </strong>
        <Markdown text={preset.source} />
      </p>
    </>
  );
}

export function PresetPicker(props: PresetPickerProps) {
  const presets = listPresets();
  const preset = presets.find((p) => p.slug === props.selected) ?? null;
  const resolved = useMemo(() => {
    if (!preset) return null;
    try {
      return {
        runs: presetConfigs(preset, { seed: props.seed, steps: props.steps, overrides: props.overrides }),
      };
    } catch (e) {
      return { error: (e as Error).message };
    }
  }, [preset, props.seed, props.steps, props.overrides]);
  return (
    <section className="preset-picker">
      <div className="field">
        <label htmlFor="preset-select">Preset</label>
        <select
          id="preset-select"
          value={preset?.slug ?? ''}
          onChange={(e) => props.onSelect(e.target.value === '' ? null : e.target.value)}
        >
          <option value="">(none)</option>
          {presets.map((p) => (
            <option key={p.slug} value={p.slug}>
              {p.title}
            </option>
          ))}
        </select>
      </div>
      {preset && (
        <div className="preset-detail">
          <h3>{preset.title}</h3>
          <PresetText preset={preset} />
          <table className="preset-variants">
            <thead>
              <tr>
                <th>run</th>
                <th>settings</th>
              </tr>
            </thead>
            <tbody>
              {preset.variants.map((v) => (
                <tr key={v.name}>
                  <td>{v.name}</td>
                  <td>{v.label}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted">Metrics: {preset.metrics.join(', ')}</p>
          {resolved && 'error' in resolved ? (
            <p className="error" role="alert">
              {resolved.error}
            </p>
          ) : (
            <button
              type="button"
              disabled={props.busy || !resolved}
              onClick={() =>
                resolved?.runs &&
                props.onRun(
                  preset,
                  resolved.runs.map((r) => r.config),
                )
              }
            >
              Run {preset.variants.length} runs on seed {resolved?.runs?.[0]?.config.lab.seed}
            </button>
          )}
        </div>
      )}
    </section>
  );
}
