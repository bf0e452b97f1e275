import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { command as analyze } from '../../src/cli/commands/analyze';
import { analyzeTrace } from '../../src/core/analyze';
import { whyNoRows } from '../../src/core/pipeline/noRows';
import { resolveTrainerOptions } from '../../src/core/pipeline/options';
import { computeTrainerView } from '../../src/core/pipeline/trainer';
import { parseTraceText } from '../../src/core/trace/io';
import type { ModelCall, Rollout } from '../../src/core/trace/types';

const root = join(import.meta.dirname, '..', '..');
const nemo = () =>
  parseTraceText(
    readFileSync(join(root, 'public', 'samples', 'frameworks', 'nemo-gym-coding.jsonl'), 'utf8'),
  );

function call(prompt: number[], response: number[], extra: Partial<ModelCall> = {}): ModelCall {
  return {
    request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from(prompt),
    responseTokenIds: Int32Array.from(response),
    responseLogProbs: Float32Array.from(response, () => -0.5),
    httpStatus: 200,
    ...extra,
  };
}

function rollout(id: string, dataId: string, reward: number | null, calls: ModelCall[]): Rollout {
  return {
    rolloutId: id,
    dataId,
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: reward === null ? [] : [{ value: reward }],
    finalReward: reward,
    metadata: {},
  };
}

describe('why no rows', () => {
  it('a zero-variance group imported from NeMo Gym gets advantage exactly 0, with the reason', () => {
    const t = nemo();
    expect(t.format).toBe('nemo-gym');
    const view = computeTrainerView({ rollouts: t.rollouts });
    const b = view.batch;
    const entries = whyNoRows(t.rollouts, view.options, view);
    const zero = new Set(
      entries.filter((e) => e.reasons[0]?.rule === 'zero_variance_group').map((e) => e.rollout),
    );
    expect(zero.size).toBeGreaterThan(0);
    let checked = 0;
    for (let r = 0; r < b.nRows; r++) {
      const ri = b.rowRollout[r];
      const rewardsOfGroup = new Set(
        t.rollouts.filter((x) => x.dataId === b.dataIds[r]).map((x) => x.finalReward),
      );
      // a group is zero-variance exactly when its rollouts' rewards agree, and then it is listed
      expect(zero.has(ri)).toBe(rewardsOfGroup.size === 1);
      for (let k = b.offsets[r]; k < b.offsets[r + 1]; k++) {
        if (!view.responseMask[k]) continue;
        if (zero.has(ri)) expect(Object.is(view.advantages[k], 0)).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
    // the groups that mix rewards do move the policy
    const moving = t.rollouts.filter((_, i) => !zero.has(i));
    expect(moving.length).toBeGreaterThan(0);
    const e = entries.find((x) => zero.has(x.rollout));
    expect(e?.reasons[0].where).toBe(`group ${e?.dataId}`);
    expect(e?.reasons[0].detail).toMatch(/exactly 0/);
    expect(e?.noGradient).toBe(true);
    // lab analyze reports the same entries
    const a = analyzeTrace(t, {}, { noRetokenization: true });
    expect(a.noRows).toEqual(entries);
  });

  it('names each rule and where it applied', () => {
    const rs = [
      rollout('ok-a', 'g0', 1, [call([1, 2], [3, 4])]),
      rollout('ok-b', 'g0', 0, [call([1, 2], [5, 6])]),
      rollout('failed', 'g1', 1, [
        call([1], [2], { error: 'timeout' }),
        call([1, 2, 3], [4], { httpStatus: 503 }),
      ]),
      rollout('empty', 'g2', 1, [call([1, 2], [])]),
      rollout('nocalls', 'g3', 1, []),
      rollout('long-prompt', 'g4', 1, [
        call(
          Array.from({ length: 40 }, (_, i) => i + 1),
          [7],
        ),
      ]),
      rollout('unrewarded', 'g0', null, [call([1, 2], [8, 9])]),
    ];
    const options = resolveTrainerOptions({ maxPromptLength: 32 });
    const view = computeTrainerView({ rollouts: rs, options });
    const byId = new Map(whyNoRows(rs, options, view).map((e) => [e.rolloutId, e]));
    expect(byId.has('ok-a')).toBe(false);
    expect(byId.get('failed')?.reasons).toEqual([
      { rule: 'every_call_dropped', where: 'calls[0]', detail: 'failed call: timeout' },
      { rule: 'every_call_dropped', where: 'calls[1]', detail: 'failed call: HTTP 503' },
    ]);
    expect(byId.get('empty')?.reasons.map((r) => r.rule)).toEqual(['empty_response']);
    expect(byId.get('nocalls')?.reasons.map((r) => r.rule)).toEqual(['no_calls']);
    const long = byId.get('long-prompt');
    expect(long?.rows).toBe(1);
    expect(long?.trainedRows).toBe(0);
    expect(long?.reasons[0]).toMatchObject({ rule: 'truncation', where: 'data.max_prompt_length = 32' });
    const un = byId.get('unrewarded');
    expect(un?.reasons[0]).toMatchObject({ rule: 'no_reward', where: 'final_reward' });
    // it still trains on the filler reward in a group with rewards 1 and 0
    expect(un?.noGradient).toBe(false);
  });

  it('explains every rollout when the trainer builds no rows at all, and text-only calls', () => {
    const verl = parseTraceText('{"input": "q", "output": "a", "score": 1, "step": 0}\n');
    const options = resolveTrainerOptions({});
    expect(() => computeTrainerView({ rollouts: verl.rollouts, options })).toThrow(/zero training rows/);
    const entries = whyNoRows(verl.rollouts, options, null);
    expect(entries).toHaveLength(1);
    expect(entries[0].reasons[0].rule).toBe('no_token_ids');
    expect(entries[0].reasons[0].detail).toMatch(/text only/);
  });

  it('lab analyze prints each rollout without gradient with its rule and where', async () => {
    const out: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((m: string) => void out.push(m));
    const file = join(root, 'public', 'samples', 'frameworks', 'nemo-gym-coding.jsonl');
    try {
      expect(await analyze.run([file, '--tokenizer', 'none'])).toBe(0);
    } finally {
      vi.restoreAllMocks();
    }
    const text = out.join('\n');
    const t = nemo();
    const view = computeTrainerView({ rollouts: t.rollouts });
    const entries = whyNoRows(t.rollouts, view.options, view).filter((e) => e.noGradient);
    expect(entries.length).toBeGreaterThan(0);
    expect(text).toContain(
      `why no rows: ${entries.length} of ${t.rollouts.length} rollouts give no training rows or no gradient`,
    );
    for (const e of entries)
      expect(text).toContain(
        `${e.rolloutId} (group ${e.dataId}; ${e.rows} rows, ${e.trainedRows} trained): zero_variance_group at group ${e.dataId}`,
      );
  });
});
