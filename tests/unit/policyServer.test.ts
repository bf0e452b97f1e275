/**
 * The agl-cpu template's policy server (cli/policyServer.ts): it answers with vLLM's token-id fields and takes the
 * trainer's weight pushes, refusing malformed ones with the field named.
 */
import { describe, expect, it } from 'vitest';
import { encodeWeightPush, PolicyServer, parseWeightPush } from '../../src/cli/policyServer';
import { loadTokenizer } from '../../src/cli/tokenizers';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';

const cfg = { vocabSize: 48, contextLength: 24, layers: 1, width: 16, heads: 2, seed: 5 };

describe('the policy server', () => {
  it('answers chat completions with vLLM token-id fields and takes weight pushes', async () => {
    const tok = loadTokenizer('policy');
    const engine = new CpuPolicy({ ...cfg, vocabSize: tok.vocabSize, contextLength: 128 });
    const server = new PolicyServer({ engine, tokenizer: tok, model: 'm', maxTokens: 6, seed: 1 });
    const res = await server.handle({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: {},
      body: {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        return_token_ids: true,
        logprobs: true,
        temperature: 1,
      },
    });
    expect(res.status).toBe(200);
    const body = res.body as {
      prompt_token_ids: number[];
      choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
    };
    expect(body.prompt_token_ids.length).toBeGreaterThan(0);
    expect(body.choices[0].token_ids.length).toBeGreaterThan(0);
    expect(body.choices[0].token_ids.length).toBeLessThanOrEqual(6);
    expect(body.choices[0].logprobs.content.map((c) => c.logprob).every((x) => x < 0)).toBe(true);
    // a new set of weights, pushed as the trainer pushes it
    const p = await engine.getParams();
    const q = p.map((x) => x * 0.5);
    const push = await server.handle({
      method: 'POST',
      path: '/weights',
      headers: {},
      body: encodeWeightPush(q, 3),
    });
    expect(push.status).toBe(200);
    expect(server.version).toBe(3);
    expect(Array.from(await engine.getParams())).toEqual(Array.from(q));
    const models = await server.handle({ method: 'GET', path: '/v1/models', headers: {} });
    expect((models.body as { data: { version: number }[] }).data[0].version).toBe(3);
    const wrong = await server.handle({
      method: 'POST',
      path: '/weights',
      headers: {},
      body: { version: 4, params_f32_base64: Buffer.from(new Float32Array(3).buffer).toString('base64') },
    });
    expect(wrong.status).toBe(400);
    expect(JSON.stringify(wrong.body)).toMatch(/holds 12 bytes; this policy has \d+ float32 parameters/);
    expect(() => parseWeightPush({ version: -1, params_f32_base64: '' }, 1)).toThrow(
      /version must be a non-negative integer/,
    );
    const nan = Float32Array.from([1, Number.NaN]);
    expect(() => parseWeightPush(encodeWeightPush(nan, 1), 2)).toThrow(/parameter 1 is not finite/);
  });
});
