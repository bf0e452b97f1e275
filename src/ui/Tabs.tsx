import { type KeyboardEvent, type ReactNode, useRef } from 'react';

export interface TabDef<T extends string> {
  id: T;
  label: string;
  render: () => ReactNode;
}

/** WAI-ARIA tabs: a tablist of buttons, arrow keys / Home / End move between them, one tabpanel shown. */
export function Tabs<T extends string>(props: { tabs: TabDef<T>[]; selected: T; onSelect: (id: T) => void }) {
  const { tabs, selected, onSelect } = props;
  const refs = useRef(new Map<T, HTMLButtonElement>());
  const index = Math.max(
    0,
    tabs.findIndex((t) => t.id === selected),
  );
  const move = (to: number) => {
    const t = tabs[(to + tabs.length) % tabs.length];
    onSelect(t.id);
    refs.current.get(t.id)?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowRight') move(index + 1);
    else if (e.key === 'ArrowLeft') move(index - 1);
    else if (e.key === 'Home') move(0);
    else if (e.key === 'End') move(tabs.length - 1);
    else return;
    e.preventDefault();
  };
  const current = tabs[index];
  return (
    <div className="tabs">
      <div role="tablist" aria-label="Areas" className="tablist" onKeyDown={onKey}>
        {tabs.map((t) => (
          <button
            key={t.id}
            ref={(el) => {
              if (el) refs.current.set(t.id, el);
              else refs.current.delete(t.id);
            }}
            type="button"
            role="tab"
            id={`tab-${t.id}`}
            aria-selected={t.id === current.id}
            aria-controls={`panel-${t.id}`}
            tabIndex={t.id === current.id ? 0 : -1}
            onClick={() => onSelect(t.id)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${current.id}`} aria-labelledby={`tab-${current.id}`} className="panel">
        {current.render()}
      </div>
    </div>
  );
}
