/** Golden families: family name → case runner. Each family lives in `families/<name>.ts` and registers itself. */
import type { CaseRunner } from './types';

const families = new Map<string, CaseRunner>();

export function registerFamily(name: string, runner: CaseRunner): void {
  if (families.has(name)) throw new Error(`golden family '${name}' is already registered`);
  families.set(name, runner);
}

export function getFamily(name: string): CaseRunner | undefined {
  return families.get(name);
}

export function listFamilies(): string[] {
  return [...families.keys()].sort();
}
