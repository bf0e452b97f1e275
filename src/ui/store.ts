import { create } from 'zustand';
import { lossModeKeys, NULL_SPELLING } from '../core/config/fields';
import {
  DEFAULT_TRAINER_SETTINGS,
  getOptionSpec,
  type OptionSpec,
  resolveTrainerOptionsLenient,
  TRAINER_OPTIONS,
  type TrainerSettings,
} from '../core/pipeline/options';
import { DEFAULT_WEIGHT_SIGN, WEIGHT_SIGNS, type WeightSignName } from '../core/pipeline/sign';
import { COLOR_BY, type ColorBy } from './tokens/quantities';
import { type TrainFormFields, trainFormSchema } from './train/formConfig';
import { type Codec, codecs, decodeHashChecked, encodeHash, type HashProblem, type Schema } from './urlState';

export const TABS = ['trace', 'advantages', 'train', 'remote', 'models', 'scheduling'] as const;
export type Tab = (typeof TABS)[number];

export const TRACE_VIEWS = ['call', 'retok', 'merge'] as const;
export type TraceView = (typeof TRACE_VIEWS)[number];

/** The Train tab's views of its runs. */
export const TRAIN_VIEWS = ['dashboard', 'completions', 'timeline'] as const;
export type TrainView = (typeof TRAIN_VIEWS)[number];

/** What the page shows besides the trainer options: the tab, the sample, the selection and the colouring. */
export interface UiView {
  tab: Tab;
  /** bundled sample file name ('' = the first bundled sample) */
  sample: string;
  /** selected rollout id ('' = the first) and call index */
  rollout: string;
  call: number;
  traceView: TraceView;
  colorBy: ColorBy;
  /** how effective weights are shown: the push −∂L/∂logπ or ∂L/∂logπ (core's registry) */
  sign: WeightSignName;
  /** the Remote tab's selected run id */
  run: string;
  /** the Train tab: selected run id, runs overlaid (comma list of ids), smoothing weight, view, selected step (-1: latest) */
  trainRun: string;
  trainCompare: string;
  trainSmoothing: number;
  trainView: TrainView;
  trainStep: number;
  /** the Scheduling tab: scenario, the mode drawn, and `key=value` overrides (comma list) */
  sim: string;
  simMode: string;
  simSet: string;
}

/**
 * Everything that defines what the page shows; all of it lives in the URL hash. The trainer options are core's
 * (upstream names, upstream defaults), one URL field each; values core does not accept fall back to the defaults
 * where they are used (lab/options.ts). The Train tab's config form is one field per training-config leaf
 * (train/formConfig.ts), keyed by its upstream path.
 */
export type ViewState = UiView & TrainerSettings;
/** ViewState plus the Train tab's form fields (held in the same store, set through `setForm`). */
export type UrlState = ViewState & TrainFormFields;

const uiSchema: Schema<UiView> = {
  tab: { key: 'tab', codec: codecs.oneOf(TABS), default: 'trace' },
  sample: { key: 'sample', codec: codecs.string, default: '' },
  rollout: { key: 'r', codec: codecs.string, default: '' },
  call: { key: 'c', codec: codecs.int, default: 0 },
  traceView: { key: 'tv', codec: codecs.oneOf(TRACE_VIEWS), default: 'call' },
  colorBy: { key: 'color', codec: codecs.oneOf(COLOR_BY), default: 'weight' },
  sign: {
    key: 'sign',
    codec: codecs.oneOf(WEIGHT_SIGNS.map((s) => s.name)),
    default: DEFAULT_WEIGHT_SIGN,
  },
  run: { key: 'run', codec: codecs.string, default: '' },
  trainRun: { key: 'trun', codec: codecs.string, default: '' },
  trainCompare: { key: 'tcmp', codec: codecs.string, default: '' },
  trainSmoothing: {
    key: 'tsmooth',
    codec: {
      parse: (r) => {
        const v = codecs.number.parse(r);
        return v !== undefined && v >= 0 && v < 1 ? v : undefined;
      },
      format: (v) => String(v),
      expects: 'a number in [0, 1)',
    },
    default: 0.6,
  },
  trainView: { key: 'tview', codec: codecs.oneOf(TRAIN_VIEWS), default: 'dashboard' },
  trainStep: { key: 'tstep', codec: codecs.int, default: -1 },
  sim: { key: 'sim', codec: codecs.string, default: 'agentic-8gpu' },
  simMode: { key: 'smode', codec: codecs.string, default: '' },
  simSet: { key: 'sset', codec: codecs.string, default: '' },
};

