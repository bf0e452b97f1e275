import { type ReactNode, useEffect, useRef, useState } from 'react';
import { useClientSize } from './useClientSize';

/**
 * Windowed list of fixed-height rows: only the rows in view (plus `overscan` on each side) are in the DOM, so
 * a list of 100k rows costs what a screenful costs. The outer element scrolls; an inner spacer has the full
 * height and the visible rows are absolutely positioned inside it.
 */
export function VirtualList(props: {
  count: number;
  rowHeight: number;
  renderRow: (index: number) => ReactNode;
  /** keep this row in view (e.g. the selected one) */
  scrollToIndex?: number;
  /** render this row even when it is scrolled out of view (the row holding a roving tab stop) */
  alwaysRender?: number;
  overscan?: number;
  className?: string;
  ariaLabel?: string;
  role?: string;
  testId?: string;
}) {
  const { count, rowHeight, renderRow, scrollToIndex, overscan = 6 } = props;
  const ref = useRef<HTMLDivElement>(null);
  const height = useClientSize(ref, 'clientHeight', 400);
  const [scrollTop, setScrollTop] = useState(0);

  useEffect(() => {
    const el = ref.current;
    if (!el || scrollToIndex === undefined || scrollToIndex < 0) return;
    const top = scrollToIndex * rowHeight;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + rowHeight > el.scrollTop + el.clientHeight)
      el.scrollTop = top + rowHeight - el.clientHeight;
  }, [scrollToIndex, rowHeight]);

  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(count, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  const rows: ReactNode[] = [];
  const row = (i: number) => (
    <div
      key={i}
      className="vrow"
      style={{ position: 'absolute', top: i * rowHeight, height: rowHeight, left: 0, right: 0 }}
    >
      {renderRow(i)}
    </div>
  );
  const extra = props.alwaysRender;
  if (extra !== undefined && extra >= 0 && extra < count && extra < first) rows.push(row(extra));
  for (let i = first; i < last; i++) rows.push(row(i));
  if (extra !== undefined && extra >= 0 && extra < count && extra >= last) rows.push(row(extra));
  return (
    <div
      ref={ref}
      className={props.className}
      style={{ overflowY: 'auto', position: 'relative' }}
      onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
      {...(props.role ? { role: props.role, 'aria-label': props.ariaLabel } : {})}
      data-testid={props.testId}
    >
      <div style={{ height: count * rowHeight, position: 'relative' }}>{rows}</div>
    </div>
  );
}
