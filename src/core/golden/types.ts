/**
 * Golden-vector files: reference cases produced by running upstream code (see the golden README). Schema:
 * `{family, source, tolerance: {abs, rel}, cases: [{name, params, input, expected}]}`; non-finite numbers are the
 * strings "nan", "inf", "-inf"; an exception case has `expected = {raises: "<Class>", message}`.
 */
import type { ReferenceStackName } from '../algos/stacks';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface Tolerance {
  abs: number;
  rel: number;
}

export interface GoldenCase {
  name: string;
  params: Record<string, Json>;
  input: Record<string, Json>;
  expected: Json;
}

export interface GoldenFile {
  family: string;
  source: string;
  tolerance: Tolerance;
  cases: GoldenCase[];
  /**
   * the reference stack whose semantics the file records: the stack of its `generator.verl` release
   * (algos/stacks.ts); absent (a file without `generator`): the default stack
   */
  stack?: ReferenceStackName;
}

/** What a case runs against: the file's reference stack. */
export interface CaseContext {
  stack: ReferenceStackName;
}

/** A case runner returns the values to compare with `expected` (same keys), or throws. */
export type CaseRunner = (c: GoldenCase, ctx: CaseContext) => unknown;
