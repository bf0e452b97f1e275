/**
 * Golden families: family name → case runner and the keys whose numbers are integers (compared exactly). Each
 * family lives in `families/<name>.ts` and registers itself.
 */

import { createRegistry } from '../registry';
import type { CaseRunner } from './types';

export interface Family {
  run: CaseRunner;
  /** keys (at any depth) holding integer values: token ids, masks, counts */
  exactKeys: ReadonlySet<string>;
}

const families = createRegistry<Family>('golden family');

export function registerFamily(name: string, run: CaseRunner, exactKeys: readonly string[] = []): void {
  families.register(name, { run, exactKeys: new Set(exactKeys) });
}

/** The family's runner, or undefined (the golden runner reports a case of an unknown family as failed). */
export function getFamily(name: string): Family | undefined {
  return families.find(name);
}

export function listFamilies(): string[] {
  return families.names().sort();
}
