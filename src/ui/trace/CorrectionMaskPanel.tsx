/**
 * verl's token-level rollout correction drawn on the batch: choose Token-TIS, Token-MIS or IcePop, move the
 * thresholds, and the selected call's tokens colour by what core's correction does to them (kept, truncated,
 * masked), with counts over the whole batch. Every class comes from core's `correctionMask`.
 */
import { useId, useMemo, useState } from 'react';
import {
  CORRECTION_MASK_MODE_INFO,
  CORRECTION_MASK_MODES,
  type CorrectionMask,
  type CorrectionMaskMode,
  correctionMask,
  MASK_CLASS_NAMES,
} from '../../core/algos/correctionMask';
import type { ReferenceStackName } from '../../core/algos/stacks';
import type { ResponseRows } from '../../core/batch/types';
import { fmt } from '../tokens/colorScale';

/**
 * Slider positions 0…SLIDER_STEPS on a log scale, fine near 1: the upper slider runs from 1 (left) to 10^decades,
 * the lower one from 10^−decades (left) to 1, so both tighten toward the middle.
 */
export const SLIDER_STEPS = 1000;
const DECADES = 1;

/** 6 significant digits: the threshold applied is the one the config line shows */
const round6 = (x: number) => Number(x.toPrecision(6));
/** upper bound at slider position s (≥ 1) */
export const upperAt = (s: number) => round6(10 ** ((s / SLIDER_STEPS) * DECADES));
/** lower bound at slider position s (≤ 1) */
export const lowerAt = (s: number) => round6(10 ** (-((SLIDER_STEPS - s) / SLIDER_STEPS) * DECADES));
const upperPositionOf = (v: number) => Math.round((Math.log10(v) / DECADES) * SLIDER_STEPS);
const lowerPositionOf = (v: number) => SLIDER_STEPS + Math.round((Math.log10(v) / DECADES) * SLIDER_STEPS);

export const CLASS_COLOR: Record<(typeof MASK_CLASS_NAMES)[number], string> = {
  unmeasured: '#e4e5e9',
  kept: '#c7e9c0',
  truncated: '#fdd49e',
  masked: '#ef6548',
};

export interface CorrectionMaskPanelProps {
  rows: ResponseRows;
  trainerLogProbs: ArrayLike<number>;
  rolloutLogProbs: ArrayLike<number>;
  /** the token id per batch position */
  responseIds: ArrayLike<number>;
  /** the batch positions to draw (the selected call's) */
  positions: Int32Array;
  tokenText: ReadonlyMap<number, string>;
  stack?: ReferenceStackName;
}

export function CorrectionMaskPanel(props: CorrectionMaskPanelProps) {
  const id = useId();
  const [mode, setMode] = useState<CorrectionMaskMode>('token_tis');
  const info = CORRECTION_MASK_MODE_INFO[mode];
  const [upperPos, setUpperPos] = useState(upperPositionOf(info.defaultUpper));
  const [lowerPos, setLowerPos] = useState(lowerPositionOf(info.defaultLower ?? 0.5));
  const upper = upperAt(upperPos);
  const lower = lowerAt(lowerPos);
  const { rows, trainerLogProbs, rolloutLogProbs, stack } = props;
  const result = useMemo((): CorrectionMask | string => {
    try {
      return correctionMask(rows, trainerLogProbs, rolloutLogProbs, mode, { upper, lower }, stack);
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
  }, [rows, trainerLogProbs, rolloutLogProbs, mode, upper, lower, stack]);
  const choose = (m: CorrectionMaskMode) => {
    const i = CORRECTION_MASK_MODE_INFO[m];
    setMode(m);
    setUpperPos(upperPositionOf(i.defaultUpper));
    if (i.defaultLower !== null) setLowerPos(lowerPositionOf(i.defaultLower));
  };
  return (
    <div className="correction-mask" data-testid="correction-mask">
      <div className="toolbar">
        <span className="field">
          <label htmlFor={`${id}-mode`}>Correction</label>
          <select
            id={`${id}-mode`}
            data-testid="rc-mode"
            value={mode}
            title={info.help}
            onChange={(e) => choose(e.target.value as CorrectionMaskMode)}
          >
            {CORRECTION_MASK_MODES.map((m) => (
              <option key={m} value={m} title={CORRECTION_MASK_MODE_INFO[m].help}>
                {CORRECTION_MASK_MODE_INFO[m].label}
              </option>
            ))}
          </select>
        </span>
        <span className="muted" data-testid="rc-bounds">
          bounds on {info.bounds}
        </span>
        {info.lower && <BoundSlider id={id} bound="lower" pos={lowerPos} value={lower} onPos={setLowerPos} />}
        <BoundSlider id={id} bound="upper" pos={upperPos} value={upper} onPos={setUpperPos} />
      </div>
      {typeof result === 'string' ? (
        <p className="bad" role="alert" data-testid="rc-error">
          {result}
        </p>
      ) : (
        <>
          <p data-testid="rc-counts">
            masked <b data-testid="rc-masked">{result.counts.masked}</b> · truncated{' '}
            <b data-testid="rc-truncated">{result.counts.truncated}</b> · kept{' '}
            <b data-testid="rc-kept">{result.counts.kept}</b> of{' '}
            <span data-testid="rc-measured">{result.counts.measured}</span> loss tokens · masked fraction{' '}
            <b data-testid="rc-fraction">{fmt(result.maskedFraction, 4)}</b>
            {result.counts.truncated > 0 && <> · truncated fraction {fmt(result.truncatedFraction, 4)}</>}
          </p>
          <p className="muted">
            <code data-testid="rc-config">{result.configText}</code>
          </p>
          <p className="muted">
            {MASK_CLASS_NAMES.map((c) => (
              <span key={c} className="tok" style={{ background: CLASS_COLOR[c] }}>
                {c === 'unmeasured' ? 'not in the loss / no log-prob' : c}
              </span>
            ))}
          </p>
          <div className="tokchips rc-tokens" data-testid="rc-tokens">
            {Array.from(props.positions, (p) => {
              const c = MASK_CLASS_NAMES[result.classes[p]];
              const idAt = props.responseIds[p];
              const ratio = Math.exp(trainerLogProbs[p] - rolloutLogProbs[p]);
              const w = result.weights?.[p];
              return (
                <span
                  key={p}
                  className="tok"
                  data-class={c}
                  data-pos={p}
                  style={{ background: CLASS_COLOR[c] }}
                  title={`${c} · ρ = ${fmt(ratio, 6)}${w !== undefined && c !== 'unmeasured' ? ` · weight ${fmt(w, 6)}` : ''}`}
                >
                  {props.tokenText.get(idAt) ?? `#${idAt}`}
                </span>
              );
            })}
          </div>
        </>
      )}
    </div>
  );
}

/** One threshold's slider (positions 0…SLIDER_STEPS) with the bound it gives. */
function BoundSlider(props: {
  id: string;
  bound: 'lower' | 'upper';
  pos: number;
  value: number;
  onPos: (pos: number) => void;
}) {
  const { id, bound, pos, value, onPos } = props;
  return (
    <span className="field">
      <label htmlFor={`${id}-${bound}`}>{bound}</label>
      <input
        id={`${id}-${bound}`}
        data-testid={`rc-${bound}`}
        type="range"
        min={0}
        max={SLIDER_STEPS}
        value={pos}
        onChange={(e) => onPos(Number(e.target.value))}
      />
      <output data-testid={`rc-${bound}-value`}>{fmt(value, 4)}</output>
    </span>
  );
}
