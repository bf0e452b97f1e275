/**
 * `npx tsx tests/tools/agent-batch.ts --out FILE [--rollouts N]`: writes bench:core's synthetic agent batch
 * (`syntheticAgentBatch` with `AGENT_BATCH_SHAPE`: 1,024 rollouts × 16 calls, ≈ 8.5M tokens, 68 MB) as JSONL, the
 * file `npm run bench:ui -- FILE` imports. `--rollouts` makes a bigger batch of the same shape and seed (its first
 * 1,024 rollouts are bench:core's batch): ≈ 9,000 rollouts give a trace of about 600 MiB. Written line by line, so
 * the file is never one string.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { parseArgs } from '../../src/cli/args';
import { rolloutToJsonlLine } from '../../src/core/trace/io';
import { AGENT_BATCH_SHAPE, countCallTokens, syntheticAgentBatch } from '../../src/core/trace/synthetic';

const { flags } = parseArgs(process.argv.slice(2), {
  out: { type: 'string' },
  rollouts: { type: 'number' },
});
if (!flags.out) throw new Error('agent-batch: --out FILE is required');
const rollouts = Number(flags.rollouts ?? AGENT_BATCH_SHAPE.rollouts);
if (!Number.isInteger(rollouts) || rollouts < 1)
  throw new Error(`agent-batch: --rollouts must be a positive integer, got ${flags.rollouts}`);
const batch = syntheticAgentBatch({ ...AGENT_BATCH_SHAPE, rollouts });
const fd = openSync(String(flags.out), 'w');
let bytes = 0;
try {
  for (const r of batch) bytes += writeSync(fd, rolloutToJsonlLine(r));
} finally {
  closeSync(fd);
}
console.log(
  `${flags.out}: ${rollouts} rollouts, ${(countCallTokens(batch) / 1e6).toFixed(2)}M prompt+response tokens, ` +
    `${(bytes / 2 ** 20).toFixed(1)} MiB`,
);
