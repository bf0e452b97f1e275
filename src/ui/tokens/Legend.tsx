import { type ColorScale, fmt, MASK_COLORS } from './colorScale';

/** Legend for a chip colouring: a gradient bar with its domain ends (and 0 for diverging scales). */
export function Legend(props: { label: string; scale: ColorScale; hint?: string }) {
  const { scale } = props;
  if (scale.kind === 'categorical') {
    return (
      <div className="legend" data-testid="legend">
        <span className="legend-label">{props.label}</span>
        <span className="legend-swatch" style={{ background: MASK_COLORS.trainable }} /> 1 trainable
        <span className="legend-swatch" style={{ background: MASK_COLORS.observation }} /> 0 observation
      </div>
    );
  }
  return (
    <div className="legend" data-testid="legend">
      <span className="legend-label">{props.label}</span>
      <span className="legend-end">{fmt(scale.lo, 3)}</span>
      <span
        className="legend-bar"
        style={{ background: `linear-gradient(to right, ${scale.stops.join(',')})` }}
      >
        {scale.kind === 'diverging' && <span className="legend-zero">0</span>}
      </span>
      <span className="legend-end">{fmt(scale.hi, 3)}</span>
      {props.hint && <span className="legend-label">{props.hint}</span>}
    </div>
  );
}
