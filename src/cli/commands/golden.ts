/**
 * `npm run lab -- golden <file.json>…`: runs golden-vector files through src/core and prints the differences of
 * failing cases, then `golden: N passed, M failed`. Exit 1 on any failure, 2 on a usage or file-format error.
 */
import { readFileSync } from 'node:fs';
import { GoldenFormatError, parseGoldenText } from '../../core/golden/parse';
import { runGoldenFile } from '../../core/golden/runner';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';

export const command: Command = {
  summary: 'Run golden-vector files (verl / Agent Lightning reference cases) against src/core',
  usage: 'npm run lab -- golden [--quiet] <file.json>...',
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, { quiet: { type: 'bool' } });
    if (positionals.length === 0) throw new UsageError('give at least one golden file');
    let passed = 0;
    let failed = 0;
    let badFiles = 0;
    for (const path of positionals) {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (e) {
        console.error(`golden: cannot read ${path}: ${(e as Error).message}`);
        badFiles++;
        continue;
      }
      let file: ReturnType<typeof parseGoldenText>;
      try {
        file = parseGoldenText(text, path);
      } catch (e) {
        if (!(e instanceof GoldenFormatError)) throw e;
        console.error(`golden: ${e.message}`);
        badFiles++;
        continue;
      }
      const res = runGoldenFile(file);
      if (res.unknownFamily)
        console.log(
          `${path}: unknown family '${file.family}': its ${file.cases.length} cases count as failed`,
        );
      for (const c of res.cases) {
        if (c.ok) continue;
        if (res.unknownFamily) continue;
        console.log(`FAIL ${file.family}/${c.name}${c.error ? `: ${c.error}` : ''}`);
        for (const d of c.differences) console.log(`  ${d.path}: got ${d.got}, expected ${d.expected}`);
        if (c.nDifferences > c.differences.length)
          console.log(`  … ${c.nDifferences - c.differences.length} more differences`);
      }
      if (!flags.quiet) console.log(`${path}: ${file.family}: ${res.passed} passed, ${res.failed} failed`);
      passed += res.passed;
      failed += res.failed;
    }
    console.log(`golden: ${passed} passed, ${failed} failed`);
    if (badFiles > 0) return 2;
    return failed > 0 ? 1 : 0;
  },
};
