/**
 * Golden-vector files: reference cases produced by running upstream code (see the golden README). Schema:
 * `{family, source, tolerance: {abs, rel}, cases: [{name, params, input, expected}]}`; non-finite numbers are the
 * strings "nan", "inf", "-inf"; an exception case has `expected = {raises: "<Class>", message}`.
 */
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
}

/** A case runner returns the values to compare with `expected` (same keys), or throws. */
export type CaseRunner = (c: GoldenCase) => unknown;
