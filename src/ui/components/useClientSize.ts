import { type RefObject, useLayoutEffect, useState } from 'react';

/** The client width or height of `ref`'s element, kept up to date (a ResizeObserver); `initial` until measured. */
export function useClientSize(
  ref: RefObject<HTMLElement | null>,
  dimension: 'clientWidth' | 'clientHeight',
  initial: number,
): number {
  const [size, setSize] = useState(initial);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    setSize(el[dimension]);
    const ro = new ResizeObserver(() => setSize(el[dimension]));
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref, dimension]);
  return size;
}
