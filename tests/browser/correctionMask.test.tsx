/**
 * The Trace view's rollout-correction panel (Chromium): choosing Token-MIS and moving the threshold sliders
 * changes the masked count, the masked fraction and the token colours exactly as core's correctionMask says.
 */
import { createElement } from 'react';
import { flushSync } from 'react-dom';
import { createRoot } from 'react-dom/client';
import { describe, expect, it } from 'vitest';
import { correctionMask, MASK_CLASS_NAMES } from '../../src/core/algos/correctionMask';
import { resolveTrainerOptions } from '../../src/core/pipeline/options';
import { buildRows } from '../../src/core/pipeline/trainer';
import { trainerValuesOf } from '../../src/ui/lab/derive';
import { fmt } from '../../src/ui/tokens/colorScale';
import { CorrectionMaskPanel, lowerAt, upperAt } from '../../src/ui/trace/CorrectionMaskPanel';
import { correctionTrace } from '../fixtures/correctionTrace';

const tick = () => new Promise((r) => setTimeout(r, 20));

function setValue(el: HTMLInputElement | HTMLSelectElement, value: string, event: 'input' | 'change') {
  const proto = el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value')?.set?.call(el, value);
  el.dispatchEvent(new Event(event, { bubbles: true }));
}

describe('rollout-correction masks drawn live (Chromium)', () => {
  it('moving the Token-MIS sliders changes the masked count as core says', async () => {
    const rollouts = correctionTrace();
    const { batch } = buildRows(rollouts, resolveTrainerOptions({ traceAggregatorLevel: 'trajectory' }));
    const trainer = trainerValuesOf(batch, rollouts);
    if (!trainer || !batch.responseLogProbs) throw new Error('the trace should carry both log-probs');
    const rollout = batch.responseLogProbs;
    const positions = Int32Array.from({ length: batch.offsets[1] }, (_, i) => i);
    const tokenText = new Map(Array.from({ length: 600 }, (_, i) => [i, `t${i}`] as [number, string]));
    const host = document.createElement('div');
    document.body.append(host);
    const root = createRoot(host);
    flushSync(() =>
      root.render(
        createElement(CorrectionMaskPanel, {
          rows: batch,
          trainerLogProbs: trainer.logProbs,
          rolloutLogProbs: rollout,
          responseIds: batch.responseIds,
          positions,
          tokenText,
        }),
      ),
    );
    const q = <T extends Element>(id: string) => host.querySelector(`[data-testid=${id}]`) as T;
    const text = (id: string) => q<HTMLElement>(id).textContent;
    const shown = () => ({
      masked: Number(text('rc-masked')),
      fraction: text('rc-fraction'),
      classes: Array.from(q<HTMLElement>('rc-tokens').children, (c) => (c as HTMLElement).dataset.class),
    });
    const expectCore = (upperPos: number, lowerPos: number) => {
      const want = correctionMask(batch, trainer.logProbs, rollout, 'token_mis', {
        upper: upperAt(upperPos),
        lower: lowerAt(lowerPos),
      });
      const got = shown();
      expect(got.masked).toBe(want.counts.masked);
      expect(got.fraction).toBe(fmt(want.maskedFraction, 4));
      expect(got.classes).toEqual(Array.from(positions, (p) => MASK_CLASS_NAMES[want.classes[p]]));
      return got.masked;
    };

    // Token-TIS first: nothing masked
    expect(Number(text('rc-masked'))).toBe(0);
    setValue(q<HTMLSelectElement>('rc-mode'), 'token_mis', 'change');
    await tick();
    expect(text('rc-config')).toContain('rollout_rs=token_k1');
    const lowerPos = Number(q<HTMLInputElement>('rc-lower').value);
    const atDefault = expectCore(Number(q<HTMLInputElement>('rc-upper').value), lowerPos);

    // a tight upper bound masks more, a loose one fewer; each time the count is core's
    setValue(q<HTMLInputElement>('rc-upper'), '50', 'input');
    await tick();
    expect(Number(q<HTMLInputElement>('rc-upper').value)).toBe(50);
    const tight = expectCore(50, lowerPos);
    setValue(q<HTMLInputElement>('rc-upper'), '1000', 'input');
    await tick();
    const loose = expectCore(1000, lowerPos);
    expect(tight).toBeGreaterThan(atDefault);
    expect(loose).toBeLessThan(tight);
    expect(text('rc-upper-value')).toBe(fmt(upperAt(1000), 4));

    // the lower slider moves the other side (its right end is 1)
    setValue(q<HTMLInputElement>('rc-lower'), '980', 'input');
    await tick();
    expect(text('rc-lower-value')).toBe(fmt(lowerAt(980), 4));
    const tightLower = expectCore(1000, 980);
    expect(tightLower).toBeGreaterThan(loose);
    root.unmount();
    host.remove();
  });
});
