/**
 * Longer runs of the trace-importer fuzzer than CI's: `npm run fuzz -- [--mutants N=20000] [--seed S]`.
 * Prints the counts; exits 1 and lists the first failures when any check failed.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from '../../src/cli/args';
import { command as convert } from '../../src/cli/commands/convert';
import { fuzzTraces, loadCorpus } from './traceFuzz';

const { flags } = parseArgs(process.argv.slice(2), { mutants: { type: 'number' }, seed: { type: 'number' } });
const n = (flags.mutants as number | undefined) ?? 20_000;
const seed = (flags.seed as number | undefined) ?? 1;
const dir = mkdtempSync(join(tmpdir(), 'lab-fuzz-'));
const bundles: string[] = [];
const log = console.log;
console.log = () => {};
for (const sample of ['search-scripted', 'coding-random', 'instruction-scripted', 'search-summarize']) {
  const out = join(dir, `${sample}.json`);
  await convert.run([`public/samples/${sample}.jsonl`, out, '--to', 'agl-events']);
  bundles.push(readFileSync(out, 'utf8'));
}
console.log = log;
const t0 = performance.now();
const c = fuzzTraces(loadCorpus(bundles), n, seed);
const secs = (performance.now() - t0) / 1000;
console.log(
  `fuzz: seed ${seed}, ${c.mutants} mutants in ${secs.toFixed(1)} s (${Object.entries(c.byFormat)
    .map(([f, k]) => `${f} ${k}`)
    .join(
      ', ',
    )}); ${c.accepted} accepted, ${c.formatErrors} format errors; ${c.rolloutsRead} rollouts read, ` +
    `${c.issues} issues; ${c.keptChecked} untouched records checked; ${c.roundTrips} round trips; ` +
    `${c.chunkedChecks} chunked re-reads; slowest ${c.maxMs.toFixed(0)} ms; ${c.failures.length} failures`,
);
for (const f of c.failures) console.log(`  ${f}`);
process.exitCode = c.failures.length ? 1 : 0;
