import { type KeyboardEvent, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
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

/** The line holding chip `i` (`lines` are the start indices of the lines). */
function lineOf(lines: Int32Array, i: number): number {
  let lo = 0;
  let hi = lines.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lines[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Tokens as coloured chips in windowed lines. Hovering or focusing a chip shows its position, id, text and
 * every quantity. The chips are ONE tab stop (roving tabindex): ←/→ move to the previous / next token, ↑/↓ to the
 * line above / below, Home / End to the first / last token. A click shows a chip's tooltip without taking the
 * focus, so the page's own keys keep working. One tooltip element is shared by all chips.
 */
export function TokenChips(props: TokenChipsProps) {
  const { ids, texts, quantities, colorKey, scale, positionBase = 0 } = props;
  const host = useRef<HTMLElement>(null);
  const [cells, setCells] = useState(80);
  const [active, setActive] = useState<{ i: number; x: number; y: number } | null>(null);
  /** the chip that holds the tab stop */
  const [focus, setFocus] = useState(0);
  /** set when the keys moved the tab stop: the new chip takes the focus once it is rendered */
  const moved = useRef(false);
  // a new list of tokens starts at its first chip; the same tokens in a new array (the batch view replacing the
  // engine's once the computation arrives) keep the tab stop where the keys left it
  const shown = useRef(ids);
  useEffect(() => {
    const prev = shown.current;
    shown.current = ids;
    let same = prev.length === ids.length;
    for (let i = 0; same && i < ids.length; i++) same = prev[i] === ids[i];
    if (!same) setFocus(0);
  }, [ids]);

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
  const tabStop = Math.min(focus, Math.max(0, ids.length - 1));

  useEffect(() => {
    if (!moved.current) return;
    moved.current = false;
    (host.current?.querySelector(`[data-i="${tabStop}"]`) as HTMLElement | null)?.focus();
  });

  const onKey = (e: KeyboardEvent) => {
    const target = e.target as HTMLElement;
    if (target.dataset.i === undefined || e.altKey || e.ctrlKey || e.metaKey) return;
    const i = Number(target.dataset.i);
    const line = lineOf(lines, i);
    const col = i - lines[line];
    const lineEnd = (l: number) => (l + 1 < lines.length ? lines[l + 1] : ids.length) - 1;
    let next: number;
    if (e.key === 'ArrowRight') next = Math.min(ids.length - 1, i + 1);
    else if (e.key === 'ArrowLeft') next = Math.max(0, i - 1);
    else if (e.key === 'ArrowDown')
      next = line + 1 < lines.length ? Math.min(lines[line + 1] + col, lineEnd(line + 1)) : i;
    else if (e.key === 'ArrowUp') next = line > 0 ? Math.min(lines[line - 1] + col, lineEnd(line - 1)) : i;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = ids.length - 1;
    else return;
    // the keys belong to the chips here: the page's call stepping (←/→) skips handled events
    e.preventDefault();
    moved.current = true;
    setFocus(next);
  };

  const chip = (i: number) => {
    const v = colorValues ? colorValues[i] : Number.NaN;
    const cls = props.chipClass?.(i);
    return (
      <span
        key={i}
        className={cls ? `tok ${cls}` : 'tok'}
        style={{ background: scale.color(v), color: scale.ink(v) }}
        data-i={i}
        tabIndex={i === tabStop ? 0 : -1}
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
  const stopLine = ids.length ? lineOf(lines, tabStop) : 0;
  return (
    <section
      ref={host}
      className="tokchips"
      aria-label={`${props.ariaLabel} (${ids.length} tokens; arrow keys move between them)`}
      data-testid={props.testId}
      onMouseOver={(e) => show(e.target)}
      onFocus={(e) => show(e.target)}
      onMouseLeave={() => setActive(null)}
      onBlur={() => setActive(null)}
      onKeyDown={onKey}
      onMouseDown={(e) => {
        // a click shows the tooltip (hover) without moving the focus into the chips
        if ((e.target as HTMLElement).closest('.tok')) e.preventDefault();
      }}
    >
      <div style={{ height }}>
        <VirtualList
          count={lines.length}
          rowHeight={LINE_HEIGHT}
          renderRow={renderLine}
          className="toklines"
          scrollToIndex={moved.current ? stopLine : undefined}
          alwaysRender={stopLine}
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
