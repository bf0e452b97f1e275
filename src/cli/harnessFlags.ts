/** The flags of the commands that run a harness's tasks, parsed and checked once for all of them. */
import { BEHAVIOURS, type Behaviour, isBehaviour, type Split } from '../harness/harness';
import { UsageError } from './args';

/** --split: train (the default) or val. */
export function splitFlag(value: unknown): Split {
  const split = (value as string | undefined) ?? 'train';
  if (split !== 'train' && split !== 'val')
    throw new UsageError(`--split must be train or val, got '${split}'`);
  return split;
}

/** --seed: a safe integer, 0 when absent. */
export function seedFlag(value: unknown): number {
  const seed = (value as number | undefined) ?? 0;
  if (!Number.isSafeInteger(seed))
    throw new UsageError(`--seed must be an integer of at most 2^53 − 1 in magnitude, got ${seed}`);
  return seed;
}

/** --behaviour NAME[,NAME]…, repeatable: every name a known behaviour. */
export function behaviourFlag(values: unknown): Behaviour[] {
  return ((values as string[] | undefined) ?? [])
    .flatMap((v) => v.split(','))
    .map((b) => {
      if (!isBehaviour(b))
        throw new UsageError(`--behaviour: unknown '${b}' (known: ${BEHAVIOURS.join(', ')})`);
      return b as Behaviour;
    });
}
