/**
 * `lab convert <in> <out> [--to jsonl|agl-events] [--from FORMAT] [--tokenizer NAME|PATH] [--exclude-incomplete]`:
 * converts traces between Agent Lightning gateway events and our JSONL trace format, and writes our JSONL from
 * other frameworks' files (NeMo Gym rollouts, verl and SkyRL dumps, OpenAI request logs; docs/TRACE_FORMAT.md).
 * The input is read as a stream (any size) and its format detected unless --from names it; bad records are
 * reported on stderr and skipped, valid ones are written. A text-only file's calls get ids from --tokenizer
 * (marked retokenized), or are written with their text only.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  aglEventsBundleChunks,
  rolloutToJsonlLine,
  TRACE_FORMATS,
  type TraceFormat,
  TraceFormatError,
} from '../../core/trace/io';
import { excludeIncomplete, formatIssue } from '../../core/trace/types';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { bundledTokenizers, loadTokenizer } from '../tokenizers';
import { outputProblem, readTraceFile, writePieces } from '../traceFile';

const TO = ['jsonl', 'agl-events'] as const;
/** Issues printed in full; the rest are counted. */
const SHOW_ISSUES = 20;

export const command: Command = {
  summary:
    'convert traces between Agent Lightning gateway events and our JSONL trace format; other frameworks’ files to our JSONL',
  usage: `npm run lab -- convert <in> <out> [--to ${TO.join('|')}] [--from ${TRACE_FORMATS.join('|')}] [--tokenizer qwen3|policy|PATH] [--exclude-incomplete]
  --tokenizer gives the calls of a text-only file (verl / SkyRL dumps, API logs without ids) that tokenizer's ids,
    marked retokenized; without it they are written with their text only
  --exclude-incomplete leaves out rollouts with a part that could not be read (an unreadable event)`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      to: { type: 'string' },
      from: { type: 'string' },
      tokenizer: { type: 'string' },
      'exclude-incomplete': { type: 'bool' },
    });
    if (positionals.length !== 2)
      throw new UsageError(`expected an input and an output file, got ${positionals.length} argument(s)`);
    const [inPath, outPath] = positionals.map((p) => resolve(p));
    const to = flags.to as string | undefined;
    if (to !== undefined && !(TO as readonly string[]).includes(to))
      throw new UsageError(`--to must be one of ${TO.join(', ')}, got '${to}'`);
    const from = flags.from as string | undefined;
    if (from !== undefined && !TRACE_FORMATS.includes(from as TraceFormat))
      throw new UsageError(`--from must be one of ${TRACE_FORMATS.join(', ')}, got '${from}'`);
    if (!existsSync(inPath)) throw new UsageError(`input file ${positionals[0]} does not exist`);
    if (statSync(inPath).isDirectory())
      throw new UsageError(`input ${positionals[0]} is a folder, not a file`);
    if (inPath === outPath) throw new UsageError('input and output are the same file');
    const bad = outputProblem(outPath);
    if (bad) throw new UsageError(bad.replace(outPath, positionals[1]));

    let tokenizer: ReturnType<typeof loadTokenizer> | undefined;
    if (flags.tokenizer !== undefined)
      try {
        tokenizer = loadTokenizer(String(flags.tokenizer));
      } catch (e) {
        throw new UsageError(
          `--tokenizer: ${(e as Error).message} (bundled: ${bundledTokenizers.join(', ')})`,
        );
      }
    let batch: Awaited<ReturnType<typeof readTraceFile>>;
    try {
      batch = await readTraceFile(inPath, { format: from as TraceFormat | undefined, tokenizer });
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
    const incomplete = batch.rollouts.filter((r) => r.incomplete?.length).length;
    const kept = flags['exclude-incomplete'] ? excludeIncomplete(batch).rollouts : batch.rollouts;
    if (kept.length === 0) {
      console.error(
        `lab convert: no valid rollout in ${positionals[0]}` +
          (incomplete ? ` (${incomplete} incomplete ones were excluded)` : '') +
          '; nothing written',
      );
      return 1;
    }
    writePieces(
      outPath,
      target === 'jsonl'
        ? (function* () {
            for (const r of kept) yield rolloutToJsonlLine(r);
          })()
        : aglEventsBundleChunks(kept),
    );
    const skipped = batch.counters.records_skipped ?? 0;
    const counters = Object.entries(batch.counters)
      .filter(([k, v]) => k !== 'records_skipped' && v > 0)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    const textOnly = batch.counters.text_only_calls ?? 0;
    if (textOnly)
      console.error(
        `lab convert: ${positionals[0]}: ${textOnly} calls are text only (the file has no token ids); written without ids (--tokenizer gives them ids)`,
      );
    const partial = incomplete
      ? flags['exclude-incomplete']
        ? `; ${incomplete} incomplete rollouts left out`
        : `; ${incomplete} rollouts marked incomplete (--exclude-incomplete leaves them out)`
      : '';
    console.log(
      `converted ${kept.length} rollouts (${batch.format} → ${target}), skipped ${skipped} records` +
        partial +
        (counters ? `; ${counters}` : '') +
        ` → ${positionals[1]}`,
    );
    return 0;
  },
};
