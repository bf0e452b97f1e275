import { type ColorScale, fmt, MASK_COLORS } from './colorScale';

/**
 * Legend for a chip colouring: a gradient bar with its domain ends (and 0 for diverging scales); `ends` names what
 * each end means (e.g. suppressed … reinforced).
 */
export function Legend(props: { label: string; scale: ColorScale; ends?: [string, string] }) {
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
    <div className="legend" data-testid="legend" data-lo={scale.lo} data-hi={scale.hi}>
      <span className="legend-label">{props.label}</span>
      <span className="legend-end">
        {props.ends && <span className="legend-end-name">{props.ends[0]}</span>}
        {fmt(scale.lo, 3)}
      </span>
      <span
        className="legend-bar"
        role="img"
        aria-label={`colour scale from ${fmt(scale.lo, 3)} to ${fmt(scale.hi, 3)}${
          props.ends ? ` (${props.ends[0]} to ${props.ends[1]})` : ''
        }`}
        style={{ background: `linear-gradient(to right, ${scale.stops.join(',')})` }}
      >
        {scale.kind === 'diverging' && <span className="legend-zero">0</span>}
      </span>
      <span className="legend-end">
        {fmt(scale.hi, 3)}
        {props.ends && <span className="legend-end-name">{props.ends[1]}</span>}
      </span>
    </div>
  );
}
