/**
 * Golden families: family name → case runner and the keys whose numbers are integers (compared exactly). Each
 * family lives in `families/<name>.ts` and registers itself.
 */
import type { CaseRunner } from './types';

export interface Family {
  run: CaseRunner;
  /** keys (at any depth) holding integer values: token ids, masks, counts */
  exactKeys: ReadonlySet<string>;
}

const families = new Map<string, Family>();

export function registerFamily(name: string, run: CaseRunner, exactKeys: readonly string[] = []): void {
  if (families.has(name)) throw new Error(`golden family '${name}' is already registered`);
  families.set(name, { run, exactKeys: new Set(exactKeys) });
}

export function getFamily(name: string): Family | undefined {
  return families.get(name);
}

export function listFamilies(): string[] {
  return [...families.keys()].sort();
}
