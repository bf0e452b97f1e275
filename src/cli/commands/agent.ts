/**
 * `lab agent`: runs ONE harness task as a standalone agent against a real OpenAI-compatible endpoint, the way
 * Agent Lightning's controller runs an agent: the endpoint and reward URL come from `AGL_OPENAI_BASE_URL`,
 * `AGL_EVENT_URL` and `AGL_KEY`, and the reward is posted there at the end.
 */
import { clientFromAglEnv } from '../../harness/client';
import { BEHAVIOURS, type Behaviour, isBehaviour } from '../../harness/harness';
import { getHarness, HARNESSES, isHarnessName } from '../../harness/registry';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';

export const command: Command = {
  summary: 'run one harness task against AGL_OPENAI_BASE_URL and post its reward to AGL_EVENT_URL',
  usage: `AGL_OPENAI_BASE_URL=… [AGL_EVENT_URL=…] [AGL_KEY=…] lab agent --harness ${Object.keys(HARNESSES).join('|')}
    [--split train|val] [--seed S=0] [--index I=0] [--behaviour NAME[,NAME]]... [--max-turns T]`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      harness: { type: 'string' },
      split: { type: 'string' },
      seed: { type: 'number' },
      index: { type: 'number' },
      behaviour: { type: 'string', multiple: true },
      'max-turns': { type: 'number' },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const name = flags.harness as string | undefined;
    if (!name || !isHarnessName(name))
      throw new UsageError(`--harness must be one of ${Object.keys(HARNESSES).join(', ')}`);
    const split = (flags.split as string | undefined) ?? 'train';
    if (split !== 'train' && split !== 'val')
      throw new UsageError(`--split must be train or val, got '${split}'`);
    const seed = (flags.seed as number | undefined) ?? 0;
    const index = (flags.index as number | undefined) ?? 0;
    if (!Number.isInteger(seed)) throw new UsageError('--seed must be an integer');
    if (!Number.isInteger(index) || index < 0) throw new UsageError('--index must be a non-negative integer');
    const behaviours = ((flags.behaviour as string[] | undefined) ?? [])
      .flatMap((v) => v.split(','))
      .map((b) => {
        if (!isBehaviour(b))
          throw new UsageError(`--behaviour: unknown '${b}' (known: ${BEHAVIOURS.join(', ')})`);
        return b as Behaviour;
      });
    const maxTurns = flags['max-turns'] as number | undefined;
    if (maxTurns !== undefined && (!Number.isInteger(maxTurns) || maxTurns < 1))
      throw new UsageError('--max-turns must be a positive integer');
    let client: ReturnType<typeof clientFromAglEnv>;
    try {
      client = clientFromAglEnv(process.env);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    if (!client) throw new UsageError('AGL_OPENAI_BASE_URL is not set');
    const harness = getHarness(name);
    const task = harness.makeTasks(split, seed, index + 1)[index];
    const out = await harness.run(client, task, { behaviours, maxTurns });
    await client.reportReward(out.reward);
    console.log(JSON.stringify({ task: task.id, reward: out.reward, turns: out.turns, ended: out.ended }));
    return 0;
  },
};
