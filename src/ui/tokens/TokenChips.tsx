import { useLayoutEffect, useMemo, useRef, useState } from 'react';
import { VirtualList } from '../components/VirtualList';
import { type ColorScale, fmt } from './colorScale';
import { chipCells, chipLabel, layoutLines } from './layout';

/** One per-token quantity shown in the tooltip (and possibly used for colour). */
export interface TokenQuantity {
  key: string;
  label: string;
  /** aligned with the chips; NaN where absent */
  values: ArrayLike<number>;
}

export interface TokenChipsProps {
  ids: ArrayLike<number>;
  /** the text each token decodes to on its own */
  texts: readonly string[];
  quantities: readonly TokenQuantity[];
  /** the quantity that colours the chips, and its scale */
  colorKey: string;
  scale: ColorScale;
  /** first position's index in its row (shown in the tooltip as the token position) */
  positionBase?: number;
  /** extra per-chip class (e.g. marks a retokenization difference) */
  chipClass?: (i: number) => string | undefined;
  /** extra tooltip lines for a chip */
  extra?: (i: number) => string[];
  ariaLabel: string;
  testId?: string;
  maxHeight?: number;
}

const LINE_HEIGHT = 22;

/** Width of one character cell of the chip font, measured once per page. */
let cellWidth = 0;
function measureCell(host: HTMLElement): number {
  if (cellWidth > 0) return cellWidth;
  const probe = document.createElement('span');
  probe.className = 'tok';
  probe.style.cssText = 'position:absolute;visibility:hidden;padding:0;border:0;margin:0';
  probe.textContent = 'M'.repeat(40);
  host.appendChild(probe);
  cellWidth = probe.getBoundingClientRect().width / 40 || 7.2;
  host.removeChild(probe);
  return cellWidth;
}

/**
 * Tokens as coloured chips in windowed lines. Hovering or focusing a chip shows its position, id, text and
 * every quantity; Tab walks the chips in view. One tooltip element is shared by all chips.
 */
export function TokenChips(props: TokenChipsProps) {
  const { ids, texts, quantities, colorKey, scale, positionBase = 0 } = props;
  const host = useRef<HTMLElement>(null);
  const [cells, setCells] = useState(80);
  const [active, setActive] = useState<{ i: number; x: number; y: number } | null>(null);

  useLayoutEffect(() => {
    const el = host.current;
    if (!el) return;
    const cw = measureCell(el);
    const update = () => setCells(Math.max(8, Math.floor((el.clientWidth - 16) / cw)));
    update();
    const ro = new ResizeObserver(update);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const labels = useMemo(() => Array.from(texts, chipLabel), [texts]);
  const lines = useMemo(() => {
    const widths = labels.map(chipCells);
    const ends = texts.map((t) => t.endsWith('\n'));
    return layoutLines(widths, ends, cells);
  }, [labels, texts, cells]);
  const colorValues = quantities.find((q) => q.key === colorKey)?.values;

  const chip = (i: number) => {
    const v = colorValues ? colorValues[i] : Number.NaN;
    const cls = props.chipClass?.(i);
    return (
      <span
        key={i}
        className={cls ? `tok ${cls}` : 'tok'}
        style={{ background: scale.color(v), color: scale.ink(v) }}
        data-i={i}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: focusing a token shows its tooltip (keyboard access)
        tabIndex={0}
        aria-describedby={active?.i === i ? 'token-tooltip' : undefined}
      >
        {labels[i]}
      </span>
    );
  };

  const renderLine = (l: number) => {
    const end = l + 1 < lines.length ? lines[l + 1] : ids.length;
    const out = [];
    for (let i = lines[l]; i < end; i++) out.push(chip(i));
    return <div className="tokline">{out}</div>;
  };

  const show = (target: EventTarget | null) => {
    const el = (target as HTMLElement | null)?.closest?.('.tok') as HTMLElement | null;
    if (!el || el.dataset.i === undefined) return;
    const r = el.getBoundingClientRect();
    setActive({ i: Number(el.dataset.i), x: r.left, y: r.bottom });
  };

  const height = Math.min(props.maxHeight ?? 360, Math.max(1, lines.length) * LINE_HEIGHT + 4);
  return (
    <section
      ref={host}
      className="tokchips"
      aria-label={props.ariaLabel}
      data-testid={props.testId}
      onMouseOver={(e) => show(e.target)}
      onFocus={(e) => show(e.target)}
      onMouseLeave={() => setActive(null)}
      onBlur={() => setActive(null)}
    >
      <div style={{ height }}>
        <VirtualList
          count={lines.length}
          rowHeight={LINE_HEIGHT}
          renderRow={renderLine}
          className="toklines"
        />
      </div>
      {active && active.i < ids.length && (
        <div
          id="token-tooltip"
          role="tooltip"
          className="tooltip"
          data-testid="token-tooltip"
          style={{ left: Math.min(active.x, window.innerWidth - 300), top: active.y + 4 }}
        >
          <div className="tt-head">
            <span>
              token {positionBase + active.i} · id <b>{ids[active.i]}</b>
            </span>
          </div>
          <div className="tt-text">{JSON.stringify(texts[active.i])}</div>
          <table>
            <tbody>
              {quantities.map((q) => (
                <tr key={q.key} className={q.key === colorKey ? 'tt-color' : undefined}>
                  <th>{q.label}</th>
                  <td>{fmt(q.values[active.i], 6)}</td>
                </tr>
              ))}
              {props.extra?.(active.i).map((line) => (
                <tr key={line}>
                  <td colSpan={2}>{line}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
