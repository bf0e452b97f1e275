/**
 * Presets in the Train tab: the picker (ui/presets/PresetPicker.tsx) with the page's link (`?preset=slug&seed=S&
 * steps=N&seeds=K`, presetUrl.ts), whose Run queues the preset's variants as runs of the tab on their shared seed,
 * or on each of K seeds as one group (trained in parallel trainer workers as the machine allows; the dashboard then
 * draws each variant's mean ± 95% interval across the seeds), and overlays them; and, beside the dashboard of a preset's run, the preset's explanation, what to look for, the
 * source, what is not modelled and the measured robustness, with its metrics per variant (first → last, mean).
 */
import { useCallback, useMemo, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { TrainConfig, TrainConfigPatch } from '../../train/config';
import { comparePresetRuns } from '../../train/presetMetrics';
import { getPreset, type TrainPreset } from '../../train/presets';
import { PresetPicker, PresetText } from '../presets/PresetPicker';
import { type PresetLink, readPresetLink, writePresetLink } from '../presets/presetUrl';
import { useView } from '../store';
import { formKey } from './formConfig';
import type { RunMeta } from './runData';
import { useTrain } from './trainStore';

/** The smallest seed and step count a preset run takes. */
const PRESET_MIN = { seed: 0, steps: 1 } as const;

/** The preset link the page was opened with (read once: later changes are written by the panel itself). */
export function initialPresetLink(): ReturnType<typeof readPresetLink> {
  return readPresetLink(typeof location !== 'undefined' ? location.search : '');
}

function writeLink(link: PresetLink | null): void {
  const search = writePresetLink(location.search, link);
  history.replaceState(null, '', `${location.pathname}${search}${location.hash}`);
}

export function PresetsPanel() {
  const [opened] = useState(initialPresetLink);
  const [selected, setSelected] = useState<string | null>(opened.link?.slug ?? null);
  const [error, setError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const startPreset = useTrain((s) => s.startPreset);
  // the form's engine choice carries over (auto: WebGPU on a hardware adapter, else the CPU engine); a checkpoint
  // after every step, as the tab's own runs, so an interrupted variant resumes where it stopped
  const backend = useView((s) => (s as unknown as Record<string, string>)[formKey('lab.backend')]);
  const overrides = useMemo(
    (): TrainConfigPatch => ({
      lab: { backend: backend as TrainConfig['lab']['backend'] },
      trainer: { save_freq: 1 },
    }),
    [backend],
  );
  // the seed and step count: the link's, else the preset's own (an empty field); both are part of the link
  const [seed, setSeed] = useState<number | undefined>(opened.link?.seed);
  const [steps, setSteps] = useState<number | undefined>(opened.link?.steps);
  const [seeds, setSeeds] = useState<number | undefined>(opened.link?.seeds);
  const onSelect = useCallback(
    (slug: string | null) => {
      setSelected(slug);
      writeLink(slug ? { slug, seed, steps, seeds } : null);
    },
    [seed, steps, seeds],
  );
  const setNumber = (key: 'seed' | 'steps' | 'seeds', raw: string, min: number) => {
    const v = raw === '' ? undefined : Number(raw);
    if (v !== undefined && !(Number.isInteger(v) && v >= min)) return;
    const next = { seed, steps, seeds, [key]: v };
    if (key === 'seed') setSeed(v);
    else if (key === 'steps') setSteps(v);
    else setSeeds(v);
    if (selected) writeLink({ slug: selected, ...next });
  };
  const onRun = useCallback(
    async (preset: TrainPreset, bySeed: TrainConfig[][]) => {
      try {
        setError(null);
        setStarting(true);
        writeLink({ slug: preset.slug, seed, steps, seeds });
        await startPreset(preset, bySeed);
      } catch (e) {
        setError((e as Error).message);
      } finally {
        setStarting(false);
      }
    },
    [startPreset, seed, steps, seeds],
  );
  return (
    <section className="train-presets" aria-label="Presets" data-testid="train-presets">
      <h2>Presets</h2>
      <p className="muted small">
        The field's known failure modes of harnessed RL: a preset sets every control and runs its two to four
        configurations on one seed, or on a group of seeds (each variant then charted as its mean ± 95%
        interval across the seeds, the group's runs in parallel workers as the machine allows), overlaid in
        the dashboard. A link with <code>?preset=NAME&amp;seed=S&amp;steps=N&amp;seeds=K</code> opens one.
      </p>
      {opened.problems.length > 0 && (
        <p className="note" data-testid="preset-link-problems">
          The link's preset parameters could not all be used: {opened.problems.join('; ')}.
        </p>
      )}
      <div className="preset-scale">
        {(['seed', 'steps'] as const).map((key) => (
          <label className="field" key={key}>
            {key}{' '}
            <input
              type="number"
              min={PRESET_MIN[key]}
              step={1}
              data-testid={`preset-${key}`}
              placeholder="preset's"
              value={(key === 'seed' ? seed : steps) ?? ''}
              onChange={(e) => setNumber(key, e.target.value, PRESET_MIN[key])}
            />
          </label>
        ))}
        <label className="field">
          seeds{' '}
          <input
            type="number"
            min={1}
            step={1}
            data-testid="preset-seeds"
            placeholder="1"
            value={seeds ?? ''}
            onChange={(e) => setNumber('seeds', e.target.value, 1)}
          />
        </label>
      </div>
      <PresetPicker
        selected={selected}
        onSelect={onSelect}
        onRun={(p, v) => void onRun(p, v)}
        seed={seed}
        steps={steps}
        seeds={seeds}
        overrides={overrides}
        busy={starting}
      />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

const num = (v: number) =>
  Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : Number(v.toPrecision(3)).toString()) : '—';

/** The preset of the selected run, beside the charts: its text and its metrics per variant. */
export function PresetNotes(props: { run: RunMeta }) {
  const { runs, metrics } = useTrain(useShallow((s) => ({ runs: s.runs, metrics: s.metrics })));
  const p = props.run.preset;
  const preset = useMemo(() => {
    if (!p) return null;
    try {
      return getPreset(p.slug);
    } catch (e) {
      return (e as Error).message;
    }
  }, [p]);
  const group = useMemo(
    () =>
      p
        ? runs
            .filter((r) => r.preset?.group === p.group)
            .sort(
              (a, b) =>
                (typeof preset === 'object' && preset
                  ? preset.variants.findIndex((v) => v.name === a.preset?.variant) -
                    preset.variants.findIndex((v) => v.name === b.preset?.variant)
                  : 0) || a.createdAt - b.createdAt,
            )
        : [],
    [runs, p, preset],
  );
  const rows = useMemo(
    () =>
      preset && typeof preset === 'object'
        ? comparePresetRuns(
            preset.metrics,
            group.map((r) => ({ variant: r.preset?.variant ?? r.name, steps: metrics[r.id] ?? [] })),
          )
        : [],
    [preset, group, metrics],
  );
  if (!p || !preset) return null;
  if (typeof preset === 'string')
    return (
      <aside className="preset-notes" data-testid="preset-notes">
        <p className="error">This run's preset is not in this page's registry: {preset}</p>
      </aside>
    );
  return (
    <aside className="preset-notes" aria-label="Preset" data-testid="preset-notes" data-preset={preset.slug}>
      <h3>{preset.title}</h3>
      <PresetText preset={preset} testIds />
      <table className="preset-compare" data-testid="preset-compare">
        <caption>Per run: first step → last step (mean); one value when they agree</caption>
        <thead>
          <tr>
            <th>metric</th>
            {group.map((r) => (
              <th key={r.id}>
                <span className="swatch" style={{ background: r.color }} /> {r.preset?.variant}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.metric}>
              <td>{row.metric}</td>
              {row.cells.map((c, i) => (
                <td key={group[i]?.id ?? i}>
                  {!Number.isFinite(c.mean)
                    ? '—'
                    : c.first === c.last && c.last === c.mean
                      ? num(c.first)
                      : `${num(c.first)} → ${num(c.last)} (${num(c.mean)})`}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </aside>
  );
}
