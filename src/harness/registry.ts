import { codingHarness } from './coding';
import type { Harness, TaskBase } from './harness';
import { instructionHarness, shortInstructionHarness } from './instruction';
import { searchHarness } from './search';

export const HARNESSES = {
  instruction: instructionHarness,
  search: searchHarness,
  coding: codingHarness,
  'instruction-short': shortInstructionHarness,
} as const;

export type HarnessName = keyof typeof HARNESSES;

export function isHarnessName(s: string): s is HarnessName {
  return Object.hasOwn(HARNESSES, s);
}

export function getHarness(name: HarnessName): Harness<TaskBase> {
  return HARNESSES[name] as unknown as Harness<TaskBase>;
}
