import { createRegistry } from '../core/registry';
import { codingHarness } from './coding';
import type { Harness, TaskBase } from './harness';
import { instructionHarness, shortInstructionHarness } from './instruction';
import { searchHarness } from './search';

const BUILT_IN = {
  instruction: instructionHarness,
  search: searchHarness,
  coding: codingHarness,
  'instruction-short': shortInstructionHarness,
} as const;

export type HarnessName = keyof typeof BUILT_IN;

/** The harnesses by `lab.harness` name. */
export const HARNESSES = createRegistry<Harness<TaskBase>>('harness');
for (const [name, h] of Object.entries(BUILT_IN)) HARNESSES.register(name, h as unknown as Harness<TaskBase>);

export function isHarnessName(s: string): s is HarnessName {
  return HARNESSES.has(s);
}

export function getHarness(name: HarnessName): Harness<TaskBase> {
  return HARNESSES.get(name);
}
