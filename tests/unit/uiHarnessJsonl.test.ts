import { describe, expect, it } from 'vitest';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import { rolloutsToJsonl } from '../../src/harness/traceJsonl';
import { looksLikeHarnessJsonl, parseHarnessJsonl } from '../../src/ui/lab/harnessJsonl';
import { parseTrace } from '../../src/ui/lab/pipeline';

function rollout(id: string, lp: number[]): Rollout {
  const call: ModelCall = {
    request: { messages: [{ role: 'user', content: 'hi' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'yo' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from([1, 2]),
    responseTokenIds: Int32Array.from([3, 4]),
    responseLogProbs: Float32Array.from(lp),
    httpStatus: 200,
  };
  return {
    rolloutId: id,
    dataId: 'g',
    isTrain: true,
    state: 'succeeded',
    calls: [call],
    rewards: [{ value: 1 }],
    finalReward: 1,
    metadata: {},
  };
}

describe('traces as lab rollout writes them', () => {
  it('are recognised and read through core’s validation, bad lines reported and skipped', () => {
    const good = rolloutsToJsonl([rollout('a', [-0.5, -1]), rollout('b', [-0.25, -2])]);
    const [l1, l2] = good.trim().split('\n');
    const badLogProbs = l2.replace('"responseLogProbs":[-0.25,-2]', '"responseLogProbs":[-0.25]');
    expect(badLogProbs).not.toBe(l2);
    const badPrompt = l1
      .replace(/"promptTokenIds":\[1,2\],?/, '')
      .replace('"rolloutId":"a"', '"rolloutId":"c"');
    const text = [l1, 'not json', badLogProbs, badPrompt, ''].join('\n');
    expect(looksLikeHarnessJsonl(text)).toBe(true);
    expect(looksLikeHarnessJsonl('{"rollout_id": "x", "calls": []}')).toBe(false);
    const t = parseHarnessJsonl(text, () => {});
    expect(t.rollouts.map((r) => r.rolloutId)).toEqual(['a']);
    expect(Array.from(t.rollouts[0].calls[0].responseLogProbs ?? [])).toEqual([-0.5, -1]);
    expect(t.issues.map((i) => i.where)).toEqual(['line 2', 'line 3', 'line 4']);
    expect(t.issues[1].message).toContain('responseTokenIds has 2 ids but responseLogProbs has 1');
    expect(`${t.issues[2].field} ${t.issues[2].message}`).toContain('prompt_token_ids is missing');
  });
  it('parseTrace falls back to them and names the format', () => {
    const { trace, summary } = parseTrace(rolloutsToJsonl([rollout('a', [-0.5, -1])]), 'x', () => {});
    expect(summary.format).toBe('harness-jsonl');
    expect(trace.rollouts).toHaveLength(1);
    expect(() => parseTrace('{"neither": 1}\n', 'y', () => {})).toThrow(/unknown trace format/);
  });
});
