/**
 * `lab convert <in> <out> [--to jsonl|agl-events] [--from FORMAT]`: converts traces between Agent Lightning
 * gateway events and our JSONL trace format (docs/TRACE_FORMAT.md). The input format is detected unless
 * --from names it; bad records are reported on stderr and skipped, valid ones are written.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  parseTraceText,
  type TraceFormat,
  TraceFormatError,
  toAglEventsBundle,
  toJsonlTrace,
} from '../../core/trace/io';
import { formatIssue } from '../../core/trace/types';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';

const TO = ['jsonl', 'agl-events'] as const;
const FROM: TraceFormat[] = ['jsonl', 'agl-events', 'agl-event-lines', 'completed-rollouts'];
/** Issues printed in full; the rest are counted. */
const SHOW_ISSUES = 20;

export const command: Command = {
  summary: 'convert traces between Agent Lightning gateway events and our JSONL trace format',
  usage: `npm run lab -- convert <in> <out> [--to ${TO.join('|')}] [--from ${FROM.join('|')}]`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, { to: { type: 'string' }, from: { type: 'string' } });
    if (positionals.length !== 2)
      throw new UsageError(`expected an input and an output file, got ${positionals.length} argument(s)`);
    const [inPath, outPath] = positionals.map((p) => resolve(p));
    const to = flags.to as string | undefined;
    if (to !== undefined && !(TO as readonly string[]).includes(to))
      throw new UsageError(`--to must be one of ${TO.join(', ')}, got '${to}'`);
    const from = flags.from as string | undefined;
    if (from !== undefined && !FROM.includes(from as TraceFormat))
      throw new UsageError(`--from must be one of ${FROM.join(', ')}, got '${from}'`);
    if (!existsSync(inPath)) throw new UsageError(`input file ${positionals[0]} does not exist`);
    if (statSync(inPath).isDirectory())
      throw new UsageError(`input ${positionals[0]} is a folder, not a file`);
    if (inPath === outPath) throw new UsageError('input and output are the same file');
    if (!existsSync(dirname(outPath)))
      throw new UsageError(`output folder ${dirname(positionals[1])} does not exist`);

    const text = readFileSync(inPath, 'utf8');
    let batch: ReturnType<typeof parseTraceText>;
    try {
      batch = parseTraceText(text, { format: from as TraceFormat | undefined });
    } catch (e) {
      if (e instanceof TraceFormatError) {
        console.error(`lab convert: ${positionals[0]}: ${e.message}`);
        return 1;
      }
      throw e;
    }
    const target = to ?? (batch.format === 'jsonl' ? 'agl-events' : 'jsonl');
    batch.issues.slice(0, SHOW_ISSUES).forEach((i) => {
      console.error(
        `${positionals[0]}: ${i.severity === 'warning' ? 'warning' : 'skipped'}: ${formatIssue(i)}`,
      );
    });
    if (batch.issues.length > SHOW_ISSUES)
      console.error(`… and ${batch.issues.length - SHOW_ISSUES} more issues`);
    if (batch.rollouts.length === 0) {
      console.error(`lab convert: no valid rollout in ${positionals[0]}; nothing written`);
      return 1;
    }
    const out =
      target === 'jsonl'
        ? toJsonlTrace(batch.rollouts)
        : JSON.stringify(toAglEventsBundle(batch.rollouts)) + '\n';
    writeFileSync(outPath, out);
    const skipped = batch.counters.records_skipped ?? 0;
    const counters = Object.entries(batch.counters)
      .filter(([k, v]) => k !== 'records_skipped' && v > 0)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    console.log(
      `converted ${batch.rollouts.length} rollouts (${batch.format} → ${target}), skipped ${skipped} records` +
        (counters ? `; ${counters}` : '') +
        ` → ${positionals[1]}`,
    );
    return 0;
  },
};
