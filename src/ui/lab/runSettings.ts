/**
 * Settings a training run brings: a step's batch opened from the Train tab (a chart point, a step link) is shown
 * under the run's own trainer settings, for that batch only. They are held here, not in the URL, keyed by the
 * trace they came with: while another trace is on screen (a sample, an import) the user's own settings apply
 * again, and `revert` hands that batch back to them too. The views list every setting their numbers use, with
 * its origin (`settingsInSight`).
 */
import { create } from 'zustand';
import {
  DEFAULT_TRAINER_SETTINGS,
  resolveTrainerOptionsLenient,
  settingsOf,
  TRAINER_OPTIONS,
  type TrainerOptions,
  type TrainerSettings,
} from '../../core/pipeline/options';

export interface RunSettings {
  runId: string;
  runName: string;
  step: number;
  /** the trace source (labStore's `source`) they belong to */
  source: string;
  settings: TrainerSettings;
}

interface RunSettingsStore {
  active: RunSettings | null;
  bring: (r: RunSettings) => void;
  revert: () => void;
}

export const useRunSettings = create<RunSettingsStore>((set) => ({
  active: null,
  bring: (r) => set({ active: { ...r, settings: settingsOf(r.settings) } }),
  revert: () => set({ active: null }),
}));

/** The run's settings when they belong to the trace on screen, else none. */
export function runSettingsFor(active: RunSettings | null, source: string | null): RunSettings | null {
  return active !== null && source !== null && active.source === source ? active : null;
}

/** The user's settings (the URL's), with a run's over them while its batch is on screen; checked by core. */
export function effectiveOptions(
  user: Partial<Record<keyof TrainerSettings, unknown>>,
  run: RunSettings | null,
): TrainerOptions {
  const partial: Partial<Record<keyof TrainerSettings, unknown>> = {};
  for (const o of TRAINER_OPTIONS) partial[o.name] = run ? run.settings[o.name] : user[o.name];
  return resolveTrainerOptionsLenient(partial).options;
}

export interface SettingInSight {
  name: keyof TrainerSettings;
  key: string;
  label: string;
  value: string;
  /** differs from the table's default */
  changed: boolean;
  /** where the value comes from: the user's settings, or the run whose batch is shown */
  origin: 'yours' | 'run';
}

const show = (v: unknown) => (v === null ? 'null' : String(v));

/** Every setting the numbers on screen use, marking those that differ from the defaults and their origin. */
export function settingsInSight(
  user: Partial<Record<keyof TrainerSettings, unknown>>,
  run: RunSettings | null,
): SettingInSight[] {
  const o = effectiveOptions(user, run);
  return TRAINER_OPTIONS.map((s) => ({
    name: s.name,
    key: s.key,
    label: s.label,
    value: show(o[s.name]),
    changed: o[s.name] !== DEFAULT_TRAINER_SETTINGS[s.name],
    origin: run ? 'run' : 'yours',
  }));
}
