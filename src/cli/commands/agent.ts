/**
 * `lab agent`: runs ONE harness task as a standalone agent against a real OpenAI-compatible endpoint, the way
 * Agent Lightning's controller runs an agent: the endpoint and reward URL come from `AGL_OPENAI_BASE_URL`,
 * `AGL_EVENT_URL` and `AGL_KEY`, and the reward is posted there at the end.
 */
import {
  ApiError,
  clientFromAglEnv,
  DEFAULT_MAX_RETRY_WAIT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  ResponseError,
  TransportError,
} from '../../harness/client';
import { getHarness, HARNESSES, isHarnessName } from '../../harness/registry';
import { CommandError, EXIT, parseArgs, UsageError } from '../args';
import { behaviourFlag, seedFlag, splitFlag } from '../harnessFlags';
import type { Command } from '../lab';

const MAX_INDEX = 1_000_000;

export const command: Command = {
  summary: 'run one harness task against AGL_OPENAI_BASE_URL and post its reward to AGL_EVENT_URL',
  usage: `AGL_OPENAI_BASE_URL=… [AGL_EVENT_URL=…] [AGL_KEY=…] lab agent --harness ${HARNESSES.names().join('|')}
    [--split train|val] [--seed S=0] [--index I=0] [--behaviour NAME[,NAME]]... [--max-turns T]
    [--timeout-ms MS=${DEFAULT_REQUEST_TIMEOUT_MS}] [--max-retry-wait-ms MS=${DEFAULT_MAX_RETRY_WAIT_MS}]
  --timeout-ms: per request (a chat completion or the reward post); no answer in time is an error.
  --max-retry-wait-ms: all Retry-After waits of one chat completion answered 429 (a paused gateway) together;
    each wait is the server's Retry-After (at most 60 s) or a backoff; past the total the 429 is an error.
  exit codes: 0 done, 2 bad usage, ${EXIT.http} the server answered with an HTTP error or an invalid answer,
  ${EXIT.unreachable} the server could not be reached or did not answer in time`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      harness: { type: 'string' },
      split: { type: 'string' },
      seed: { type: 'number' },
      index: { type: 'number' },
      behaviour: { type: 'string', multiple: true },
      'max-turns': { type: 'number' },
      'timeout-ms': { type: 'number' },
      'max-retry-wait-ms': { type: 'number' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const name = flags.harness as string | undefined;
    if (!name || !isHarnessName(name))
      throw new UsageError(`--harness must be one of ${HARNESSES.names().join(', ')}`);
    const split = splitFlag(flags.split);
    const seed = seedFlag(flags.seed);
    const index = (flags.index as number | undefined) ?? 0;
    // the task list is generated up to --index
    if (!Number.isInteger(index) || index < 0 || index >= MAX_INDEX)
      throw new UsageError(`--index must be an integer in [0, ${MAX_INDEX}), got ${index}`);
    const behaviours = behaviourFlag(flags.behaviour);
    const maxTurns = flags['max-turns'] as number | undefined;
    if (maxTurns !== undefined && (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > 1000))
      throw new UsageError(`--max-turns must be an integer in [1, 1000], got ${maxTurns}`);
    const ms = (flag: string, dflt: number, min: number) => {
      const v = flags[flag] as number | undefined;
      if (v === undefined) return dflt;
      // setTimeout fires at once past 2^31 − 1 ms
      if (!Number.isInteger(v) || v < min || v > 2 ** 31 - 1)
        throw new UsageError(
          `--${flag} must be an integer number of milliseconds in [${min}, ${2 ** 31 - 1}], got ${v}`,
        );
      return v;
    };
    const timeoutMs = ms('timeout-ms', DEFAULT_REQUEST_TIMEOUT_MS, 1);
    const maxRetryWaitMs = ms('max-retry-wait-ms', DEFAULT_MAX_RETRY_WAIT_MS, 0);
    let client: ReturnType<typeof clientFromAglEnv>;
    try {
      client = clientFromAglEnv(process.env, undefined, { timeoutMs, maxRetryWaitMs });
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    if (!client) throw new UsageError('AGL_OPENAI_BASE_URL is not set');
    const harness = getHarness(name);
    const task = harness.makeTasks(split, seed, index + 1)[index];
    let out: Awaited<ReturnType<typeof harness.run>>;
    try {
      out = await harness.run(client, task, { behaviours, maxTurns });
      await client.reportReward(out.reward);
    } catch (e) {
      // The server's fault, not ours: one line and an exit code that says which kind.
      if (e instanceof ApiError || e instanceof ResponseError)
        throw new CommandError(
          e instanceof ResponseError ? `invalid answer: ${e.message}` : e.message,
          EXIT.http,
        );
      if (e instanceof TransportError) throw new CommandError(e.message, EXIT.unreachable);
      throw e;
    }
    console.log(JSON.stringify({ task: task.id, reward: out.reward, turns: out.turns, ended: out.ended }));
    return 0;
  },
};
