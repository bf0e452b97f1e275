/**
 * The Trace view's per-token diff against the other reference stack (StackDiff with `perToken`), on a
 * multi-turn trace with masked observation spans under REINFORCE++ (the estimator verl 0.9.0 changed): the
 * table lists core's largest per-token differences in order, with the token text and the upstream change as
 * the cause, and a row selects its rollout and call.
 */
import { createElement } from 'react';
import { flushSync } from 'react-dom';
import { createRoot } from 'react-dom/client';
import { describe, expect, it } from 'vitest';
import { resolveTrainerOptions } from '../../src/core/pipeline/options';
import { getWeightSign, signed } from '../../src/core/pipeline/sign';
import { diffAgainstStack } from '../../src/core/weightDiff';
import { StackDiff } from '../../src/ui/advantages/StackDiff';
import { fmt } from '../../src/ui/tokens/colorScale';
import { correctionTrace } from '../fixtures/correctionTrace';

const tick = () => new Promise((r) => setTimeout(r, 50));

describe('Trace view: per-token weight differences against the other reference stack (Chromium)', () => {
  it('lists core’s largest per-token differences first, with token text and cause; a row selects its call', async () => {
    const rollouts = correctionTrace({ trainer: false });
    const options = resolveTrainerOptions({
      traceAggregatorLevel: 'trajectory',
      advEstimator: 'reinforce_plus_plus',
      enableRolloutLevelAdvantage: false,
    });
    const sign = getWeightSign('push');
    const expected = diffAgainstStack(rollouts, options, 'verl-0.9.0', { limit: 10 }).diff;
    if (!expected?.tokens) throw new Error('the two stacks should pair tokens on this trace');
    expect(expected.tokens.length).toBe(10);
    const tokenText = new Map(Array.from({ length: 200 }, (_, i) => [i, `t${i}`] as [number, string]));
    const selected: string[] = [];
    const host = document.createElement('div');
    document.body.append(host);
    const root = createRoot(host);
    flushSync(() =>
      root.render(
        createElement(StackDiff, {
          rollouts,
          options,
          sign,
          perToken: { tokenText, onSelect: (id, call) => selected.push(`${id}:${call}`) },
        }),
      ),
    );
    (host.querySelector('[data-testid=stack-diff-compute]') as HTMLButtonElement).click();
    for (let i = 0; i < 40 && !host.querySelector('[data-testid=stack-diff-tokens]'); i++) await tick();
    const rows = [...host.querySelectorAll('[data-testid=stack-diff-tokens] tbody tr')];
    expect(rows.length).toBe(10);
    const cells = rows.map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent));
    cells.forEach((c, i) => {
      const t = expected.tokens?.[i];
      if (!t) throw new Error(`row ${i} has no expected token`);
      expect(c).toEqual([
        t.rolloutId,
        String(t.call),
        `${t.row} · ${t.position}`,
        JSON.stringify(`t${t.tokenId}`),
        fmt(signed(t.a, sign)),
        fmt(signed(t.b, sign)),
        fmt(signed(t.delta, sign)),
        'lab.reference_stack',
      ]);
      if (i > 0) expect(Math.abs(t.delta)).toBeLessThanOrEqual(Math.abs(expected.tokens?.[i - 1].delta ?? 0));
    });
    // the cause is expanded into the listed upstream change
    expect(host.textContent).toContain(
      'REINFORCE++ carries the running return unchanged through mask-0 spans',
    );
    // no per-rollout / per-call table in this form
    expect(host.querySelectorAll('table').length).toBe(1);
    (rows[0].querySelector('button') as HTMLButtonElement).click();
    expect(selected).toEqual([`${expected.tokens[0].rolloutId}:${expected.tokens[0].call}`]);
    root.unmount();
    host.remove();
  });
});
