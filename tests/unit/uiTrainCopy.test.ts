import { describe, expect, it } from 'vitest';
import { copyName } from '../../src/ui/train/trainStore';

describe('an A/B copy of a run', () => {
  it('is named by its one change, the value whole', () => {
    expect(copyName('instruction · grpo · seed 0', 'actor_rollout_ref.actor.optim.lr', '0.001')).toBe(
      'instruction · grpo · seed 0 · lr=0.001',
    );
    expect(copyName('a', 'algorithm.adv_estimator', 'rloo')).toBe('a · adv_estimator=rloo');
    expect(copyName('a', 'algorithm.gamma', '0.99')).toBe('a · gamma=0.99');
    // a value with several dots stays whole (it used to be cut at its dots: "9,0.95")
    expect(copyName('a', 'actor_rollout_ref.actor.optim.betas', '0.9,0.95')).toBe('a · betas=0.9,0.95');
  });
});
