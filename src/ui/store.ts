import { create } from 'zustand';
import { COLOR_BY, type ColorBy } from './tokens/quantities';
import { codecs, decodeHash, encodeHash, type Schema } from './urlState';

export const TABS = ['trace', 'advantages', 'train', 'remote'] as const;
export type Tab = (typeof TABS)[number];

export const TRACE_VIEWS = ['call', 'retok', 'merge'] as const;
export type TraceView = (typeof TRACE_VIEWS)[number];

/**
 * Everything that defines what the page shows; all of it lives in the URL hash. Algorithm choices are stored by
 * their upstream names; values core does not know fall back to the defaults where they are used.
 */
export interface ViewState {
  tab: Tab;
  /** bundled sample file name ('' = the first bundled sample) */
  sample: string;
  /** selected rollout id ('' = the first) and call index */
  rollout: string;
  call: number;
  traceView: TraceView;
  colorBy: ColorBy;
  tokenSource: string;
  level: string;
  maxPromptLength: number;
  maxResponseLength: number;
  estimator: string;
  normAdvByStd: boolean;
  rolloutLevel: boolean;
  lossMode: string;
  clipLow: number;
  clipHigh: number;
  /** the Remote tab's selected run id */
  run: string;
}

export const viewSchema: Schema<ViewState> = {
  tab: { key: 'tab', codec: codecs.oneOf(TABS), default: 'trace' },
  sample: { key: 'sample', codec: codecs.string, default: '' },
  rollout: { key: 'r', codec: codecs.string, default: '' },
  call: { key: 'c', codec: codecs.int, default: 0 },
  traceView: { key: 'tv', codec: codecs.oneOf(TRACE_VIEWS), default: 'call' },
  colorBy: { key: 'color', codec: codecs.oneOf(COLOR_BY), default: 'weight' },
  tokenSource: { key: 'tokens', codec: codecs.string, default: 'engine' },
  level: { key: 'level', codec: codecs.string, default: 'trajectory' },
  maxPromptLength: { key: 'maxp', codec: codecs.int, default: 8192 },
  maxResponseLength: { key: 'maxr', codec: codecs.int, default: 8192 },
  estimator: { key: 'adv', codec: codecs.string, default: 'grpo' },
  normAdvByStd: { key: 'std', codec: codecs.bool, default: true },
  rolloutLevel: { key: 'rla', codec: codecs.bool, default: true },
  lossMode: { key: 'loss', codec: codecs.string, default: 'token-mean' },
  clipLow: { key: 'clo', codec: codecs.number, default: 0.2 },
  clipHigh: { key: 'chi', codec: codecs.number, default: 0.2 },
  run: { key: 'run', codec: codecs.string, default: '' },
};

interface Store extends ViewState {
  set: (patch: Partial<ViewState>) => void;
}

const initial: ViewState =
  typeof location !== 'undefined' ? decodeHash(viewSchema, location.hash) : decodeHash(viewSchema, '');

export const useView = create<Store>((set) => ({
  ...initial,
  set: (patch) => set(patch),
}));

function viewOf(s: Store): ViewState {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(viewSchema) as (keyof ViewState)[]) out[k] = s[k];
  return out as unknown as ViewState;
}

/**
 * Keeps the store and `location.hash` in step both ways. Returns an unsubscribe function. Writes to the URL are
 * deferred to a macrotask, so a burst of changes (keys held down, a toggle) costs one history update, made after
 * the view has rendered rather than before.
 */
export function bindViewToUrl(): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const write = () => {
    timer = null;
    const hash = encodeHash(viewSchema, viewOf(useView.getState()));
    if (hash !== location.hash && !(hash === '' && location.hash === '')) {
      history.replaceState(null, '', hash === '' ? location.pathname + location.search : hash);
    }
  };
  const unsub = useView.subscribe(() => {
    if (timer === null) timer = setTimeout(write, 0);
  });
  const onHash = () => useView.getState().set(decodeHash(viewSchema, location.hash));
  window.addEventListener('hashchange', onHash);
  return () => {
    unsub();
    if (timer !== null) clearTimeout(timer);
    window.removeEventListener('hashchange', onHash);
  };
}
