/**
 * The numbers a view shows, as CSV and JSON files the user can keep: a link reproduces a view of a bundled sample,
 * but not of a local file, so the data of every view can be exported. Everything comes from the page's computed
 * result (core's trainer view), weights in the sign convention on screen.
 */
import { referenceStackOf, type TrainerOptions } from '../../core/pipeline/options';
import { signed, signedSides, type WeightSign } from '../../core/pipeline/sign';
import type { TraceBatch } from '../../core/trace/types';
import { indexBatch } from './derive';
import type { ComputeResult } from './pipeline';

type Cell = string | number | boolean | null;

function csvCell(v: Cell): string {
  if (v === null) return '';
  const s = typeof v === 'number' && Number.isNaN(v) ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** RFC 4180 CSV: a header line, then one line per row (fields with commas, quotes or newlines quoted). */
export function toCsv(header: string[], rows: Cell[][]): string {
  return `${[header, ...rows].map((r) => r.map(csvCell).join(',')).join('\n')}\n`;
}

export interface ExportContext {
  trace: TraceBatch;
  res: ComputeResult;
  options: TrainerOptions;
  sign: WeightSign;
  /** the name of the loaded sample or file */
  source: string;
}

function header(ctx: ExportContext) {
  return {
    reference: referenceStackOf(ctx.options).label,
    source: ctx.source,
    sign: { name: ctx.sign.name, symbol: ctx.sign.symbol, reinforced: ctx.sign.reinforced },
    options: ctx.options,
  };
}

/** Per rollout: ids, reward, rows, and its total weight under the selected mode and every mode. */
export function rolloutRows(ctx: ExportContext): { header: string[]; rows: Cell[][] } {
  const { trace, res, sign } = ctx;
  const index = indexBatch(res.batch, trace.rollouts.length);
  const h = [
    'rollout_id',
    'data_id',
    'reward',
    'state',
    'calls',
    'rows',
    `weight (${sign.symbol}, ${ctx.options.lossMode})`,
    ...res.modes.map((m) => `${m.name} (${sign.symbol})`),
  ];
  const rows = trace.rollouts.map((r, i) => [
    r.rolloutId,
    r.dataId,
    r.finalReward,
    r.state,
    r.calls.length,
    index.rowsOfRollout[i].length,
    signed(res.rolloutWeight[i], sign),
    ...res.modes.map((m) => signed(m.rolloutWeight[i], sign)),
  ]);
  return { header: h, rows };
}

export function rolloutsCsv(ctx: ExportContext): string {
  const t = rolloutRows(ctx);
  return toCsv(t.header, t.rows);
}

export function rolloutsJson(ctx: ExportContext): unknown {
  const { trace, res, sign } = ctx;
  const index = indexBatch(res.batch, trace.rollouts.length);
  return {
    ...header(ctx),
    advantagesDType: res.advantagesDType,
    counters: res.trainerCounters,
    rollouts: trace.rollouts.map((r, i) => ({
      rolloutId: r.rolloutId,
      dataId: r.dataId,
      reward: r.finalReward,
      state: r.state,
      calls: r.calls.length,
      rows: index.rowsOfRollout[i].length,
      weight: signed(res.rolloutWeight[i], sign),
      modes: Object.fromEntries(res.modes.map((m) => [m.name, signed(m.rolloutWeight[i], sign)])),
    })),
    groups: res.groupKeys.map((dataId, g) => ({
      dataId,
      weight: signed(res.groupWeight[g], sign),
      ...signedSides(res.groupNegative[g], res.groupPositive[g], sign),
    })),
  };
}

export interface TokenTable {
  rolloutId: string;
  call: number;
  positions: number[];
  ids: ArrayLike<number>;
  texts: readonly string[];
  /** per token, keyed by quantity label (the weight in the sign on screen) */
  quantities: { key: string; label: string; values: ArrayLike<number> }[];
}

export function tokensCsv(t: TokenTable): string {
  const h = ['position', 'id', 'text', ...t.quantities.map((q) => q.label)];
  const rows: Cell[][] = t.positions.map((p, i) => [
    p,
    t.ids[i],
    t.texts[i],
    ...t.quantities.map((q) => q.values[i]),
  ]);
  return toCsv(h, rows);
}

export function tokensJson(ctx: Omit<ExportContext, 'res' | 'trace'>, t: TokenTable): unknown {
  return {
    ...header({ ...ctx } as ExportContext),
    rolloutId: t.rolloutId,
    call: t.call,
    tokens: t.positions.map((p, i) => ({
      position: p,
      id: t.ids[i],
      text: t.texts[i],
      ...Object.fromEntries(t.quantities.map((q) => [q.key, Number.isNaN(q.values[i]) ? null : q.values[i]])),
    })),
  };
}

/** Saves a text as a file (the browser's download). */
export function saveText(name: string, mime: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: mime }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A file name from a source name: `coding-mixed` → `coding-mixed-rollouts.csv`. */
export function exportName(source: string, what: string, ext: 'csv' | 'json'): string {
  const base = source.replace(/\.(jsonl|json|ndjson)$/i, '').replace(/[^\w.-]+/g, '_') || 'trace';
  return `${base}-${what}.${ext}`;
}
