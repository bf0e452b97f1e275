/**
 * verl's two metric loggers (verl/utils/logger/aggregate_logger.py, verl/utils/tracking.py), written and read:
 * - `console`: one line per step, `step:N - key:value - key:value` (`concat_dict_to_str`: numbers only,
 *   each rendered with Python's `pprint.pformat`, so floats print as `0.25`, `nan`, `inf`, booleans as `True`);
 * - `file`: JSON Lines at `$VERL_FILE_LOGGER_PATH`, `{"step": N, "data": {...}}` (orjson: NaN becomes null).
 * The project's own trainer writes both, so a run's metrics read the same whether verl or our trainer made
 * them. Ray prefixes lines printed inside actors (`(TaskRunner pid=42) step:3 - …`), so the console reader finds
 * the `step:` field anywhere after whitespace.
 *
 * The job launcher forwards each file-logger line to the job's log behind `FILE_LOGGER_MARKER`, which is how a
 * gateway outside the cluster reads the file.
 */

/** One step's metrics as a log line carries them; null stands for a non-finite value (orjson writes NaN as null). */
export type StepMetrics<V = number | null> = { step: number; data: Record<string, V> };

export const FILE_LOGGER_MARKER = '[harness-lab:verl-file-logger] ';

/** Python's repr of a float as pformat prints it (shortest round-trip, `nan`, `inf`, `1e-05`). */
function pyFloat(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`;
  const s = String(v);
  // JS writes 1e-7 as "1e-7"; Python as "1e-07"
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

/** One console-logger line. Integer-valued metrics listed in `ints` print as Python ints. */
export function formatConsoleLine(
  step: number,
  data: Record<string, number>,
  ints: ReadonlySet<string> = new Set(),
) {
  const parts = [`step:${step}`];
  for (const [k, v] of Object.entries(data))
    parts.push(`${k}:${ints.has(k) && Number.isInteger(v) ? v : pyFloat(v)}`);
  return parts.join(' - ');
}

/** One file-logger line (non-finite values become null, as orjson writes them). */
export function formatFileLoggerLine(step: number, data: Record<string, number>): string {
  const out: Record<string, number | null> = {};
  for (const [k, v] of Object.entries(data)) out[k] = Number.isFinite(v) ? v : null;
  return JSON.stringify({ step, data: out });
}

const CONSOLE_RE = /(?:^|\s)step:(\d+)((?: - [^\s:][^:]*:[^ ]+)*)\s*$/;

function parsePyNumber(s: string): number | undefined {
  const t = s.trim();
  if (t === 'True') return 1;
  if (t === 'False') return 0;
  if (t === 'nan') return Number.NaN;
  if (t === 'inf') return Infinity;
  if (t === '-inf') return -Infinity;
  const m = /^np\.(?:float|int)\d*\((.*)\)$/.exec(t);
  const body = m ? m[1] : t;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(body)) return undefined;
  return Number(body);
}

/**
 * Reads a console-logger line; null when the line is not one. Non-finite values are dropped (JSON cannot carry
 * them), and so is any field that is not `key:number`.
 */
export function parseConsoleLine(line: string): StepMetrics<number> | null {
  const m = CONSOLE_RE.exec(line);
  if (!m) return null;
  const data: Record<string, number> = {};
  const rest = m[2];
  if (rest)
    for (const part of rest.split(' - ').slice(1)) {
      const i = part.lastIndexOf(':');
      if (i <= 0) continue;
      const v = parsePyNumber(part.slice(i + 1));
      if (v !== undefined && Number.isFinite(v)) data[part.slice(0, i)] = v;
    }
  return { step: Number(m[1]), data };
}

/**
 * Reads one file-logger JSON line; throws with the reason when it is not `{"step": int, "data": {…}}`. Nulls
 * (non-finite values) are dropped unless `keepNull`.
 */
export function parseFileLoggerLine(text: string): StepMetrics<number>;
export function parseFileLoggerLine(text: string, keepNull: true): StepMetrics;
export function parseFileLoggerLine(text: string, keepNull = false): StepMetrics {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`file-logger line is not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error('file-logger line must be an object');
  const o = v as Record<string, unknown>;
  if (typeof o.step !== 'number' || !Number.isInteger(o.step) || o.step < 0)
    throw new Error(`file-logger line: step must be a non-negative integer, got ${JSON.stringify(o.step)}`);
  if (typeof o.data !== 'object' || o.data === null || Array.isArray(o.data))
    throw new Error('file-logger line: data must be an object');
  const data: Record<string, number | null> = {};
  for (const [k, x] of Object.entries(o.data as Record<string, unknown>)) {
    if (typeof x === 'number' && Number.isFinite(x)) data[k] = x;
    else if (typeof x === 'boolean') data[k] = x ? 1 : 0;
    else if (x === null && keepNull) data[k] = null;
    // strings and nested values are not scalar metrics
  }
  return { step: o.step, data };
}

/** Reads a file-logger JSONL text (metrics.jsonl), nulls kept; a bad line is an error naming its number. */
export function parseFileLogger(text: string): StepMetrics[] {
  const out: StepMetrics[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push(parseFileLoggerLine(line, true));
    } catch (e) {
      throw new Error(`metrics line ${i + 1}: ${(e as Error).message}`);
    }
  });
  return out;
}

/** One file-logger line with its newline, for appending to metrics.jsonl. */
export function fileLoggerLine(step: number, data: Record<string, number>): string {
  return `${formatFileLoggerLine(step, data)}\n`;
}

/** A log line the launcher forwarded from the file logger, or null. */
export function fileLoggerPayload(line: string): string | null {
  const i = line.indexOf(FILE_LOGGER_MARKER);
  return i < 0 ? null : line.slice(i + FILE_LOGGER_MARKER.length);
}
