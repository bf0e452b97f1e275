/**
 * Runs every case of a golden file through its family's runner and compares with `expected`. An exception
 * case passes when the runner throws an error of the expected upstream class (`UpstreamError.kind`, or the
 * error's name); an unknown family fails all its cases with one clear message.
 */
import { UpstreamError } from '../algos/numeric';
import { DEFAULT_REFERENCE_STACK } from '../algos/stacks';
import { compareValues, type Difference } from './compare';
import './families/index';
import { getFamily } from './registry';
import type { GoldenFile } from './types';

export interface CaseResult {
  name: string;
  ok: boolean;
  /** why it failed: differences, an unexpected error or a missing one */
  differences: Difference[];
  nDifferences: number;
  error?: string;
}

export interface FileResult {
  family: string;
  cases: CaseResult[];
  passed: number;
  failed: number;
  /** set when the family has no runner */
  unknownFamily?: boolean;
}

function errorKind(e: unknown): string {
  if (e instanceof UpstreamError) return e.kind;
  if (e instanceof Error) return e.name;
  return typeof e;
}

export function runGoldenFile(file: GoldenFile): FileResult {
  const family = getFamily(file.family);
  const runner = family?.run;
  const cases: CaseResult[] = [];
  for (const c of file.cases) {
    if (!runner) {
      cases.push({
        name: c.name,
        ok: false,
        differences: [],
        nDifferences: 0,
        error: `no runner for golden family '${file.family}'`,
      });
      continue;
    }
    const exp = c.expected;
    const raises =
      typeof exp === 'object' && exp !== null && !Array.isArray(exp) && typeof exp.raises === 'string'
        ? exp.raises
        : null;
    let got: unknown;
    try {
      got = runner(c, { stack: file.stack ?? DEFAULT_REFERENCE_STACK });
    } catch (e) {
      const kind = errorKind(e);
      const msg = e instanceof Error ? e.message : String(e);
      if (raises !== null && kind === raises)
        cases.push({ name: c.name, ok: true, differences: [], nDifferences: 0 });
      else
        cases.push({
          name: c.name,
          ok: false,
          differences: [],
          nDifferences: 0,
          error: raises ? `raised ${kind} (${msg}), expected ${raises}` : `raised ${kind}: ${msg}`,
        });
      continue;
    }
    if (raises !== null) {
      cases.push({
        name: c.name,
        ok: false,
        differences: [],
        nDifferences: 0,
        error: `expected ${raises}, nothing raised`,
      });
      continue;
    }
    const cmp = compareValues(got, exp, file.tolerance, { exactKeys: family?.exactKeys });
    cases.push({ name: c.name, ok: cmp.ok, differences: cmp.differences, nDifferences: cmp.nDifferences });
  }
  const passed = cases.filter((c) => c.ok).length;
  return {
    family: file.family,
    cases,
    passed,
    failed: cases.length - passed,
    unknownFamily: !runner || undefined,
  };
}
