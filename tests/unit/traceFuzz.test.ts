/**
 * The importers under a seeded mutation fuzzer (tests/tools/traceFuzz.ts): ≥ 2,000 mutants of real traces per
 * run. HARNESS_LAB_FUZZ_MUTANTS=N runs more, HARNESS_LAB_FUZZ_SEED=S another seed
 * (`npm run fuzz -- --mutants N --seed S` prints the counts without vitest).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { command as convert } from '../../src/cli/commands/convert';
import { type Corpus, fuzzTraces, loadCorpus } from '../tools/traceFuzz';

const MUTANTS = Number(process.env.HARNESS_LAB_FUZZ_MUTANTS ?? 2000);
const SEED = Number(process.env.HARNESS_LAB_FUZZ_SEED ?? 20261201);

let corpus: Corpus;

beforeAll(async () => {
  // The Agent Lightning events of the corpus are what `lab convert` makes of the bundled samples.
  const dir = mkdtempSync(join(tmpdir(), 'lab-fuzz-'));
  const bundles: string[] = [];
  vi.spyOn(console, 'log').mockImplementation(() => {});
  for (const sample of ['search-scripted', 'coding-random', 'instruction-scripted', 'search-summarize']) {
    const out = join(dir, `${sample}.json`);
    expect(await convert.run([`public/samples/${sample}.jsonl`, out, '--to', 'agl-events'])).toBe(0);
    bundles.push(readFileSync(out, 'utf8'));
  }
  vi.restoreAllMocks();
  corpus = loadCorpus(bundles);
});

describe('trace importers under a mutation fuzzer', () => {
  it(`keep every untouched record, name every error, round-trip what they accept (${MUTANTS} mutants)`, () => {
    const c = fuzzTraces(corpus, MUTANTS, SEED);
    console.log(
      `fuzz: ${c.mutants} mutants (${Object.entries(c.byFormat)
        .map(([f, n]) => `${f} ${n}`)
        .join(
          ', ',
        )}); ${c.accepted} accepted, ${c.formatErrors} format errors; ${c.rolloutsRead} rollouts read, ` +
        `${c.issues} issues; ${c.keptChecked} untouched records checked; ${c.roundTrips} round trips; ` +
        `${c.chunkedChecks} chunked re-reads; slowest ${c.maxMs.toFixed(0)} ms`,
    );
    expect(c.failures).toEqual([]);
    expect(c.mutants).toBe(MUTANTS);
    // the fuzzer exercises each side: most mutants keep something, some are not traces at all
    expect(c.accepted).toBeGreaterThan(MUTANTS / 2);
    expect(c.keptChecked).toBeGreaterThan(MUTANTS);
    expect(c.issues).toBeGreaterThan(MUTANTS / 2);
    for (const f of ['jsonl', 'agl-event-lines', 'agl-events-list', 'agl-bundle', 'completed'])
      expect(c.byFormat[f]).toBeGreaterThan(MUTANTS / 10);
  }, 300_000);
});