/** `null` stands for null in the URL, as in flags and overrides (core's config table). */
const orNull = <T>(c: Codec<T>): Codec<T | null> => ({
  parse: (r) => (r === NULL_SPELLING ? null : c.parse(r)),
  format: (v) => (v === null ? NULL_SPELLING : c.format(v)),
  expects: `${c.expects ?? 'a value'} or ${NULL_SPELLING}`,
});
const specCodec: Codec<number | string> = {
  parse: (r) => (r.trim() !== '' && Number.isFinite(Number(r)) ? Number(r) : r),
  format: (v) => String(v),
};

function codecOf(o: OptionSpec): Codec<unknown> {
  const c: Codec<unknown> = {
    enum: codecs.string,
    int: codecs.int,
    number: codecs.number,
    bool: codecs.bool,
    'nullable-int': orNull(codecs.int),
    'nullable-number': orNull(codecs.number),
    spec: orNull(specCodec),
  }[o.kind] as Codec<unknown>;
  return o.kind === 'enum' && o.nullable ? (orNull(codecs.string) as Codec<unknown>) : c;
}

const optionSchema = Object.fromEntries(
  TRAINER_OPTIONS.map((o) => [
    o.name,
    { key: o.urlKey, codec: codecOf(o), default: DEFAULT_TRAINER_SETTINGS[o.name] },
  ]),
) as unknown as Schema<TrainerSettings>;

export const viewSchema: Schema<UrlState> = {
  ...uiSchema,
  ...optionSchema,
  ...trainFormSchema(),
} as Schema<UrlState>;

interface Store extends ViewState {
  set: (patch: Partial<ViewState>) => void;
  /** the Train tab's form fields (`cfg.<config path>`: canonical strings) */
  setForm: (patch: Partial<TrainFormFields>) => void;
}

/** The Train tab's form fields of the store's state. */
export function formOf(s: ViewState): TrainFormFields {
  return s as unknown as TrainFormFields;
}

/**
 * What the page could not use of the link it was opened with (or of a hash the user typed): parameters the schema
 * rejects, and — checked where the data is — values that name nothing (an unknown sample or rollout, an option
 * value core refuses). Shown as a note naming each one; cleared by the next link or by dismissing it.
 */
export interface UrlNotes {
  problems: HashProblem[];
  /** the link's `r=` value, checked once the trace it names is loaded */
  linkRollout: string | null;
  /** the link's `sample=` value, checked once the sample list is loaded */
  linkSample: string | null;
  add: (p: HashProblem) => void;
  dismiss: () => void;
}

export const useUrlNotes = create<UrlNotes>((set) => ({
  problems: [],
  linkRollout: null,
  linkSample: null,
  add: (p) => set((s) => (s.problems.some((q) => q.key === p.key) ? s : { problems: [...s.problems, p] })),
  dismiss: () => set({ problems: [] }),
}));

/**
 * Links written before the config table still open: `none` (the old spelling of null) is read as `null`, and
 * the old `loss=<mode>` becomes the two upstream keys it selects (`pl=` policy_loss.loss_mode, `agg=`
 * loss_agg_mode); each translation is named in a note.
 */
export function translateLegacyHash(hash: string): { hash: string; notes: HashProblem[] } {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const notes: HashProblem[] = [];
  for (const o of TRAINER_OPTIONS) {
    const raw = params.get(o.urlKey);
    const nullable = o.nullable || o.kind.startsWith('nullable') || o.kind === 'spec';
    if (raw === 'none' && nullable) {
      params.set(o.urlKey, NULL_SPELLING);
      notes.push({
        key: o.urlKey,
        raw,
        message: `an older link's spelling of null; read as ${NULL_SPELLING}`,
      });
    }
  }
  const loss = params.get('loss');
  if (loss !== null) {
    params.delete('loss');
    const k = lossModeKeys(loss);
    const pl = getOptionSpec('policyLossMode').urlKey;
    const agg = getOptionSpec('lossAggMode').urlKey;
    if (!params.has(pl)) params.set(pl, k.policyLossMode);
    if (k.lossAggMode !== null && !params.has(agg)) params.set(agg, k.lossAggMode);
    notes.push({
      key: 'loss',
      raw: loss,
      message: `an older link's loss mode; read as ${pl}=${k.policyLossMode}${
        k.lossAggMode !== null ? ` ${agg}=${k.lossAggMode}` : ''
      } (policy_loss.loss_mode and loss_agg_mode)`,
    });
  }
  return { hash: params.toString(), notes };
}

