/**
 * `lab policy-server`: serves the project's policy (CPU engine) as an OpenAI-compatible endpoint with vLLM's
 * token-id fields, for Agent Lightning's gateway to forward rollouts' calls to; takes weight pushes from the
 * trainer. Prints `policy-server: listening on http://HOST:PORT/v1` once it listens.
 */

import { aglCpuPolicy } from '../aglCpu';
import { parseArgs, UsageError } from '../args';
import { serveHttp } from '../httpServe';
import type { Command } from '../lab';
import { PolicyServer } from '../policyServer';
import { loadTokenizer } from '../tokenizers';

export const command: Command = {
  summary:
    "serve the project's policy as an OpenAI-compatible endpoint with vLLM token ids (and weight pushes)",
  usage: `lab policy-server --tokenizer policy|DIR [--port P=0] [--host H=127.0.0.1] [--seed S=0]
    [--checkpoint FILE.safetensors] [--max-tokens N=48] [--model NAME=harness-lab-policy]`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      tokenizer: { type: 'string' },
      port: { type: 'number' },
      host: { type: 'string' },
      seed: { type: 'number' },
      checkpoint: { type: 'string' },
      'max-tokens': { type: 'number' },
      model: { type: 'string' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const port = (flags.port as number | undefined) ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be 0-65535');
    const seed = (flags.seed as number | undefined) ?? 0;
    if (!Number.isInteger(seed) || seed < 0) throw new UsageError('--seed must be a non-negative integer');
    const maxTokens = (flags['max-tokens'] as number | undefined) ?? 48;
    if (!Number.isInteger(maxTokens) || maxTokens < 1)
      throw new UsageError('--max-tokens must be a positive integer');
    if (!flags.tokenizer) throw new UsageError('--tokenizer is required (policy, or a folder)');
    let tokenizer: ReturnType<typeof loadTokenizer>;
    try {
      tokenizer = loadTokenizer(flags.tokenizer as string);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const engine = await aglCpuPolicy(tokenizer, seed, flags.checkpoint as string | undefined);
    const server = new PolicyServer({
      engine,
      tokenizer,
      model: (flags.model as string | undefined) ?? 'harness-lab-policy',
      maxTokens,
      seed,
    });
    const { server: http, url } = await serveHttp(
      server.handle,
      port,
      (flags.host as string | undefined) ?? '127.0.0.1',
    );
    console.log(`policy-server: listening on ${url}/v1`);
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    http.closeAllConnections();
    http.close();
    return 0;
  },
};
