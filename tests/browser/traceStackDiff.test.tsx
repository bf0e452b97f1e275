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
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import { diffAgainstStack } from '../../src/core/weightDiff';
import { StackDiff } from '../../src/ui/advantages/StackDiff';
import { fmt } from '../../src/ui/tokens/colorScale';

const tick = () => new Promise((r) => setTimeout(r, 50));

function multiTurn(id: string, group: string, reward: number, idx: number): Rollout {
  const calls: ModelCall[] = [];
  let prompt = [1, 2, 3, 4 + idx];
  for (let turn = 0; turn < 3; turn++) {
    const response = Array.from({ length: 3 + ((idx + turn) % 3) }, (_, i) => 100 + 10 * turn + i + idx);
    calls.push({
      request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
      response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
      promptTokenIds: Int32Array.from(prompt),
      responseTokenIds: Int32Array.from(response),
      responseLogProbs: Float32Array.from(response, (_, i) => -0.3 - 0.07 * i),
      httpStatus: 200,
    });
    // a tool observation (masked at trajectory level) between the turns
    prompt = [...prompt, ...response, ...Array.from({ length: 2 + turn }, (_, i) => 500 + 10 * turn + i)];
  }
  return {
    rolloutId: id,
    dataId: group,
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [{ value: reward }],
    finalReward: reward,
    metadata: {},
    step: 0,
    sampleIdxInStep: idx,
  };
}

describe('Trace view: per-token weight differences against the other reference stack (Chromium)', () => {
  it('lists core’s largest per-token differences first, with token text and cause; a row selects its call', async () => {
    const rollouts = [1, 0, 0.5, 1, 0, 0.25, 1, 0].map((r, i) =>
      multiTurn(`r${i}`, i < 4 ? 'g0' : 'g1', r, i),
    );
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
