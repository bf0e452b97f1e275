/**
 * The preset picker: lists the preset registry, shows the chosen preset's explanation, what to look for, the
 * source, what is not modelled yet and the measured robustness (their inline markdown rendered: code, strong,
 * emphasis, links; inlineMarkdown.ts; the claims' verdicts derived from the evidence table for the checkpoint the
 * page serves), and hands the variants' resolved configs, per seed of the group, to the host (`onRun`), which
 * runs and overlays them. Presentational: the host owns the selection (and the
 * link, presetUrl.ts) and the runs.
 */
import { Fragment, useEffect, useMemo, useState } from 'react';
import type { TrainConfig, TrainConfigPatch } from '../../train/config';
import { sftCheckpointPath } from '../../train/models';
import {
  listPresets,
  presetBaseConfig,
  presetConfigs,
  presetRobustness,
  type TrainPreset,
} from '../../train/presets';
import { type InlineSpan, parseInline } from './inlineMarkdown';

export interface PresetPickerProps {
  /** the chosen preset's slug, or null */
  selected: string | null;
  onSelect: (slug: string | null) => void;
  /** per seed of the group (seed, seed + 1, …), the variants' full configs in the preset's order */
  onRun: (preset: TrainPreset, bySeed: TrainConfig[][]) => void;
  seed?: number;
  steps?: number;
  /** how many seeds run as one group (default 1) */
  seeds?: number;
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

const shaCache = new Map<string, Promise<string | undefined>>();

/** sha256 (hex) of a file the page serves; undefined where it cannot be read or hashed (no SubtleCrypto). */
function servedSha256(path: string): Promise<string | undefined> {
  let p = shaCache.get(path);
  if (!p) {
    p = (async () => {
      if (typeof crypto === 'undefined' || !crypto.subtle) return undefined;
      const r = await fetch(`${import.meta.env.BASE_URL}${path}`);
      if (!r.ok) return undefined;
      const digest = await crypto.subtle.digest('SHA-256', await r.arrayBuffer());
      return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
    })().catch(() => undefined);
    shaCache.set(path, p);
  }
  return p;
}

/**
 * The preset's robustness text for the checkpoint this page serves: until its hash is known (or where it cannot
 * be), the table's own; once known, a table measured on another checkpoint reads "not yet measured".
 */
function useRobustness(preset: TrainPreset): string {
  const [sha, setSha] = useState<{ slug: string; sha: string | undefined } | null>(null);
  useEffect(() => {
    let live = true;
    const cfg = presetBaseConfig(preset);
    const path = cfg.actor_rollout_ref.model.path;
    if (path !== 'sft') return;
    void servedSha256(sftCheckpointPath(cfg.lab.harness)).then((s) => {
      if (live) setSha({ slug: preset.slug, sha: s });
    });
    return () => {
      live = false;
    };
  }, [preset]);
  return presetRobustness(preset, sha?.slug === preset.slug ? sha.sha : undefined);
}

/** A preset text's inline markdown (inlineMarkdown.ts) as elements. */
function Markdown({ text }: { text: string }) {
  return <Spans spans={parseInline(text)} />;
}

/** A preset's texts, in the order the picker and the dashboard's notes show them. */
export function PresetText({ preset, testIds = false }: { preset: TrainPreset; testIds?: boolean }) {
  const robustness = useRobustness(preset);
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
        <Markdown text={robustness} />
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
      const first = presetConfigs(preset, {
        seed: props.seed,
        steps: props.steps,
        overrides: props.overrides,
      });
      const seed0 = first[0].config.lab.seed;
      const bySeed = [first.map((r) => r.config)];
      for (let k = 1; k < (props.seeds ?? 1); k++)
        bySeed.push(
          presetConfigs(preset, { seed: seed0 + k, steps: props.steps, overrides: props.overrides }).map(
            (r) => r.config,
          ),
        );
      return { bySeed, seed0 };
    } catch (e) {
      return { error: (e as Error).message };
    }
  }, [preset, props.seed, props.steps, props.seeds, props.overrides]);
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
              onClick={() => resolved?.bySeed && props.onRun(preset, resolved.bySeed)}
            >
              {resolved?.bySeed && resolved.bySeed.length > 1
                ? `Run ${preset.variants.length} × ${resolved.bySeed.length} runs on seeds ${resolved.seed0}–${resolved.seed0 + resolved.bySeed.length - 1}`
                : `Run ${preset.variants.length} runs on seed ${resolved?.seed0}`}
            </button>
          )}
        </div>
      )}
    </section>
  );
}
