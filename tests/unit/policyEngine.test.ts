import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTokenizer } from '../../src/core/tokenize/tokenizer';
import { createPolicyEngine } from '../../src/engine/policy';
import { PolicyChatEngine } from '../../src/harness/policyEngine';
import { LlmProxy } from '../../src/harness/proxy';
import { planRollouts, type RunSpec, runInline } from '../../src/harness/runner';

const root = join(import.meta.dirname, '../..');
const read = (f: string) => JSON.parse(readFileSync(join(root, 'public/tokenizer', f), 'utf8'));
const tok = new ChatTokenizer('policy', read('tokenizer.json'), read('tokenizer_config.json'));
const config = { vocabSize: 1024, contextLength: 512, layers: 1, width: 32, heads: 2, seed: 5 };

describe('the policy as an engine behind the proxy', () => {
  it('records exactly the ids the policy sampled, with the log-probs the policy assigns them', async () => {
    const { engine: policy } = await createPolicyEngine({ backend: 'cpu', config });
    const engine = new PolicyChatEngine(policy, tok, { seed: 11 });
    const proxy = new LlmProxy({ engine, tokenizer: tok, maxResponseTokens: 12, maxContextTokens: 512 });
    const spec: RunSpec = {
      harness: 'instruction',
      split: 'val',
      n: 2,
      groupSize: 2,
      seed: 3,
      behaviours: [],
    };
    const rollouts = await runInline(spec, planRollouts(spec), proxy);
    expect(rollouts).toHaveLength(4);
    let checked = 0;
    for (const r of rollouts) {
      expect(r.state).toBe('succeeded');
      for (const c of r.calls) {
        const p = c.promptTokenIds!;
        const resp = c.responseTokenIds!;
        expect(resp.length).toBeGreaterThan(0);
        expect(c.responseLogProbs!.length).toBe(resp.length);
        expect(c.engine).toMatchObject({ engine: 'policy', model: 'policy-cpu/policy' });
        // The prompt the proxy recorded is the chat template over the request, in the policy's tokenizer.
        expect([...p]).toEqual([...tok.encodeChat(c.request.messages, { addGenerationPrompt: true })]);
        // Score prompt+response with the policy: the recorded log-probs are the policy's own.
        const T = p.length + resp.length;
        const tokens = new Uint32Array(T);
        tokens.set(p);
        tokens.set(resp, p.length);
        const lp = await policy.logProbs({
          tokens,
          batchSize: 1,
          seqLen: T,
          mask: new Float32Array(T).fill(1),
        });
        for (let i = 0; i < resp.length; i++)
          expect(c.responseLogProbs![i]).toBeCloseTo(lp.logProbs[p.length + i], 4);
        checked += resp.length;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('refuses a tokenizer larger than the policy vocabulary and a prompt longer than its context', async () => {
    const { engine: small } = await createPolicyEngine({
      backend: 'cpu',
      config: { ...config, vocabSize: 512 },
    });
    expect(() => new PolicyChatEngine(small, tok)).toThrow(/1024 ids but the policy's vocabulary is 512/);
    const { engine: short } = await createPolicyEngine({
      backend: 'cpu',
      config: { ...config, contextLength: 8 },
    });
    const eng = new PolicyChatEngine(short, tok);
    await expect(
      eng.generate({
        rolloutId: 'r',
        callIndex: 0,
        messages: [{ role: 'user', content: 'a long enough question for eight tokens' }],
        promptIds: null,
        maxTokens: 4,
      }),
    ).rejects.toThrow(/policy's context is 8/);
  });
});
