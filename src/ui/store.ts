import { create } from 'zustand';
import { codecs, decodeHash, encodeHash, type Schema } from './urlState';

export const TABS = ['trace', 'advantages', 'train', 'remote'] as const;
export type Tab = (typeof TABS)[number];

/** Everything that defines what the page shows; all of it lives in the URL hash. */
export interface ViewState {
  tab: Tab;
}

export const viewSchema: Schema<ViewState> = {
  tab: { key: 'tab', codec: codecs.oneOf(TABS), default: 'trace' },
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

/** Keeps the store and `location.hash` in step both ways. Returns an unsubscribe function. */
export function bindViewToUrl(): () => void {
  const unsub = useView.subscribe((s) => {
    const hash = encodeHash(viewSchema, viewOf(s));
    if (hash !== location.hash && !(hash === '' && location.hash === '')) {
      history.replaceState(null, '', hash === '' ? location.pathname + location.search : hash);
    }
  });
  const onHash = () => useView.getState().set(decodeHash(viewSchema, location.hash));
  window.addEventListener('hashchange', onHash);
  return () => {
    unsub();
    window.removeEventListener('hashchange', onHash);
  };
}
