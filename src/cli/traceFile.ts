/**
 * Trace files under Node: read as a stream of text chunks (files of any size; no whole-file string) and
 * written piece by piece.
 */
import {
  closeSync,
  createReadStream,
  existsSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type ParsedTrace, type ReadOptions, readTraceChunks } from '../core/trace/io';

/** Reads a trace file in 4 MiB chunks; `onChunk` is told the characters read so far. */
export function readTraceFile(
  path: string,
  opts: ReadOptions & { onChunk?: (chars: number) => void } = {},
): Promise<ParsedTrace> {
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 4 << 20 });
  return readTraceChunks(stream as AsyncIterable<string>, opts);
}

/** Why `path` cannot be an output file, or null when it can (its folder exists; it is not a folder). */
export function outputProblem(path: string): string | null {
  if (existsSync(path) && statSync(path).isDirectory()) return `${path} is a folder, not a file`;
  const dir = dirname(path);
  if (!existsSync(dir)) return `output folder ${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a folder`;
  return null;
}

/**
 * Writes text pieces to `path`. A regular file is written beside it first and renamed into place at the end,
 * so an interrupted write never leaves a half file under the name; anything else (a pipe, /dev/stdout) is
 * written directly.
 */
export function writePieces(path: string, pieces: Iterable<string>): void {
  const direct = existsSync(path) && !statSync(path).isFile();
  const target = direct ? path : join(dirname(path), `.${basename(path)}.${process.pid}.partial`);
  const fd = openSync(target, 'w');
  let ok = false;
  try {
    let buf = '';
    for (const p of pieces) {
      buf += p;
      if (buf.length >= 1 << 20) {
        writeSync(fd, buf);
        buf = '';
      }
    }
    if (buf) writeSync(fd, buf);
    ok = true;
  } finally {
    closeSync(fd);
    if (!direct) {
      if (ok) renameSync(target, path);
      else unlinkSync(target);
    }
  }
}
