#!/usr/bin/env node
// `npm test`: lint, typecheck, then every vitest project (node, browser, e2e), ending with one summary line
// "test: N passed, M failed, K skipped". Extra arguments are passed to vitest (e.g. `--project node`).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const failures = [];

function step(label, cmd, args) {
  const t0 = Date.now();
  console.log(`\n=== ${label}: ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`=== ${label}: ${r.status === 0 ? 'ok' : `FAILED (exit ${r.status ?? r.signal})`} in ${secs}s`);
  if (r.status !== 0) failures.push(label);
  return r.status === 0;
}

step('lint', bin('biome'), ['check', '.']);
step('typecheck', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);

const dir = mkdtempSync(join(tmpdir(), 'harness-lab-test-'));
const report = join(dir, 'vitest.json');
step('vitest', bin('vitest'), [
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
]);

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  passed = r.numPassedTests;
  failed = r.numFailedTests;
  skipped = r.numPendingTests + r.numTodoTests;
  if (!r.success && failed === 0) failed = Math.max(1, r.numFailedTestSuites);
} catch (e) {
  console.error(`run-tests: no vitest report (${e.message})`);
  failed += 1;
}
rmSync(dir, { recursive: true, force: true });
if (failures.length) console.log(`\nfailed steps: ${failures.join(', ')}`);
// A failed lint/typecheck step counts as a failure in the closing line too.
const stepFailures = failures.filter((f) => f !== 'vitest').length;
console.log(`\ntest: ${passed} passed, ${failed + stepFailures} failed, ${skipped} skipped`);
process.exit(failures.length || failed ? 1 : 0);
