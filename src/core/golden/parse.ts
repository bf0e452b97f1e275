import { listReferenceStacks, stackOfVerlVersion } from '../algos/stacks';
import type { GoldenCase, GoldenFile, Json } from './types';

export class GoldenFormatError extends Error {}

function isObj(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates a parsed golden file; `where` names it in messages. */
export function parseGoldenFile(data: unknown, where: string): GoldenFile {
  if (!isObj(data)) throw new GoldenFormatError(`${where}: top level must be an object`);
  if (typeof data.family !== 'string' || data.family === '')
    throw new GoldenFormatError(`${where}: "family" must be a non-empty string`);
  const source = data.source === undefined ? '' : data.source;
  if (typeof source !== 'string') throw new GoldenFormatError(`${where}: "source" must be a string`);
  const tol = data.tolerance;
  if (!isObj(tol) || typeof tol.abs !== 'number' || typeof tol.rel !== 'number' || tol.abs < 0 || tol.rel < 0)
    throw new GoldenFormatError(`${where}: "tolerance" must be {"abs": number ≥ 0, "rel": number ≥ 0}`);
  if (!Array.isArray(data.cases)) throw new GoldenFormatError(`${where}: "cases" must be an array`);
  const cases: GoldenCase[] = data.cases.map((c, i) => {
    const at = `${where}: cases[${i}]`;
    if (!isObj(c)) throw new GoldenFormatError(`${at} must be an object`);
    if (typeof c.name !== 'string') throw new GoldenFormatError(`${at}: "name" must be a string`);
    const params = c.params ?? {};
    if (!isObj(params)) throw new GoldenFormatError(`${at} (${c.name}): "params" must be an object`);
    if (!isObj(c.input)) throw new GoldenFormatError(`${at} (${c.name}): "input" must be an object`);
    if (!('expected' in c)) throw new GoldenFormatError(`${at} (${c.name}): "expected" is missing`);
    const exp = c.expected;
    if (isObj(exp) && 'raises' in exp && typeof exp.raises !== 'string')
      throw new GoldenFormatError(`${at} (${c.name}): "expected.raises" must be an exception class name`);
    return { name: c.name, params, input: c.input, expected: exp };
  });
  const out: GoldenFile = { family: data.family, source, tolerance: { abs: tol.abs, rel: tol.rel }, cases };
  const gen = data.generator;
  if (gen !== undefined) {
    if (!isObj(gen) || typeof gen.verl !== 'string')
      throw new GoldenFormatError(
        `${where}: "generator" must be an object with the "verl" version that wrote it`,
      );
    const stack = stackOfVerlVersion(gen.verl);
    if (!stack)
      throw new GoldenFormatError(
        `${where}: generator.verl ${gen.verl} is the verl of no reference stack (known: ${listReferenceStacks()
          .map((s) => `${s.name} = verl ${s.verl}`)
          .join(', ')})`,
      );
    out.stack = stack.name;
  }
  return out;
}

/** Parses JSON text of a golden file. */
export function parseGoldenText(text: string, where: string): GoldenFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new GoldenFormatError(`${where}: not valid JSON (${(e as Error).message})`);
  }
  return parseGoldenFile(data, where);
}
