import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/ui/lab/options';
import { type ViewState, viewSchema } from '../../src/ui/store';
import { decodeHash, encodeHash } from '../../src/ui/urlState';

describe('the page view in the URL', () => {
  it('round-trips every control, the selection and the colouring', () => {
    const v: ViewState = {
      tab: 'advantages',
      sample: 'coding-random',
      rollout: 'search-train-s42-3 / odd&id',
      call: 2,
      traceView: 'merge',
      colorBy: 'logprob',
      tokenSource: 'retokenize',
      level: 'transition',
      maxPromptLength: 2048,
      maxResponseLength: 1024,
      estimator: 'rloo',
      normAdvByStd: false,
      rolloutLevel: false,
      lossMode: 'per_rollout_mean',
      clipLow: 0.1,
      clipHigh: 0.28,
      run: 'run-mx4hm6kj-d71499',
    };
    const hash = encodeHash(viewSchema, v);
    expect(decodeHash(viewSchema, hash)).toEqual(v);
    for (const k of [
      'tab=',
      'sample=',
      'r=',
      'c=',
      'tv=',
      'color=',
      'tokens=',
      'level=',
      'maxp=',
      'maxr=',
      'adv=',
      'std=',
      'rla=',
      'loss=',
      'clo=',
      'chi=',
      'run=',
    ])
      expect(hash).toContain(k);
  });
  it('falls back to core’s defaults for names core does not know', () => {
    const v = decodeHash(viewSchema, '#adv=nonsense&loss=mean-of-nothing&tokens=x&level=y&maxp=-3');
    const o = resolveOptions(v);
    expect(o.estimator).toBe('grpo');
    expect(o.lossMode).toBe('token-mean');
    expect(o.tokenSource).toBe('engine');
    expect(o.level).toBe('trajectory');
    expect(o.maxPromptLength).toBe(8192);
    // ReMax needs greedy-baseline rewards a recorded trace does not have: not offered, so not accepted
    expect(resolveOptions({ ...v, estimator: 'remax' }).estimator).toBe('grpo');
    expect(resolveOptions({ ...v, estimator: 'rloo' }).estimator).toBe('rloo');
  });
});
