import { useEffect, useRef } from 'react';
import type { ColorScale } from '../tokens/colorScale';
import { useClientSize } from './useClientSize';

const OBSERVATION = '#d9dbe1';
const HATCH = '#b9bcc6';

/**
 * One training row as a strip along its response tokens: each trainable token coloured by its weight (the scale of
 * the page's chips), observation tokens (mask 0) shaded grey and hatched, call starts ticked. When the row has more
 * tokens than pixels, a pixel shows the token of largest |weight| among those it covers, so a spike never hides.
 */
export function WeightStrip(props: {
  /** per token of the row; shown × `factor` (the page's sign convention, when `values` are core's ∂L/∂logπ) */
  values: ArrayLike<number>;
  factor?: 1 | -1;
  /** per token: 1 trainable, 0 observation */
  mask: ArrayLike<number>;
  scale: ColorScale;
  /** token indices where a new call's tokens start */
  callStarts?: readonly number[];
  height?: number;
  label: string;
  testId?: string;
}) {
  const { values, mask, scale, callStarts } = props;
  const factor = props.factor ?? 1;
  const height = props.height ?? 14;
  const box = useRef<HTMLDivElement>(null);
  const width = useClientSize(box, 'clientWidth', 0);
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const c = canvas.current;
    if (!c || width <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    const g = c.getContext('2d');
    if (!g) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    const n = values.length;
    if (n === 0) return;
    const perPx = n / width;
    const cols = Math.min(width, n);
    const colW = width / cols;
    // neighbouring columns mostly share a weight (one advantage per row): its colour string is made once
    let lastV = Number.NaN;
    let lastColor = '';
    for (let x = 0; x < cols; x++) {
      const a = Math.floor((x * n) / cols);
      const b = Math.max(a + 1, Math.floor(((x + 1) * n) / cols));
      let best = Number.NaN;
      let trainable = false;
      for (let t = a; t < b; t++) {
        if (!mask[t]) continue;
        trainable = true;
        const v = values[t];
        if (Number.isNaN(best) || Math.abs(v) > Math.abs(best)) best = v;
      }
      const x0 = x * colW;
      if (!trainable) {
        g.fillStyle = OBSERVATION;
        g.fillRect(x0, 0, colW + 0.5, height);
        g.fillStyle = HATCH;
        // diagonal hatching every 4 px, drawn as short dashes so it survives any column width
        for (let y = (x0 % 4) - 4; y < height; y += 4) g.fillRect(x0, y, Math.max(1, colW * 0.5), 1);
      } else {
        const v = best * factor;
        if (!Object.is(v, lastV)) {
          lastV = v;
          lastColor = scale.color(v);
        }
        g.fillStyle = lastColor;
        g.fillRect(x0, 0, colW + 0.5, height);
      }
    }
    if (callStarts) {
      g.fillStyle = '#1d2230';
      for (const t of callStarts) if (t > 0) g.fillRect(Math.round(t / perPx) - 0.5, 0, 1.5, height);
    }
  }, [values, mask, scale, callStarts, width, height, factor]);
  return (
    <div ref={box} className="wstrip" style={{ height }} data-testid={props.testId}>
      <canvas ref={canvas} role="img" aria-label={props.label} style={{ width: '100%', height }} />
    </div>
  );
}