function readHash(rawHash: string): UrlState {
  const legacy = translateLegacyHash(rawHash);
  const hash = legacy.hash;
  const decoded = decodeHashChecked(viewSchema, hash);
  const state = decoded.state;
  const problems = [...legacy.notes, ...decoded.problems];
  // values of the right form that core still refuses (an unknown loss mode, an estimator a trace cannot feed)
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const partial: Partial<Record<keyof TrainerSettings, unknown>> = {};
  for (const o of TRAINER_OPTIONS) partial[o.name] = state[o.name];
  for (const r of resolveTrainerOptionsLenient(partial).replaced) {
    const spec = TRAINER_OPTIONS.find((o) => o.name === r.name);
    if (!spec || problems.some((p) => p.key === spec.urlKey)) continue;
    const reason = r.reason.replace(/^.*?\): /, '');
    problems.push({
      key: spec.urlKey,
      raw: params.get(spec.urlKey) ?? String(state[r.name]),
      message: `${reason}; showing ${String(DEFAULT_TRAINER_SETTINGS[r.name] ?? NULL_SPELLING)}`,
    });
  }
  useUrlNotes.setState({
    problems,
    linkRollout: state.rollout !== '' ? state.rollout : null,
    linkSample: state.sample !== '' ? state.sample : null,
  });
  return state;
}

const initial: UrlState = readHash(typeof location !== 'undefined' ? location.hash : '');

export const useView = create<Store>((set) => ({
  ...initial,
  set: (patch) => set(patch),
  setForm: (patch) => set(patch as Partial<Store>),
}));

function viewOf(s: Store): UrlState {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(viewSchema)) out[k] = (s as unknown as Record<string, unknown>)[k];
  return out as unknown as UrlState;
}

/** Chromium ignores history updates past ~200 per 10 s: at most one every this many ms (held keys burst). */
const URL_WRITE_INTERVAL_MS = 100;

/**
 * Keeps the store and `location.hash` in step both ways. Returns an unsubscribe function. A change is written to
 * the URL right after the frame that shows it (history.replaceState can take tens of milliseconds on a busy
 * machine, so it does not delay that frame; a link copied right after a click is the view it shows), except within
 * a burst (keys held down): then the latest state is written when the interval since the last write has passed,
 * and before the page is hidden or left.
 */
export function bindViewToUrl(): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastWrite = Number.NEGATIVE_INFINITY;
  const write = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    lastWrite = performance.now();
    const hash = encodeHash(viewSchema, viewOf(useView.getState()));
    if (hash !== location.hash && !(hash === '' && location.hash === '')) {
      history.replaceState(null, '', hash === '' ? location.pathname + location.search : hash);
    }
  };
  const unsub = useView.subscribe(() => {
    if (timer !== null) return; // a write is due and reads the latest state
    const wait = lastWrite + URL_WRITE_INTERVAL_MS - performance.now();
    if (wait > 0) {
      timer = setTimeout(write, wait);
      return;
    }
    // after the next frame; the timer also writes it where no frame comes (a hidden page)
    const due = setTimeout(write, URL_WRITE_INTERVAL_MS);
    timer = due;
    requestAnimationFrame(() =>
      setTimeout(() => {
        if (timer === due) write();
      }, 0),
    );
  });
  const flush = () => {
    if (timer !== null) write();
  };
  const onHash = () => useView.getState().set(readHash(location.hash));
  window.addEventListener('hashchange', onHash);
  window.addEventListener('pagehide', flush);
  document.addEventListener('visibilitychange', flush);
  return () => {
    unsub();
    if (timer !== null) clearTimeout(timer);
    window.removeEventListener('hashchange', onHash);
    window.removeEventListener('pagehide', flush);
    document.removeEventListener('visibilitychange', flush);
  };
}
